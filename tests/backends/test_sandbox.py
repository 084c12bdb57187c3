"""Tests for app.backends.sandbox: running one job as a sandboxed process group."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import textwrap
import threading
import time
from contextlib import suppress
from pathlib import Path

import pytest

from app.backends.sandbox import DEFAULT_PATH, RunResult, RunSpec, remove, start

HAS_PROC = Path("/proc/self/stat").exists()
needs_proc = pytest.mark.skipif(not HAS_PROC, reason="needs /proc to inspect processes")
IS_ROOT = os.geteuid() == 0


def py(code: str) -> list[str]:
    """argv running ``code`` with the test interpreter (found without PATH)."""
    return [sys.executable, "-c", textwrap.dedent(code)]


def make_spec(
    tmp_path: Path,
    argv: list[str],
    *,
    inputs: dict[str, Path] | None = None,
    outputs: list[str] | None = None,
    wall: float = 10.0,
    output_cap: int = 1 << 20,
    env: dict[str, str] | None = None,
) -> RunSpec:
    return RunSpec(
        argv=argv,
        sandbox=tmp_path / "job",
        inputs=inputs or {},
        outputs=outputs or [],
        wall_seconds=wall,
        output_cap=output_cap,
        env=env,
    )


def run(spec: RunSpec) -> RunResult:
    return start(spec).wait()


def is_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (PID 1 here may never reap orphans)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return data.rpartition(b")")[2].split()[0] not in (b"Z", b"X")


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


def test_success_with_outputs(tmp_path: Path) -> None:
    spec = make_spec(
        tmp_path,
        py(
            """
            import sys
            open("out", "w").write("result")
            print("hello")
            print("warn", file=sys.stderr)
            """
        ),
        outputs=["out"],
    )
    result = run(spec)

    assert (result.exit_code, result.signal) == (0, None)
    assert not result.timed_out and not result.killed and result.launch_error is None
    assert result.outputs == {"out": spec.sandbox / "out"}
    assert result.missing_outputs == []
    assert (spec.sandbox / "out").read_text() == "result"
    assert result.stdout == b"hello\n"
    assert result.stderr == b"warn\n"
    assert result.error_message(["out"]) is None
    assert 0 < result.wall_seconds < 10
    # Logs live next to the sandbox, not in it.
    assert spec.stdout_path.parent == tmp_path / "job.log"
    assert spec.stdout_path.read_bytes() == b"hello\n"
    assert not (spec.sandbox / "stdout").exists()


def test_stdin_is_dev_null(tmp_path: Path) -> None:
    # pytest already points fd 0 at /dev/null; put a pipe with data there so that a job
    # inheriting our stdin would be noticed.
    saved = os.dup(0)
    r, w = os.pipe()
    try:
        os.write(w, b"leaked")
        os.close(w)
        os.dup2(r, 0)
        result = run(make_spec(tmp_path, py("import sys; print(repr(sys.stdin.read()))")))
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(r)
    assert result.stdout == b"''\n"


def test_exit_code(tmp_path: Path) -> None:
    result = run(make_spec(tmp_path, py("import sys; sys.exit(3)")))
    assert (result.exit_code, result.signal) == (3, None)
    assert result.error_message([]) == "exit code 3"


def test_missing_output(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, py("open('out', 'w').write('x')"), outputs=["out", "other"])
    result = run(spec)
    assert result.exit_code == 0
    assert list(result.outputs) == ["out"]
    assert result.missing_outputs == ["other"]
    assert result.error_message(["out", "other"]) == "missing output other"
    assert result.error_message(["out"]) is None


def test_killed_by_own_signal(tmp_path: Path) -> None:
    result = run(make_spec(tmp_path, py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")))
    assert (result.exit_code, result.signal) == (None, signal.SIGKILL)
    assert not result.timed_out and not result.killed
    assert result.error_message([]) == "killed by signal 9"


@needs_proc
def test_wall_time_limit_kills_whole_group(tmp_path: Path) -> None:
    spec = make_spec(
        tmp_path,
        py(
            """
            import subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            open("child.pid", "w").write(str(child.pid))
            time.sleep(60)
            """
        ),
        wall=0.5,
    )
    t0 = time.monotonic()
    result = run(spec)
    elapsed = time.monotonic() - t0
    child = read_pid(spec.sandbox / "child.pid")
    try:
        assert result.timed_out and not result.killed
        assert result.signal == signal.SIGKILL
        assert result.error_message([]) == "killed after 0.5 s wall-time limit"
        assert 0.5 <= result.wall_seconds < 5 and elapsed < 5
        assert not is_running(child), "the leader's child survived the wall-time kill"
    finally:
        with suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


@needs_proc
def test_processes_left_behind_are_killed(tmp_path: Path) -> None:
    # The shell backgrounds a sleep and exits: the sleep is orphaned (double fork) but stays
    # in the job's process group, and must not outlive the job.
    spec = make_spec(
        tmp_path,
        py(
            """
            import subprocess
            subprocess.run(["/bin/sh", "-c", "sleep 60 & echo $! > orphan.pid"], check=True)
            """
        ),
    )
    t0 = time.monotonic()
    result = run(spec)
    elapsed = time.monotonic() - t0
    orphan = read_pid(spec.sandbox / "orphan.pid")
    try:
        assert result.exit_code == 0
        # Killed orphans may stay zombies (PID 1 need not reap them); wait() must not keep
        # waiting for those.
        assert elapsed < 1.5
        assert not is_running(orphan), "a double-forked process survived the job"
    finally:
        with suppress(ProcessLookupError):
            os.kill(orphan, signal.SIGKILL)


def test_kill_from_another_thread(tmp_path: Path) -> None:
    job = start(make_spec(tmp_path, py("import time; time.sleep(60)"), outputs=["out"]))
    assert job.pid is not None
    killer = threading.Timer(0.3, job.kill)
    killer.start()
    t0 = time.monotonic()
    try:
        result = job.wait()
    finally:
        killer.cancel()
        killer.join()
    assert time.monotonic() - t0 < 5
    assert result.killed and not result.timed_out
    assert result.signal == signal.SIGKILL
    assert result.error_message(["out"]) == "aborted"
    job.kill()  # idempotent, and harmless once the job is reaped
    assert job.wait() is result


def test_output_tail_is_capped(tmp_path: Path) -> None:
    data = b"".join(b"%07d\n" % i for i in range(2000))  # 16000 bytes, every line distinct
    spec = make_spec(
        tmp_path,
        py(
            f"""
            import sys
            data = {data!r}
            sys.stdout.buffer.write(data)
            sys.stderr.buffer.write(data.upper() + b"E")
            """
        ),
        output_cap=1000,
    )
    result = run(spec)
    assert result.exit_code == 0
    assert result.stdout == data[-1000:]
    assert result.stderr == (data.upper() + b"E")[-1000:]
    assert spec.stdout_path.stat().st_size == len(data)  # the full log is kept on disk


def test_inputs_are_read_only_copies(tmp_path: Path) -> None:
    store = tmp_path / "store" / "ab12cd"
    store.parent.mkdir()
    store.write_bytes(b"original")
    store.chmod(0o644)
    spec = make_spec(
        tmp_path,
        py(
            """
            import json, os
            seen = open("in.txt", "rb").read().decode()
            mode = os.stat("in.txt").st_mode
            try:
                open("in.txt", "r+b").write(b"X")
                write = "ok"
            except PermissionError:
                write = "PermissionError"
            # A determined job can chmod its copy; the store must still be unaffected.
            os.chmod("in.txt", 0o644)
            open("in.txt", "wb").write(b"tampered")
            print(json.dumps({"seen": seen, "mode": mode, "write": write}))
            """
        ),
        inputs={"in.txt": store},
    )
    result = run(spec)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["seen"] == "original"
    assert report["mode"] & 0o222 == 0
    if not IS_ROOT:  # root writes through permission bits
        assert report["write"] == "PermissionError"
    assert (spec.sandbox / "in.txt").read_bytes() == b"tampered"  # the tampering did happen...
    assert store.read_bytes() == b"original"  # ...but only to the copy
    assert stat.S_IMODE(store.stat().st_mode) == 0o644
    assert store.stat().st_nlink == 1


def test_non_regular_outputs_are_rejected(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("do not ingest")
    spec = make_spec(
        tmp_path,
        py(
            f"""
            import os
            os.symlink({str(secret)!r}, "link")
            os.mkfifo("fifo")  # opening it for reading must not hang the collector
            os.mkdir("dir")
            open("good", "w").write("ok")
            """
        ),
        outputs=["link", "fifo", "dir", "good"],
    )
    result = run(spec)
    assert result.exit_code == 0
    assert result.outputs == {"good": spec.sandbox / "good"}
    assert result.missing_outputs == ["link", "fifo", "dir"]
    assert result.error_message(spec.outputs) == "missing outputs link, fifo, dir"


def test_clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOINC_GATEWAY_TEST_SECRET", "s3cret")
    spec = make_spec(
        tmp_path,
        py("import json, os; print(json.dumps(dict(os.environ)))"),
        env={"EXTRA": "1"},
    )
    result = run(spec)
    assert result.exit_code == 0, result.stderr
    env = json.loads(result.stdout)
    assert "BOINC_GATEWAY_TEST_SECRET" not in env
    assert env["PATH"] == DEFAULT_PATH
    assert env["HOME"] == str(spec.sandbox)
    assert env["TMPDIR"] == str(spec.sandbox / "tmp")
    assert (spec.sandbox / "tmp").is_dir()
    assert env["LANG"] == "C.UTF-8"
    assert env["EXTRA"] == "1"
    # Python may add LC_CTYPE itself (locale coercion); nothing else may appear.
    assert set(env) - {"LC_CTYPE"} == {"PATH", "HOME", "TMPDIR", "LANG", "EXTRA"}


BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\n"


@pytest.mark.parametrize("where", ["leader", "reaped child"])
def test_cpu_seconds(tmp_path: Path, where: str) -> None:
    if where == "leader":
        argv = [sys.executable, "-c", BUSY]
    else:
        argv = py(f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BUSY!r}])")
    result = run(make_spec(tmp_path, argv))
    assert result.exit_code == 0, result.stderr
    assert result.cpu_seconds >= 0.25


@pytest.mark.parametrize("kind", ["missing path", "not executable", "not on PATH"])
def test_launch_error(tmp_path: Path, kind: str) -> None:
    if kind == "missing path":
        program, reason = str(tmp_path / "nope"), "No such file or directory"
    elif kind == "not executable":
        script = tmp_path / "script.sh"
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o644)
        program, reason = str(script), "Permission denied"
    else:
        program, reason = "boinc-gateway-no-such-command", "No such file or directory"
    job = start(make_spec(tmp_path, [program, "arg"], outputs=["out"]))
    assert job.pid is None
    job.kill()  # no process: must be a no-op
    result = job.wait()
    assert (result.exit_code, result.signal) == (None, None)
    assert result.launch_error == f"cannot execute {program!r}: {reason}"
    assert result.error_message(["out"]) == result.launch_error
    assert result.missing_outputs == ["out"]
    remove(job.spec)
    assert not (tmp_path / "job").exists() and not (tmp_path / "job.log").exists()


BAD_NAMES = ["../evil", "a/b", "/abs", "..", ".", "", "x" * 65, "sp ace", "nul\0"]


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize("kind", ["input", "output"])
def test_bad_names_raise(tmp_path: Path, kind: str, name: str) -> None:
    store = tmp_path / "blob"
    store.write_bytes(b"x")
    inputs = {name: store} if kind == "input" else {}
    outputs = [name] if kind == "output" else []
    spec = make_spec(tmp_path, ["/bin/true"], inputs=inputs, outputs=outputs)
    with pytest.raises(ValueError, match=f"invalid {kind} name"):
        start(spec)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blob"]  # nothing was created


def test_reserved_input_name_and_empty_argv_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reserved"):
        start(make_spec(tmp_path, ["/bin/true"], inputs={"tmp": tmp_path}))
    with pytest.raises(ValueError, match="argv"):
        start(make_spec(tmp_path, []))
    assert list(tmp_path.iterdir()) == []


def test_existing_sandbox_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "precious").write_text("keep")
    with pytest.raises(FileExistsError):
        start(make_spec(tmp_path, ["/bin/true"]))
    assert (tmp_path / "job" / "precious").read_text() == "keep"
    assert not (tmp_path / "job.log").exists()


@pytest.mark.parametrize("how", ["spec", "path", "str"])
def test_remove_cleans_up_read_only_tree(tmp_path: Path, how: str) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file").write_text("outside")
    spec = make_spec(
        tmp_path,
        py(
            f"""
            import os
            os.makedirs("ro/sub")
            open("ro/sub/file", "w").write("x")
            os.chmod("ro/sub/file", 0o400)
            os.chmod("ro/sub", 0o500)
            os.chmod("ro", 0o500)
            os.mkdir("locked")
            open("locked/file", "w").write("x")
            os.chmod("locked", 0)
            # Removal must not follow links out of the sandbox.
            os.symlink({str(keep)!r}, "link_dir")
            os.symlink({str(keep / "file")!r}, "link_file")
            """
        ),
        inputs={"in": keep / "file"},
    )
    result = run(spec)
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE((spec.sandbox / "locked").stat().st_mode) == 0
    targets: dict[str, RunSpec | Path | str] = {
        "spec": spec,
        "path": spec.sandbox,
        "str": str(spec.sandbox),
    }
    target = targets[how]
    remove(target)
    assert not spec.sandbox.exists() and not spec.log_dir.exists()
    assert (keep / "file").read_text() == "outside"
    remove(target)  # idempotent
