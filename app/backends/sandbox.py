"""Process runner for one job of the embedded ``local`` backend.

This module owns everything that happens on the host while a single job runs:
creating the job's sandbox directory and the private log directory next to it,
placing read-only copies of the inputs, launching the app without a shell in
its own session/process group with a clean minimal environment, enforcing the
wall-time limit, making sure no process of the group outlives the run, and
collecting the exit status, CPU time, capped stdout/stderr tails and the
outputs the job left behind. It also removes those directories again.

It knows nothing about the database, batches or scheduling: callers decide what
to run and what to do with a :class:`RunResult`. It is pure stdlib and starts no
threads; :meth:`RunningJob.wait` blocks the calling thread.

This is not a security boundary. The job runs with the gateway's uid, so the
layout (copies instead of links, logs outside the sandbox, ``O_NOFOLLOW`` on
outputs) guards against accidents and naive tampering only. A job that calls
``setsid()``/``setpgid()`` leaves the process group and escapes the group kill.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import re
import select
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from signal import SIGKILL

__all__ = [
    "DEFAULT_PATH",
    "NAME_PATTERN",
    "RESERVED_INPUT_NAMES",
    "RunResult",
    "RunSpec",
    "RunningJob",
    "log_dir_for",
    "remove",
    "start",
]

NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_TMP_DIR = "tmp"
# The sandbox's tmp/ directory (the job's TMPDIR) would collide with an input of that name.
RESERVED_INPUT_NAMES = frozenset({_TMP_DIR})
_STDOUT_FILE = "stdout"
_STDERR_FILE = "stderr"
# After the leader exits, how long to wait for SIGKILLed group members to actually die.
_GROUP_GRACE_SECONDS = 2.0
_POLL_SECONDS = 0.01


def log_dir_for(sandbox: Path) -> Path:
    """Return the private directory, next to ``sandbox``, that holds the job's stdout/stderr."""
    return sandbox.with_name(sandbox.name + ".log")


@dataclass(frozen=True)
class RunSpec:
    """What to run and where; see :func:`start`."""

    argv: list[str]
    sandbox: Path
    inputs: dict[str, Path]
    outputs: list[str]
    wall_seconds: float
    output_cap: int = 1 << 20
    env: dict[str, str] | None = None

    @property
    def log_dir(self) -> Path:
        """The private log directory next to the sandbox."""
        return log_dir_for(self.sandbox)

    @property
    def stdout_path(self) -> Path:
        """Full (uncapped) stdout of the job; kept until :func:`remove`."""
        return self.log_dir / _STDOUT_FILE

    @property
    def stderr_path(self) -> Path:
        """Full (uncapped) stderr of the job; kept until :func:`remove`."""
        return self.log_dir / _STDERR_FILE


@dataclass
class RunResult:
    """Outcome of one run, as collected by :meth:`RunningJob.wait`."""

    exit_code: int | None
    signal: int | None
    wall_seconds: float
    cpu_seconds: float
    stdout: bytes
    stderr: bytes
    timed_out: bool
    killed: bool
    outputs: dict[str, Path]
    missing_outputs: list[str]
    launch_error: str | None = None
    wall_limit_seconds: float = math.inf

    def error_message(self, required: list[str]) -> str | None:
        """Return None on success (exit 0, all ``required`` outputs present), else why not."""
        if self.launch_error is not None:
            return self.launch_error
        # kill() is an explicit abort: report that rather than the SIGKILL it caused.
        if self.killed:
            return "aborted"
        if self.timed_out:
            return f"killed after {_format_seconds(self.wall_limit_seconds)} s wall-time limit"
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        if self.exit_code is None:
            return "exit status unknown (the process was reaped elsewhere)"
        if self.exit_code != 0:
            return f"exit code {self.exit_code}"
        missing = [name for name in required if name not in self.outputs]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            return f"missing output{plural} {', '.join(missing)}"
        return None


