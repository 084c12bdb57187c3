"""The database unavailable for a while under a live service with jobs running.

PostgreSQL: the service reaches the (shared) server through a TCP proxy in the test; the
proxy is cut (every connection reset, new ones refused) for longer than a worker's
heartbeat deadline, then restored. SQLite: the test holds an exclusive lock on the database
file, once briefly under the default busy timeout (writers wait, then go on), once for
longer than a short busy timeout (``?timeout=`` in the URL).

Expected: during the outage every request answers within a bounded time, and the ones that
need the database answer 503 problem+json ``unavailable`` (never 500, never a hang);
liveness stays up and readiness says 503. Afterwards requests succeed again, the batch
submitted before the outage completes with every job run exactly once (the ledger), a new
batch runs, and the store is consistent: nothing a refused request touched was kept.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import TestDatabase
from tests.faults.conftest import (
    FaultLog,
    FaultServer,
    TcpProxy,
    ledger_problems,
    register_ledger_app,
    store_problems,
    temp_leftovers,
)

BOUND = 12.0  # seconds any request may take during the outage


def _submit_ledger_batch(
    c: httpx.Client, name: str, ledger: Path, n: int, sleep: float
) -> dict[str, str]:
    shared = f"shared {name}".encode()
    ins = {f"{name}-{i}": f"input {name} {i}".encode() for i in range(n)}
    for data in [shared, *ins.values()]:
        r = c.put(f"/v1/files/{hashlib.md5(data).hexdigest()}", content=data)
        assert r.is_success, r.text
    jobs = [
        {
            "name": j,
            "args": [str(ledger), j, str(sleep)],
            "inputs": [
                {"name": "in", "md5": hashlib.md5(b).hexdigest()},
                {"name": "shared", "md5": hashlib.md5(shared).hexdigest()},
            ],
        }
        for j, b in ins.items()
    ]
    r = c.post("/v1/batches", json={"name": name, "app": "ledger", "jobs": jobs})
    assert r.status_code == 201, r.text
    return {j: hashlib.md5(b).hexdigest() for j, b in ins.items()}


class Prober:
    """Sends a mix of requests while the database is away; records what would be wrong."""

    def __init__(self, server: FaultServer, log: FaultLog) -> None:
        self.server, self.log = server, log
        self.client = server.client()
        self.client.timeout = httpx.Timeout(BOUND * 2)
        self.bad: list[str] = []
        self.seen: dict[str, set[int]] = {}
        self.refused_uploads: set[str] = set()
        self.refused_batches: set[str] = set()
        self.restoring = threading.Event()  # set once the database may be back
        self.n = 0

    def _one(self, what: str, send: Callable[[], httpx.Response], *, allow_ok: bool) -> int | None:
        t = time.monotonic()
        try:
            r = send()
        except httpx.HTTPError as exc:
            self.bad.append(f"{what}: {type(exc).__name__} after {time.monotonic() - t:.1f}s")
            return None
        took = time.monotonic() - t
        self.seen.setdefault(what, set()).add(r.status_code)
        if took > BOUND:
            self.bad.append(f"{what}: answered after {took:.1f}s")
        if r.status_code == 503:
            ctype = r.headers.get("content-type", "")
            if what == "readyz":
                if r.json().get("status") != "unavailable":
                    self.bad.append(f"readyz: 503 with {r.text[:200]}")
            elif not ctype.startswith("application/problem+json") or (
                r.json().get("code") != "unavailable"
            ):
                self.bad.append(f"{what}: 503 but {ctype} {r.text[:200]}")
        elif not (r.is_success and (allow_ok or self.restoring.is_set())):
            self.bad.append(f"{what}: {r.status_code} {r.text[:300]}")
        return r.status_code

    def round(self, *, allow_ok: bool) -> None:
        c = self.client
        self.n += 1
        blob = os.urandom(64 << 10)
        md5 = hashlib.md5(blob).hexdigest()
        name = f"during-{self.n}"
        probes: list[tuple[str, Callable[[], httpx.Response]]] = [
            ("me", lambda: c.get("/v1/me")),
            ("get batch", lambda: c.get("/v1/batches/before")),
            ("list jobs", lambda: c.get("/v1/batches/before/jobs")),
            ("query", lambda: c.post("/v1/batches/query", json={"batches": ["before"]})),
            ("put file", lambda: c.put(f"/v1/files/{md5}", content=blob)),
            (
                "create batch",
                lambda: c.post("/v1/batches", json={"name": name, "app": "uppercase"}),
            ),
            ("readyz", lambda: c.get("/readyz")),
        ]
        for what, send in probes:
            status = self._one(what, send, allow_ok=allow_ok)
            if status == 503 and what == "put file":
                self.refused_uploads.add(md5)
            if status == 503 and what == "create batch":
                self.refused_batches.add(name)
        r = c.get("/healthz")
        if r.status_code != 200:
            self.bad.append(f"healthz: {r.status_code}")


def _run_outage(
    server: FaultServer,
    log: FaultLog,
    tmp_path: Path,
    cut: Callable[[], None],
    restore: Callable[[], None],
    *,
    seconds: float,
    allow_ok: bool,
    expect_503_on: str | None,
    rerun_ok: bool,
    workers: int = 0,
) -> None:
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    server.start()
    for _ in range(workers):
        server.start_worker()
    with server.client() as c:
        register_ledger_app(c)
        # Four jobs of 1.2 s on two slots per process: some run across the outage, some end
        # in it.
        expected = _submit_ledger_batch(c, "before", ledger, 4, 1.2)
        deadline = time.monotonic() + 20
        while not list(ledger.glob("*.start")):
            assert time.monotonic() < deadline, "no job started"
            time.sleep(0.02)
        prober = Prober(server, log)
        log.note("database cut")
        cut()
        t0 = time.monotonic()
        back = threading.Event()

        def restore_later() -> None:
            back.wait(seconds)
            prober.restoring.set()
            restore()
            back.set()

        timer = threading.Thread(target=restore_later, daemon=True)
        timer.start()
        try:
            while not back.is_set():
                prober.round(allow_ok=allow_ok)
                back.wait(0.2)
        finally:
            back.set()
            timer.join(timeout=30)
            prober.client.close()
        log.note(f"database back after {time.monotonic() - t0:.1f}s; {prober.n} rounds")
        seen = sorted((k, sorted(v)) for k, v in prober.seen.items())
        log.note(f"answers during the outage: {seen}")
        assert not prober.bad, prober.bad[:10]
        if expect_503_on:
            assert 503 in prober.seen.get(expect_503_on, set()), prober.seen
        # Recovery: requests succeed again within a bounded time.
        deadline = time.monotonic() + 20
        while c.get("/v1/me").status_code != 200:
            assert time.monotonic() < deadline, "requests do not succeed after the outage"
            time.sleep(0.2)
        assert c.get("/readyz").status_code == 200
        # The batch from before the outage completes; every job ran exactly as often as it
        # was attempted, never twice at once, and its output is its own.
        t1 = time.monotonic()
        deadline = time.monotonic() + 45
        while (b := c.get("/v1/batches/before").json())["state"] != "complete":
            assert time.monotonic() < deadline, f"the dispatcher did not resume: {b}"
            time.sleep(0.2)
        log.note(f"batch from before the outage complete {time.monotonic() - t1:.1f}s later")
        jobs: dict[str, dict[str, Any]] = {}
        for job, in_md5 in expected.items():
            info = c.get(f"/v1/jobs/{job}").json()
            assert info["state"] == "done", (info["error"], info)
            out = c.get(f"/v1/jobs/{job}/outputs/out").text
            assert out.split()[2] == in_md5, out
            jobs[job] = {**info, "out": out}
        problems = ledger_problems(ledger, jobs)
        assert not problems, problems
        reruns = {j: i["attempts"] for j, i in jobs.items() if i["attempts"] > 1}
        log.note(f"jobs attempted more than once: {reruns}")
        if not rerun_ok:
            # Nothing was lost (readers went on): no reason to run anything again.
            assert not reruns, reruns
        # Nothing a refused request touched was kept; new work runs.
        for md5 in prober.refused_uploads:
            assert c.head(f"/v1/files/{md5}").status_code == 404, md5
        for name in prober.refused_batches:
            assert c.get(f"/v1/batches/{name}").status_code == 404, name
        after = tmp_path / "ledger-after"
        after.mkdir()
        _submit_ledger_batch(c, "after", after, 2, 0)
        deadline = time.monotonic() + 30
        while c.get("/v1/batches/after").json()["state"] != "complete":
            assert time.monotonic() < deadline, "a batch submitted after the outage did not run"
            time.sleep(0.1)
    assert temp_leftovers(server.data_dir / "files") == []
    assert not store_problems(server.direct_db_url, server.data_dir / "files")


@pytest.fixture
def outage_server(test_db: TestDatabase, live_db: str, tmp_path: Path) -> Iterator[FaultServer]:
    data = tmp_path / "data"
    data.mkdir()
    server = FaultServer(live_db, data)
    yield server
    server.stop()


def test_postgres_unreachable_for_a_while(
    test_db: TestDatabase, outage_server: FaultServer, tmp_path: Path, fault_log: FaultLog
) -> None:
    if test_db.engine != "postgres":
        pytest.skip("PostgreSQL through a proxy; SQLite has its own outage tests")
    host_port = outage_server.db_url.split("@", 1)[1].split("/", 1)[0]
    proxy = TcpProxy(int(host_port.rsplit(":", 1)[1]))
    port = proxy.start()
    outage_server.db_url = outage_server.db_url.replace(host_port, f"127.0.0.1:{port}")
    try:
        _run_outage(
            outage_server,
            fault_log,
            tmp_path,
            proxy.cut,
            proxy.restore,
            seconds=5.0,  # longer than BGW_WORKER_DEAD_SECONDS (4) of the live server
            allow_ok=False,
            expect_503_on="me",
            # Jobs running through an outage longer than the fencing limit are stopped and
            # run again (their attempts count it); the ledger proves never twice at once.
            rerun_ok=True,
            workers=1,
        )
    finally:
        outage_server.stop()
        proxy.stop()


class SqliteLock:
    """An exclusive transaction on the database file, held by the test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None

    def cut(self) -> None:
        self.conn = sqlite3.connect(
            self.path, isolation_level=None, timeout=30, check_same_thread=False
        )
        self.conn.execute("BEGIN EXCLUSIVE")

    def restore(self) -> None:
        if self.conn is not None:
            self.conn.execute("ROLLBACK")
            self.conn.close()
            self.conn = None


