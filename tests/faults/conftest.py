"""Fault-injection harness: live processes with fault hooks, a cuttable TCP proxy, and the
invariant checks every fault test ends with (store consistency, the run ledger).

Random fault points come from a seed: ``BGW_FAULT_SEED`` replays one; otherwise each test
draws one and prints it (shown with the failure, and in the test's ``fault.log``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.e2e.conftest import LiveServer, live_db  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]
LEDGER_JOB = Path(__file__).resolve().parent / "ledger_job.py"


# ---- seeds and logs ------------------------------------------------------------------------


class FaultLog:
    """The seed and every fault point, printed and written to ``fault.log``."""

    def __init__(self, path: Path, name: str) -> None:
        env = os.environ.get("BGW_FAULT_SEED")
        self.seed = int(env) if env else random.SystemRandom().randrange(2**32)
        self.rng = random.Random(self.seed)
        self.path = path
        self.t0 = time.monotonic()
        self.note(f"{name}: seed {self.seed} (replay with BGW_FAULT_SEED={self.seed})")

    def note(self, line: str) -> None:
        stamped = f"[{time.monotonic() - self.t0:7.2f}s] {line}"
        print(stamped, flush=True)
        with open(self.path, "a") as fh:
            fh.write(stamped + "\n")

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.path.read_text().splitlines()[-n:])


@pytest.fixture
def fault_log(request: pytest.FixtureRequest, tmp_path: Path) -> FaultLog:
    return FaultLog(tmp_path / "fault.log", request.node.name)


# ---- live processes --------------------------------------------------------------------------


class FaultServer(LiveServer):
    """A LiveServer whose processes run ``tests.faults.inject`` (the CLI plus fault hooks)."""

    def __init__(self, db_url: str, data_dir: Path, **env: str) -> None:
        super().__init__(db_url, data_dir, **env)
        self.fault_dir = data_dir.parent / "faults"
        self.fault_dir.mkdir(exist_ok=True)
        # The database as the test reaches it (the service's URL may go through a proxy).
        self.direct_db_url = db_url

    def environ(self) -> dict[str, str]:
        return {
            **super().environ(),
            "BGW_FAULT_DIR": str(self.fault_dir),
            "PYTHONPATH": str(ROOT),
        }

    def _spawn(self, *args: str, **env: str) -> subprocess.Popen[bytes]:
        with open(self.log, "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "tests.faults.inject", *args],
                env={**self.environ(), **env},
                cwd=ROOT,
                stdout=log,
                stderr=log,
            )

    def start(self, timeout: float = 30) -> None:
        self.proc = self._spawn("serve", "--port", str(self.port))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError("server did not start: " + self.log.read_text()[-3000:])

    def start_worker(self, **env: str) -> subprocess.Popen[bytes]:
        proc = self._spawn("worker", **env)
        self.workers.append(proc)
        return proc

    def kill9_worker(self, proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        self.workers.remove(proc)

    def fault(self, name: str, on: bool) -> None:
        """Switch a fault of ``tests.faults.inject`` on or off."""
        flag = self.fault_dir / name
        if on:
            flag.touch()
        else:
            flag.unlink(missing_ok=True)


def register_ledger_app(c: httpx.Client, name: str = "ledger", wall_seconds: int = 120) -> None:
    """An app running ``ledger_job.py``: inputs ``in`` and ``shared``, output ``out``."""
    r = c.post(
        "/v1/apps",
        json={
            "name": name,
            "inputs": ["in", "shared"],
            "outputs": ["out"],
            "local": {"command": [sys.executable, str(LEDGER_JOB)], "wall_seconds": wall_seconds},
        },
    )
    assert r.status_code == 201, r.text


# ---- a TCP proxy that can be cut -------------------------------------------------------------


class TcpProxy:
    """An asyncio TCP proxy on 127.0.0.1 (own thread) that can be cut and restored.

    ``cut()`` closes every proxied connection and stops listening (new connections are
    refused); ``restore()`` listens again on the same port.
    """

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.AbstractServer | None = None
        self.writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self.connections = 0
        self.flowing: asyncio.Event | None = None  # cleared while stalled

    def _run(self, coro: Any, timeout: float = 10) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> int:
        self.thread.start()
        self._run(self._listen())
        return self.port

    async def _init_flow(self) -> None:
        self.flowing = asyncio.Event()
        self.flowing.set()

    async def _listen(self) -> None:
        self.server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self.server.sockets[0].getsockname()[1]

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.flowing is not None:
                    await self.flowing.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.flowing is not None:
            await self.flowing.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self.connections += 1
        self.writers.update((writer, up_writer))
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self.writers.discard(writer)
            self.writers.discard(up_writer)

    async def _cut(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None
        for w in list(self.writers):
            # An abortive close (RST) on both sides, like a crashed server or a cut cable.
            w.transport.abort()
        self.writers.clear()

    def cut(self) -> None:
        self._run(self._cut())

    async def _set_flow(self, on: bool) -> None:
        if self.flowing is None:
            await self._init_flow()
        assert self.flowing is not None
        if on:
            self.flowing.set()
        else:
            self.flowing.clear()

    def stall(self) -> None:
        """A black hole: connections stay open (and new ones are accepted) but no byte
        passes, as when a network drops packets; ``unstall`` lets the data flow again."""
        self._run(self._set_flow(False))

    def unstall(self) -> None:
        self._run(self._set_flow(True))

    def restore(self) -> None:
        self._run(self._listen())

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run(self._cut())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


# ---- invariants ------------------------------------------------------------------------------


def _md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def store_problems(db_url: str, store_dir: Path) -> list[str]:
    """What is wrong with the file store: rows without (intact) bytes, live references
    without a row. Empty when every files row has its bytes and every file a live batch
    refers to (input, output, log, association) is stored."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = {r[0]: int(r[1]) for r in conn.execute(text("SELECT md5, size FROM files"))}
            live_refs = conn.execute(
                text(
                    "SELECT ji.md5, 'input of ' || j.name FROM job_inputs ji "
                    "JOIN jobs j ON j.id = ji.job_id JOIN batches b ON b.id = j.batch_id "
                    "WHERE b.state <> 'retired' AND ji.md5 IS NOT NULL "
                    "UNION ALL SELECT jo.md5, 'output of ' || j.name FROM job_outputs jo "
                    "JOIN jobs j ON j.id = jo.job_id JOIN batches b ON b.id = j.batch_id "
                    "WHERE b.state <> 'retired' "
                    "UNION ALL SELECT j.stdout_md5, 'stdout of ' || j.name FROM jobs j "
                    "JOIN batches b ON b.id = j.batch_id "
                    "WHERE b.state <> 'retired' AND j.stdout_md5 IS NOT NULL "
                    "UNION ALL SELECT j.stderr_md5, 'stderr of ' || j.name FROM jobs j "
                    "JOIN batches b ON b.id = j.batch_id "
                    "WHERE b.state <> 'retired' AND j.stderr_md5 IS NOT NULL "
                    "UNION ALL SELECT bf.md5, 'file of batch ' || b.name FROM batch_files bf "
                    "JOIN batches b ON b.id = bf.batch_id WHERE b.state IN ('open', 'in_progress')"
                )
            ).all()
    finally:
        engine.dispose()
    problems = []
    for md5, what in live_refs:
        if md5 not in rows:
            problems.append(f"{md5} ({what}) has no files row")
    for md5, size in sorted(rows.items()):
        path = store_dir / md5[:2] / md5
        if not path.is_file():
            problems.append(f"{md5}: files row without bytes")
        elif path.stat().st_size != size or _md5_of(path) != md5:
            problems.append(f"{md5}: stored bytes do not match (size {path.stat().st_size})")
    return problems


