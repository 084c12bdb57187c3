"""kill -9 of ``serve`` (and, on PostgreSQL, of ``worker`` processes) at random points.

A client thread keeps submitting batches (both ways: open batch + uploads with ``?batch=`` +
added jobs + submit, and one atomic create after plain uploads), retrying through every
crash as a client must, and retires finished batches so garbage collection has work. The
main thread picks a phase at random (an upload or a submission in flight, jobs running,
GC after a retire, or just any moment), waits for it, kills a process with SIGKILL at a
random small delay and restarts it. The seed and every kill are logged.

Afterwards: every acknowledged batch is whole and every job of it done with the output of
its own inputs; no file a live batch refers to is missing (row, bytes, content); no job
ran twice at once, more often than its attempts, or after its recorded run (the ledger);
the client never saw an answer it should not have.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import TestDatabase
from tests.faults.conftest import (
    FaultLog,
    FaultServer,
    ledger_problems,
    paged,
    register_ledger_app,
    store_problems,
)

PHASES = ("upload", "submit", "run", "gc", "any")
MAX_BACKLOG = 30


class Workload(threading.Thread):
    """Submits batches of ledger jobs through crashes; records what was acknowledged."""

    def __init__(self, server: FaultServer, ledger: Path, seed: int, log: FaultLog) -> None:
        super().__init__(name="workload", daemon=True)
        self.server, self.ledger, self.log = server, ledger, log
        self.rng = random.Random(seed)
        self.client = server.client()
        self.client.timeout = httpx.Timeout(30)
        self.stop = threading.Event()
        self.phase = {p: threading.Event() for p in PHASES}
        self.accepted: dict[str, dict[str, tuple[str, str]]] = {}
        self.to_retire: list[str] = []
        self.retired: set[str] = set()
        self.attempted: set[str] = set()
        self.errors: list[str] = []
        self.retries = 0
        self.n = 0

    # -- transport: retry through crashes, as a client must --------------------------------

    def call(self, method: str, path: str, ok: tuple[int, ...], **kw: Any) -> httpx.Response:
        deadline = time.monotonic() + 90
        while True:
            try:
                r = self.client.request(method, path, **kw)
                if r.status_code in ok:
                    return r
                if r.status_code != 503:
                    return r
                reason = "503"
            except httpx.TransportError as exc:
                reason = type(exc).__name__
            self.retries += 1
            if time.monotonic() > deadline:
                raise AssertionError(f"{method} {path}: no answer for 90 s ({reason})")
            time.sleep(0.1)

    def expect(self, r: httpx.Response, what: str) -> bool:
        if r.is_success:
            return True
        self.errors.append(f"{what}: {r.status_code} {r.text[:300]}")
        return False

    def put(self, data: bytes, batch: str | None = None) -> str:
        md5 = hashlib.md5(data).hexdigest()
        self.phase["upload"].set()
        params = {"batch": batch} if batch else {}
        r = self.call("PUT", f"/v1/files/{md5}", (200, 201), content=data, params=params)
        self.expect(r, f"PUT {md5}")
        return md5

    # -- one batch ----------------------------------------------------------------------------

    def batch(self) -> None:
        rng = self.rng
        self.n += 1
        name = f"f{self.n}"
        self.attempted.add(name)
        shared = rng.randbytes(rng.randint(1, 6) << 20)
        ins = {
            f"{name}-j{i}": rng.randbytes(rng.randint(1, 4096)) for i in range(rng.randint(2, 24))
        }
        md5 = {j: hashlib.md5(b).hexdigest() for j, b in ins.items()}
        shared_md5 = hashlib.md5(shared).hexdigest()
        jobs = [
            {
                "name": j,
                "args": [str(self.ledger), j, str(rng.choice([0, 0, 0, 0.3, 1.0, 2.0]))],
                "inputs": [{"name": "in", "md5": md5[j]}, {"name": "shared", "md5": shared_md5}],
            }
            for j in ins
        ]
        if self.n % 2:
            # The GAHP way: open batch, query + upload with ?batch=, add jobs, submit.
            r = self.call(
                "POST",
                "/v1/batches",
                (200, 201),
                json={"name": name, "app": "ledger", "submit": False},
            )
            if not self.expect(r, f"create {name}"):
                return
            r = self.call(
                "POST",
                "/v1/files/query",
                (200,),
                json={"md5s": [shared_md5, *md5.values()], "batch": name},
            )
            if not self.expect(r, f"query {name}"):
                return
            missing = set(r.json()["missing"])
            for data in [shared, *ins.values()]:
                if hashlib.md5(data).hexdigest() in missing:
                    self.put(data, batch=name)
            self.phase["submit"].set()
            r = self.call("POST", f"/v1/batches/{name}/jobs", (200,), json={"jobs": jobs})
            if not self.expect(r, f"add jobs {name}"):
                return
            r = self.call("POST", f"/v1/batches/{name}/submit", (200,))
            if not self.expect(r, f"submit {name}"):
                return
        else:
            # One atomic request after plain uploads (kept by their keep-time only).
            for data in [shared, *ins.values()]:
                self.put(data)
            body = {"name": name, "app": "ledger", "jobs": jobs}
            for _ in range(5):
                self.phase["submit"].set()
                r = self.call("POST", "/v1/batches", (200, 201), json=body)
                if r.status_code == 400 and r.json().get("code") == "missing_input_files":
                    # Collected while we were down longer than their keep-time: upload again.
                    again = set(r.json()["md5s"])
                    self.log.note(f"{name}: {len(again)} input(s) collected; uploading again")
                    for data in [shared, *ins.values()]:
                        if hashlib.md5(data).hexdigest() in again:
                            self.put(data)
                    continue
                break
            if not self.expect(r, f"create+submit {name}"):
                return
        self.accepted[name] = {j: (md5[j], shared_md5) for j in ins}
        if rng.random() < 0.6:
            self.to_retire.append(name)

    def retire_finished(self) -> None:
        for name in list(self.to_retire):
            r = self.call("GET", f"/v1/batches/{name}", (200,))
            if not self.expect(r, f"get {name}") or r.json()["state"] != "complete":
                continue
            r = self.call("POST", f"/v1/batches/{name}/retire", (200,))
            if self.expect(r, f"retire {name}"):
                self.to_retire.remove(name)
                self.retired.add(name)
                self.phase["gc"].set()

    def backlog(self) -> int:
        """Jobs of submitted batches not finished yet."""
        r = self.call("GET", "/v1/batches", (200,), params={"state": "in_progress"})
        if not self.expect(r, "list batches"):
            return 0
        return sum(b["counts"]["queued"] + b["counts"]["in_progress"] for b in r.json()["items"])

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.retire_finished()
                if self.backlog() > MAX_BACKLOG:
                    # Keep the queue short: the drain after the last kill stays bounded.
                    time.sleep(0.2)
                    continue
                self.batch()
                time.sleep(self.rng.uniform(0, 0.3))
        except Exception as exc:
            self.errors.append(f"workload crashed: {exc!r}")
        finally:
            self.client.close()


def _running_job(ledger: Path) -> bool:
    for p in ledger.glob("*.start"):
        job, pid, _ = p.name.split(".")
        if not (ledger / f"{job}.{pid}.end").exists() and Path(f"/proc/{pid}").exists():
            return True
    return False


def _wait_phase(w: Workload, phase: str, ledger: Path, timeout: float = 15) -> bool:
    if phase == "any":
        return True
    if phase == "run":
        deadline = time.monotonic() + timeout
        while not _running_job(ledger):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True
    ev = w.phase[phase]
    ev.clear()
    return ev.wait(timeout)


def _delay(rng: random.Random, phase: str) -> float:
    return {
        "upload": rng.uniform(0, 0.03),
        "submit": rng.uniform(0, 0.02),
        "run": rng.uniform(0, 0.5),
        "gc": rng.uniform(0, 0.8),
        "any": rng.uniform(0, 2.0),
    }[phase]


def run_kill9(engine: str, live_db: str, tmp_path: Path, log: FaultLog, *, kills: int) -> None:
    t_start = time.monotonic()
    data = tmp_path / "data"
    data.mkdir()
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    server = FaultServer(
        live_db,
        data,
        BGW_LOCAL_SLOTS="4",
        BGW_LOCAL_MAX_ATTEMPTS="1000",
        BGW_GC_INTERVAL_SECONDS="0.3",
        BGW_FILE_KEEP_SECONDS="3",
        BGW_WORKER_DEAD_SECONDS="3",
    )
    rng = log.rng
    workers = 2 if engine == "postgres" else 0
    server.start()
    for _ in range(workers):
        server.start_worker()
    try:
        with server.client() as c:
            register_ledger_app(c)
        w = Workload(server, ledger, rng.randrange(2**32), log)
        w.start()
        for i in range(kills):
            target = "serve" if not server.workers or rng.random() < 0.6 else "worker"
            phase = rng.choice(PHASES)
            delay = _delay(rng, phase)
            hit = _wait_phase(w, phase, ledger)
            time.sleep(delay)
            if target == "serve":
                server.kill9()
            else:
                victim = rng.choice(server.workers)
                server.kill9_worker(victim)
            log.note(
                f"kill {i + 1}/{kills}: {target} during {phase}"
                f"{'' if hit else ' (phase not seen in time)'} +{delay:.3f}s;"
                f" batches accepted so far {len(w.accepted)}"
            )
            time.sleep(rng.uniform(0, 0.5))
            if target == "serve":
                server.start()
            else:
                server.start_worker()
            assert w.is_alive() or not w.errors, w.errors
        w.stop.set()
        w.join(timeout=120)
        assert not w.is_alive(), "the workload hung"
        log.note(
            f"workload done: {len(w.accepted)} batches accepted, {len(w.retired)} retired, "
            f"{w.retries} retried requests"
        )
        assert not w.errors, f"unexpected answers: {w.errors[:5]}\n{log.tail()}"
        assert w.accepted, "no batch was accepted at all"
        _check(server, w, ledger, log)
        log.note(f"checked in {time.monotonic() - t_start:.1f}s")
    finally:
        server.stop()


def _check(server: FaultServer, w: Workload, ledger: Path, log: FaultLog) -> None:
    with server.client() as c:
        # Every job reaches a terminal state after the last restart (failing if no job
        # finishes for 30 s: that is a stall, not a slow machine).
        deadline = time.monotonic() + 30
        finished = -1
        while True:
            batches = {b["name"]: b for b in paged(c, "/v1/batches")}
            pending = [n for n, b in batches.items() if b["state"] in ("open", "in_progress")]
            if not pending:
                break
            now_finished = sum(b["counts"]["done"] + b["counts"]["error"] for b in batches.values())
            if now_finished > finished:
                finished, deadline = now_finished, time.monotonic() + 30
            assert time.monotonic() < deadline, (
                f"stalled: {[(n, batches[n]['counts']) for n in pending][:5]}\n{log.tail()}"
            )
            time.sleep(0.2)
        # Nothing but what the client asked for, and every acknowledged batch whole.
        assert set(batches) <= w.attempted, set(batches) - w.attempted
        assert set(w.accepted) <= set(batches), f"lost: {set(w.accepted) - set(batches)}"
        jobs: dict[str, dict[str, Any]] = {}
        for name, expected in w.accepted.items():
            b = batches[name]
            assert b["njobs"] == len(expected), (name, b)
            listed = paged(c, f"/v1/batches/{name}/jobs")
            failed = [c.get(f"/v1/jobs/{j['name']}").json() for j in listed if j["state"] != "done"]
            assert not failed, f"{name}: {failed[:3]}\n{log.tail()}"
            assert sorted(j["name"] for j in listed) == sorted(expected), name
            for job, (in_md5, shared_md5) in expected.items():
                info = c.get(f"/v1/jobs/{job}").json()
                got = {i["name"]: i["md5"] for i in info["inputs"]}
                assert got == {"in": in_md5, "shared": shared_md5}, (job, info)
                if name not in w.retired:
                    r = c.get(f"/v1/jobs/{job}/outputs/out")
                    assert r.status_code == 200, (job, r.text)
                    info["out"] = r.text
                    assert r.text.split()[2:] == [in_md5, shared_md5], (job, r.text)
                jobs[job] = info
    problems = ledger_problems(ledger, jobs)
    assert not problems, f"{problems[:10]}\n{log.tail()}"
    problems = store_problems(server.db_url, server.data_dir / "files")
    assert not problems, f"{problems[:10]}\n{log.tail()}"
    reruns = sum(1 for j in jobs.values() if j["attempts"] > 1)
    log.note(f"{len(jobs)} jobs done, {reruns} ran again after a crash; store consistent")


@pytest.mark.timeout(240)
def test_kill9_serve_and_workers_at_random_points(
    test_db: TestDatabase, live_db: str, tmp_path: Path, fault_log: FaultLog
) -> None:
    """The light version: a few kills per engine (serve alone on SQLite), ~15-40 s."""
    run_kill9(test_db.engine, live_db, tmp_path, fault_log, kills=4)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_kill9_serve_and_workers_at_random_points_heavy(
    test_db: TestDatabase, live_db: str, tmp_path: Path, fault_log: FaultLog
) -> None:
    """The heavy version: many kills (``BGW_FAULT_KILLS``, default 40)."""
    kills = int(os.environ.get("BGW_FAULT_KILLS", "40"))
    run_kill9(test_db.engine, live_db, tmp_path, fault_log, kills=kills)