class RunningJob:
    """A launched job; obtain one from :func:`start`."""

    pid: int | None  # None when the launch failed (see RunResult.launch_error)

    def __init__(
        self,
        spec: RunSpec,
        *,
        proc: subprocess.Popen[bytes] | None,
        started: float,
        out_fd: int = -1,
        err_fd: int = -1,
        sandbox_id: tuple[int, int] = (0, 0),
        result: RunResult | None = None,
    ) -> None:
        self.spec = spec
        self.pid = proc.pid if proc is not None else None
        self._proc = proc
        self._started = started
        self._out_fd = out_fd
        self._err_fd = err_fd
        self._sandbox_id = sandbox_id
        self._result = result
        self._pidfd = _open_pidfd(proc.pid) if proc is not None else None
        # _lock orders kill() against reaping: once the leader is reaped its pid (== pgid)
        # may be recycled, so nobody may signal the group after that.
        self._lock = threading.Lock()
        self._reaped = proc is None
        self._kill_requested = False
        self._wait_lock = threading.Lock()

    def kill(self) -> None:
        """SIGKILL the whole process group; idempotent and safe from any thread."""
        with self._lock:
            if self._reaped:
                return
            self._kill_requested = True
            self._signal_group()

    def wait(self) -> RunResult:
        """Block until the job ends (killing it at the wall-time limit) and return its result."""
        with self._wait_lock:
            if self._result is None:
                self._result = self._collect()
            return self._result

    # -- internals -------------------------------------------------------------------------

    def _signal_group(self) -> None:
        # Caller holds _lock or knows the leader is not reaped yet (it is at worst a zombie,
        # which keeps its pid and hence the pgid reserved).
        assert self.pid is not None
        # ESRCH: group already empty; EPERM: only members we may not signal remain.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, SIGKILL)

    def _collect(self) -> RunResult:
        proc = self._proc
        assert proc is not None  # a failed launch has its result preset
        if self._out_fd < 0:
            raise RuntimeError("an earlier wait() was interrupted; the job was killed")
        spec = self.spec
        deadline = None if math.isinf(spec.wall_seconds) else self._started + spec.wall_seconds
        try:
            timed_out = False
            if not self._wait_leader_exit(deadline):
                timed_out = True
                self._signal_group()
                self._wait_leader_exit(None)
            ended = time.monotonic()
            # The leader is a zombie now, so the pgid cannot be recycled: kill what is left
            # of the group (background children, double-forked daemons) before reaping.
            self._signal_group()
            self._wait_group_dead()
            with self._lock:
                status, cpu = _reap(proc)
                self._reaped = True
                killed = self._kill_requested
        except BaseException:
            # Interrupted (e.g. KeyboardInterrupt): do not leave the job running unreaped.
            self._abandon()
            raise
        finally:
            self._close_pidfd()

        exit_code: int | None = None
        sig: int | None = None
        if status is not None:
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
            else:
                exit_code = os.waitstatus_to_exitcode(status)
        try:
            stdout = _read_tail(self._out_fd, spec.output_cap)
            stderr = _read_tail(self._err_fd, spec.output_cap)
        finally:
            self._close_logs()
        outputs, missing = _collect_outputs(spec, self._sandbox_id)
        return RunResult(
            exit_code=exit_code,
            signal=sig,
            wall_seconds=ended - self._started,
            cpu_seconds=cpu,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            killed=killed,
            outputs=outputs,
            missing_outputs=missing,
            wall_limit_seconds=spec.wall_seconds,
        )

    def _wait_leader_exit(self, deadline: float | None) -> bool:
        """Wait (without reaping) until the leader exits; False when the deadline passed first."""
        assert self.pid is not None
        if self._pidfd is not None:
            poller = select.poll()
            poller.register(self._pidfd, select.POLLIN)
            while True:
                timeout_ms: int | None = None
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    timeout_ms = max(1, math.ceil(remaining * 1000))
                if poller.poll(timeout_ms):
                    return True
        # No pidfd (old kernel, non-Linux): poll without reaping, so the pgid stays reserved.
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        while True:
            try:
                if os.waitid(os.P_PID, self.pid, flags) is not None:
                    return True
            except ChildProcessError:
                return True  # reaped elsewhere; _reap() reports that
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_SECONDS)

    def _wait_group_dead(self) -> None:
        """Give SIGKILLed group members a moment to die, re-killing late forks."""
        assert self.pid is not None
        end = time.monotonic() + _GROUP_GRACE_SECONDS
        while _group_has_live_members(self.pid) and time.monotonic() < end:
            time.sleep(_POLL_SECONDS)
            self._signal_group()

    def _abandon(self) -> None:
        proc = self._proc
        with self._lock:
            if self._reaped or proc is None:
                return
            self._signal_group()
            _reap(proc)
            self._reaped = True
        self._close_logs()

    def _close_logs(self) -> None:
        # Reset to -1 so a recycled descriptor number is never read or closed by mistake.
        _close_fd(self._out_fd)
        _close_fd(self._err_fd)
        self._out_fd = self._err_fd = -1

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            _close_fd(self._pidfd)
            self._pidfd = None


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it if the thread that started it dies.

    A worker killed with SIGKILL cannot kill its jobs; without this the job would keep
    running beside its requeued second attempt.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)