@pytest.mark.parametrize(
    ("lock_seconds", "busy_timeout"),
    [(3.0, None), (4.5, 1.0)],
    ids=["brief-lock-writers-wait", "long-lock-503"],
)
def test_sqlite_locked_for_a_while(
    test_db: TestDatabase,
    outage_server: FaultServer,
    tmp_path: Path,
    fault_log: FaultLog,
    lock_seconds: float,
    busy_timeout: float | None,
) -> None:
    """Readers go on under the lock (WAL); writers wait for it up to the busy timeout, then
    answer 503: with the default timeout (30 s) a brief lock only delays them."""
    if test_db.engine != "sqlite":
        pytest.skip("an exclusive lock on the SQLite file; PostgreSQL has the proxy test")
    path = Path(outage_server.db_url.removeprefix("sqlite:///"))
    if busy_timeout is not None:
        outage_server.db_url += f"?timeout={busy_timeout}"
    lock = SqliteLock(path)
    try:
        _run_outage(
            outage_server,
            fault_log,
            tmp_path,
            lock.cut,
            lock.restore,
            seconds=lock_seconds,
            allow_ok=True,
            expect_503_on="create batch" if busy_timeout is not None else None,
            rerun_ok=False,
        )
    finally:
        lock.restore()


def test_database_lost_right_after_a_claim(
    live_db: str, tmp_path: Path, fault_log: FaultLog
) -> None:
    """The claim committed, then the connection dropped before the job was loaded: the job
    is this worker's but no thread of it runs it. It must go back to the queue and run (not
    stay in progress forever, not fail for a database hiccup)."""
    data = tmp_path / "data"
    data.mkdir()
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    server = FaultServer(live_db, data)
    try:
        server.start()
        with server.client() as c:
            register_ledger_app(c)
            server.fault("db_lost_after_claim", True)
            expected = _submit_ledger_batch(c, "lost", ledger, 1, 0)
            deadline = time.monotonic() + 20
            while (b := c.get("/v1/batches/lost").json())["state"] != "complete":
                assert time.monotonic() < deadline, f"the job stayed claimed: {b}"
                time.sleep(0.1)
            assert not (server.fault_dir / "db_lost_after_claim").exists(), "fault never fired"
            (job,) = expected
            info = c.get(f"/v1/jobs/{job}").json()
            assert info["state"] == "done", (info["error"], info)
            assert info["attempts"] == 2, info
            info["out"] = c.get(f"/v1/jobs/{job}/outputs/out").text
            assert not ledger_problems(ledger, {job: info})
            assert len(list(ledger.glob("*.start"))) == 1
    finally:
        server.stop()


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rpartition(b")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_postgres_worker_partitioned_from_the_database(
    test_db: TestDatabase, live_db: str, tmp_path: Path, fault_log: FaultLog
) -> None:
    """Only a worker loses the database, for longer than its heartbeat deadline: the
    service requeues the worker's jobs and runs them itself; the worker must have stopped
    them first (a job never runs twice at once), and rejoins cleanly afterwards."""
    if test_db.engine != "postgres":
        pytest.skip("several processes share a PostgreSQL database; SQLite is single-process")
    data = tmp_path / "data"
    data.mkdir()
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    timing = {"BGW_WORKER_HEARTBEAT_SECONDS": "0.5", "BGW_WORKER_DEAD_SECONDS": "3"}
    server = FaultServer(live_db, data, BGW_LOCAL_SLOTS="1", **timing)
    host_port = live_db.split("@", 1)[1].split("/", 1)[0]
    proxy = TcpProxy(int(host_port.rsplit(":", 1)[1]))
    port = proxy.start()
    try:
        server.start()
        worker = server.start_worker(
            BGW_DATABASE_URL=live_db.replace(host_port, f"127.0.0.1:{port}"),
            BGW_LOCAL_SLOTS="2",
        )
        with server.client() as c:
            register_ledger_app(c)
            expected = _submit_ledger_batch(c, "part", ledger, 3, 4.0)
            deadline = time.monotonic() + 20
            held: list[str] = []
            while not held:
                assert time.monotonic() < deadline, "the worker never ran a job"
                for p in ledger.glob("*.start"):
                    job, pid, _ = p.name.split(".")
                    if _parent(int(pid)) == worker.pid:
                        held.append(job)
                time.sleep(0.02)
            fault_log.note(f"worker {worker.pid} runs {held}: cutting it off")
            proxy.cut()
            try:
                # The service keeps serving, and requeues the lost worker's jobs.
                deadline = time.monotonic() + 20
                while c.get(f"/v1/jobs/{held[0]}").json()["attempts"] < 2:
                    assert time.monotonic() < deadline, "the partitioned worker's job stayed"
                    assert c.get("/v1/me").status_code == 200
                    time.sleep(0.1)
                fault_log.note(f"{held[0]} requeued by the service")
            finally:
                proxy.restore()
            deadline = time.monotonic() + 40
            while (b := c.get("/v1/batches/part").json())["state"] != "complete":
                assert time.monotonic() < deadline, b
                time.sleep(0.2)
            jobs: dict[str, dict[str, Any]] = {}
            for job, in_md5 in expected.items():
                info = c.get(f"/v1/jobs/{job}").json()
                assert info["state"] == "done", (info["error"], info)
                out = c.get(f"/v1/jobs/{job}/outputs/out").text
                assert out.split()[2] == in_md5, out
                jobs[job] = {**info, "out": out}
            problems = ledger_problems(ledger, jobs)
            assert not problems, problems
            attempts = {j: i["attempts"] for j, i in jobs.items()}
            fault_log.note(f"attempts: {attempts}")
            # The worker is back in service: a new batch runs.
            after = tmp_path / "ledger-after"
            after.mkdir()
            _submit_ledger_batch(c, "after", after, 4, 0)
            deadline = time.monotonic() + 30
            while c.get("/v1/batches/after").json()["state"] != "complete":
                assert time.monotonic() < deadline, "a batch after the partition did not run"
                time.sleep(0.1)
        assert worker.poll() is None, "the worker died"
    finally:
        server.stop()
        proxy.stop()