def temp_leftovers(store_dir: Path) -> list[str]:
    return sorted(p.name for d in ("tmp", "trash") for p in (store_dir / d).iterdir())


def ledger_runs(ledger: Path) -> dict[str, dict[int, set[str]]]:
    """job -> pid -> the marks that run left (start, end, overlap)."""
    runs: dict[str, dict[int, set[str]]] = {}
    for p in ledger.iterdir():
        job, pid, kind = p.name.split(".")
        runs.setdefault(job, {}).setdefault(int(pid), set()).add(kind)
    return runs


def _started(ledger: Path, job: str, pid: int) -> float | None:
    """When a run started (None: killed before it wrote its start time)."""
    try:
        return float((ledger / f"{job}.{pid}.start").read_text())
    except (OSError, ValueError):
        return None


def ledger_problems(ledger: Path, jobs: dict[str, dict[str, Any]]) -> list[str]:
    """Duplicate executions, from the ledger and the jobs' details (``GET /v1/jobs/{name}``
    plus ``out``: the recorded output's text, for done jobs).

    A job may run again after the process running it died (its attempt is counted); it must
    never run twice at once, more often than its attempts, or after the run whose output
    was recorded.
    """
    problems = []
    runs = ledger_runs(ledger)
    for job, by_pid in sorted(runs.items()):
        if job not in jobs:
            problems.append(f"{job}: ran {len(by_pid)} time(s) but is no job of an accepted batch")
            continue
        for pid, marks in by_pid.items():
            if "overlap" in marks:
                other = (ledger / f"{job}.{pid}.overlap").read_text()
                problems.append(f"{job}: run {pid} started while run {other} was still alive")
        attempts = jobs[job]["attempts"]
        if len(by_pid) > attempts:
            problems.append(f"{job}: {len(by_pid)} runs but {attempts} attempt(s)")
    for job, info in sorted(jobs.items()):
        by_pid = runs.get(job, {})
        if info["state"] == "done":
            if not by_pid:
                problems.append(f"{job}: done without ever running")
                continue
            out = info.get("out")
            if out is None:  # retired: the output may be collected
                continue
            name, pid_s, *_ = out.split()
            pid = int(pid_s)
            if name != job or pid not in by_pid or "end" not in by_pid[pid]:
                problems.append(f"{job}: recorded output {out!r} is from no finished run")
                continue
            start = _started(ledger, job, pid) or 0.0
            later = [p for p in by_pid if (_started(ledger, job, p) or 0.0) > start]
            if later:
                problems.append(f"{job}: ran again ({later}) after its recorded run {pid}")
    return problems


def paged(c: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a paged list."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        q = {**params, "limit": 1000, **({"cursor": cursor} if cursor else {})}
        r = c.get(path, params=q)
        assert r.status_code == 200, r.text
        body = r.json()
        items.extend(body["items"])
        cursor = body["next_cursor"]
        if not cursor:
            return items