def kill_orphans(root: Path, keep: Callable[[str], bool]) -> int:
    """Kill processes running inside sandboxes under ``root`` that ``keep`` rejects; remove those.

    Used at worker start: sandboxes of workers that died hold jobs that were requeued.
    """
    root = root.resolve()
    doomed = [p for p in root.iterdir() if p.is_dir() and not keep(p.name)]
    if not doomed:
        return 0
    prefixes = tuple(str(p) for p in doomed)
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd.startswith(prefixes):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), SIGKILL)
                killed += 1
    for p in doomed:
        remove(p)
    return killed


def start(spec: RunSpec) -> RunningJob:
    """Create the sandbox, place read-only input copies and launch the job in its own group.

    Raises ValueError for a bad spec and OSError when the sandbox cannot be prepared (leaving
    nothing behind). A missing or non-executable program is not raised: the returned job's
    result carries ``launch_error`` instead.
    """
    _validate(spec)
    sandbox = spec.sandbox
    log_dir = spec.log_dir
    created: list[Path] = []
    fds: list[int] = []
    try:
        for directory in (log_dir, sandbox):
            os.mkdir(directory, 0o700)
            created.append(directory)
            os.chmod(directory, 0o700)  # mkdir's mode is subject to the umask
        for name, source in spec.inputs.items():
            target = sandbox / name
            # A copy, never a link: the job must not be able to modify the content store.
            shutil.copyfile(source, target)
            os.chmod(target, 0o444)
        os.mkdir(sandbox / _TMP_DIR, 0o700)
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        # We keep these descriptors and read the tails through them, so renaming or replacing
        # the log files cannot change what we report.
        out_fd = os.open(spec.stdout_path, flags, 0o600)
        fds.append(out_fd)
        err_fd = os.open(spec.stderr_path, flags, 0o600)
        fds.append(err_fd)
        st = os.lstat(sandbox)
        sandbox_id = (st.st_dev, st.st_ino)

        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                spec.argv,
                cwd=sandbox,
                env=_job_env(spec),
                stdin=subprocess.DEVNULL,
                stdout=out_fd,
                stderr=err_fd,
                start_new_session=True,
                close_fds=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            # Failures in the child before exec carry a filename; parent-side ones (fork,
            # pipes, fd exhaustion) do not and are host problems worth raising.
            if exc.filename is None:
                raise
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            for fd in fds:
                _close_fd(fd)
            return RunningJob(
                spec,
                proc=None,
                started=started,
                result=RunResult(
                    exit_code=None,
                    signal=None,
                    wall_seconds=0.0,
                    cpu_seconds=0.0,
                    stdout=b"",
                    stderr=b"",
                    timed_out=False,
                    killed=False,
                    outputs={},
                    missing_outputs=list(spec.outputs),
                    launch_error=f"cannot execute {spec.argv[0]!r}: {reason}",
                    wall_limit_seconds=spec.wall_seconds,
                ),
            )
    except BaseException:
        for fd in fds:
            _close_fd(fd)
        for directory in reversed(created):
            _rmtree(directory)
        raise
    return RunningJob(
        spec,
        proc=proc,
        started=started,
        out_fd=out_fd,
        err_fd=err_fd,
        sandbox_id=sandbox_id,
    )


def remove(spec_or_sandbox: RunSpec | Path | str) -> None:
    """Remove the sandbox and its log directory, whatever permissions the job left behind."""
    sandbox = spec_or_sandbox.sandbox if isinstance(spec_or_sandbox, RunSpec) else spec_or_sandbox
    sandbox = Path(sandbox)
    for path in (sandbox, log_dir_for(sandbox)):
        _rmtree(path)


# -- helpers ---------------------------------------------------------------------------------


def _check_name(kind: str, name: str) -> None:
    if not NAME_PATTERN.fullmatch(name) or name in (".", ".."):
        raise ValueError(
            f"invalid {kind} name {name!r}: expected 1-64 of [A-Za-z0-9_.-], not '.' or '..'"
        )