def test_postgres_that_stops_answering(
    test_db: TestDatabase, live_db: str, tmp_path: Path, fault_log: FaultLog
) -> None:
    """Not a refused connection but a black hole: the proxy keeps every connection open
    (and accepts new ones) but passes no byte. Requests get a 503 within a bounded time
    (the client-side deadline on every wait for the server), nothing half-done is kept,
    and the service answers again once bytes flow."""
    if test_db.engine != "postgres":
        pytest.skip("PostgreSQL through a proxy")
    data = tmp_path / "data"
    data.mkdir()
    host_port = live_db.split("@", 1)[1].split("/", 1)[0]
    proxy = TcpProxy(int(host_port.rsplit(":", 1)[1]))
    port = proxy.start()
    server = FaultServer(
        live_db.replace(host_port, f"127.0.0.1:{port}"), data, BGW_DB_TIMEOUT_SECONDS="3"
    )
    try:
        server.start()
        with server.client() as c:
            assert c.get("/v1/me").status_code == 200
            proxy.stall()
            fault_log.note("proxy stalled: connections open, no byte passes")
            try:
                for method, path, body in (
                    ("GET", "/v1/me", None),
                    ("GET", "/v1/batches", None),
                    ("POST", "/v1/batches", {"name": "stalled", "app": "uppercase"}),
                    ("GET", "/readyz", None),
                ):
                    started = time.monotonic()
                    r = c.request(method, path, json=body, timeout=BOUND)
                    took = time.monotonic() - started
                    fault_log.note(f"{method} {path}: {r.status_code} after {took:.1f} s")
                    assert r.status_code == 503, r.text
                    if path != "/readyz":
                        assert r.headers["content-type"] == "application/problem+json"
                        assert r.json()["code"] == "unavailable", r.text
            finally:
                proxy.unstall()
            deadline = time.monotonic() + BOUND
            while (r := c.get("/v1/me", timeout=BOUND)).status_code != 200:
                assert time.monotonic() < deadline, r.text
                time.sleep(0.1)
            # The refused submission left nothing behind, and a new one works.
            assert c.get("/v1/batches/stalled").status_code == 404
            r = c.post(
                "/v1/batches",
                json={
                    "name": "after",
                    "app": "uppercase",
                    "jobs": [{"name": "j0", "inputs": [{"name": "in", "content": "x"}]}],
                },
            )
            assert r.status_code == 201, r.text
    finally:
        server.stop()
        proxy.stop()