def _validate(spec: RunSpec) -> None:
    if not spec.argv:
        raise ValueError("argv must not be empty")
    if any("\0" in arg for arg in spec.argv):
        raise ValueError("argv must not contain NUL bytes")
    for name in spec.inputs:
        _check_name("input", name)
        if name in RESERVED_INPUT_NAMES:
            raise ValueError(f"input name {name!r} is reserved (it is the job's TMPDIR)")
    for name in spec.outputs:
        _check_name("output", name)
    if not spec.wall_seconds > 0:  # also rejects NaN
        raise ValueError(f"wall_seconds must be > 0, got {spec.wall_seconds!r}")
    if spec.output_cap < 0:
        raise ValueError(f"output_cap must be >= 0, got {spec.output_cap!r}")
    for key, value in (spec.env or {}).items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable {key!r}")


def _job_env(spec: RunSpec) -> dict[str, str]:
    # Nothing from the gateway's own environment leaks in (credentials, DB URLs, ...).
    sandbox = os.path.abspath(spec.sandbox)
    env = {
        "PATH": DEFAULT_PATH,
        "HOME": sandbox,
        "LANG": "C.UTF-8",
        "TMPDIR": os.path.join(sandbox, _TMP_DIR),
    }
    env.update(spec.env or {})
    return env


def _format_seconds(seconds: float) -> str:
    if math.isfinite(seconds) and seconds.is_integer():
        return str(int(seconds))
    return f"{seconds:g}"


def _open_pidfd(pid: int) -> int | None:
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # ENOSYS on old kernels or under some seccomp profiles
        return None


def _reap(proc: subprocess.Popen[bytes]) -> tuple[int | None, float]:
    """Reap the leader with wait4; return (raw wait status or None if unknown, cpu seconds)."""
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:
        # Someone else reaped it (e.g. SIGCHLD set to SIG_IGN); like Popen, record 0.
        proc.returncode = 0
        return None, 0.0
    # Tell Popen the child is gone, or its __del__ warns and later tries to reap the pid.
    proc.returncode = os.waitstatus_to_exitcode(status)
    return status, usage.ru_utime + usage.ru_stime


def _group_has_live_members(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # only members we may not signal remain; waiting will not help
    # The group still exists, but zombies (including our unreaped leader, and orphans when
    # PID 1 does not reap) count as members; only running processes matter here.
    try:
        entries = os.listdir("/proc")
    except OSError:
        return False  # no procfs: we cannot tell, and SIGKILL has been sent anyway
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may contain spaces and parentheses.
        fields = data.rpartition(b")")[2].split()
        if len(fields) >= 3 and fields[2] == b"%d" % pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _read_tail(fd: int, cap: int) -> bytes:
    """Read the last ``cap`` bytes of the file open at ``fd`` without loading the rest."""
    size = os.fstat(fd).st_size
    offset = max(0, size - cap)
    chunks: list[bytes] = []
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _collect_outputs(
    spec: RunSpec, sandbox_id: tuple[int, int]
) -> tuple[dict[str, Path], list[str]]:
    try:
        st = os.lstat(spec.sandbox)
        same_sandbox = (st.st_dev, st.st_ino) == sandbox_id
    except OSError:
        same_sandbox = False
    outputs: dict[str, Path] = {}
    missing: list[str] = []
    for name in spec.outputs:
        path = spec.sandbox / name
        # A sandbox swapped for another directory or symlink yields no outputs at all.
        if same_sandbox and _is_regular_file(path):
            outputs[name] = path
        else:
            missing.append(name)
    return outputs, missing


def _is_regular_file(path: Path) -> bool:
    # O_NOFOLLOW: a symlink to e.g. /etc/shadow must not become an output; O_NONBLOCK: opening
    # a FIFO the job left behind must not hang.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def _close_fd(fd: int) -> None:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def _rmtree(root: Path) -> None:
    """Remove ``root`` recursively, first making directories the job locked down writable."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(root)
        return
    # Iterative, and lstat-checked so symlinks are never followed out of the tree: a directory
    # needs u+rwx before it can be listed and emptied.
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                continue
            # Not ours (e.g. a setuid helper made it): rmtree reports it if it matters.
            with contextlib.suppress(PermissionError):
                os.chmod(directory, 0o700)
            with os.scandir(directory) as it:
                stack.extend(Path(e.path) for e in it if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            continue
    shutil.rmtree(root)
