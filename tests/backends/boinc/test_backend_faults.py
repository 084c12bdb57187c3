"""The boinc backend when things go wrong: crashes, outages, cut replies, refusals."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.backends.boinc import records
from app.backends.boinc.backend import BoincBackend
from app.db import Database
from app.models import Worker
from app.services.store import FileStore
from tests.backends.boinc.backend_harness import (
    Gateway,
    gateway,
    register_drifted_app,
    wait,
)
from tests.backends.boinc.test_backend import SUBMISSION
from tests.conftest import TestDatabase, auth
from tests.fakes import boinc_files, boinc_server
from tests.fakes.boinc_server import BOB_AUTH, Quirks
from tests.fakes.boinc_state import Workunit


class Crash(BaseException):
    """The process dies here (nothing in the backend may catch it)."""


def _crash(*args: Any, **kwargs: Any) -> bool:
    raise Crash


def test_crash_between_submit_and_record_is_repaired_by_lookup(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with gateway(test_db, tmp_path, dispatcher=False, boinc_claim_seconds=0.3) as gw:
        md5 = gw.upload(b"crash test\n")
        names = gw.submit("crash", md5, 3)
        db = Database(gw.settings.resolved_database_url)
        store = FileStore(gw.settings.store_dir)
        first = BoincBackend(db, store, gw.settings, "worker-that-dies")
        monkeypatch.setattr(records, "record_sent", _crash)
        with pytest.raises(Crash):
            first.step()
        first.clients.close()
        monkeypatch.undo()
        assert gw.ops() == ["get_templates", *SUBMISSION]
        assert len(gw.wus()) == 3

        second = BoincBackend(db, store, gw.settings, "worker-that-takes-over")
        second.step()  # the dead worker's claim has not run out yet: nothing is sent
        assert "create_batch" not in gw.ops(5) and "query_batch" not in gw.ops(5)
        time.sleep(0.35)
        second.step()
        after = gw.ops(5)
        assert "query_batch" in after  # looked up by its name ...
        assert "create_batch" not in after and "submit_batch" not in after  # ... not resent
        assert len(gw.fake.state.batches) == 1 and len(gw.wus()) == 3

        for k, wu in enumerate(gw.wait_sent(names)):
            gw.fake.complete_job(wu, outputs={"out": f"OUT {k}\n".encode()})
        deadline = time.monotonic() + 20
        while any(gw.job(n)["state"] != "done" for n in names):
            assert time.monotonic() < deadline, [gw.job(n) for n in names]
            second.step()
            time.sleep(0.06)
        r = gw.client.get(f"/v1/jobs/{names[2]}/outputs/out", headers=gw.headers)
        assert r.content == b"OUT 2\n"
        second.stop()
        db.dispose()


def _heartbeat(db: Database, worker: str, last_seen: float) -> None:
    with db.session() as session:
        session.merge(Worker(id=worker, backend="boinc", started_at=last_seen, last_seen=last_seen))


def test_a_killed_workers_claim_is_taken_over_when_its_heartbeat_stops(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed mid-send keeps its claim for BGW_BOINC_CLAIM_SECONDS (10 min), but
    once its heartbeat is older than BGW_WORKER_DEAD_SECONDS another worker carries on at
    once, and takes over the poller lease too. A worker that still beats keeps both."""
    with gateway(
        test_db, tmp_path, dispatcher=False, boinc_claim_seconds=600, worker_dead_seconds=30
    ) as gw:
        names = gw.submit("killed", gw.upload(b"killed mid-send\n"), 2)
        db = Database(gw.settings.resolved_database_url)
        store = FileStore(gw.settings.store_dir)
        _heartbeat(db, "killed-worker", time.time())
        first = BoincBackend(db, store, gw.settings, "killed-worker")
        monkeypatch.setattr(records, "renew_claim", _crash)  # right after create_batch
        with pytest.raises(Crash):
            first.step()
        first.clients.close()
        monkeypatch.undo()
        with db.session() as session:
            assert records.take_lease(
                session, key=records.POLLER_KEY, worker="killed-worker", until=time.time() + 600
            )
        second = BoincBackend(db, store, gw.settings, "second")
        try:
            second.step()  # the first still beats: its claim holds
            assert gw.ops().count("create_batch") == 1 and "submit_batch" not in gw.ops()
            assert not second._keep_lease()

            _heartbeat(db, "killed-worker", time.time() - 31)  # its last beat, 31 s ago
            second.step()
            assert gw.ops().count("create_batch") == 1  # the INIT batch was found and used
            assert gw.ops().count("submit_batch") == 1
            assert second._keep_lease()
            for wu in gw.wait_sent(names):
                gw.fake.complete_job(wu, outputs={"out": b"OUT\n"})
            deadline = time.monotonic() + 20
            while any(gw.job(n)["state"] != "done" for n in names):
                assert time.monotonic() < deadline, [gw.job(n) for n in names]
                second.step()
                time.sleep(0.06)
        finally:
            second.stop()
            db.dispose()
        assert len(gw.fake.state.batches) == 1 and len(gw.wus()) == 2


def _metric(gw: Gateway, name: str) -> float:
    text = gw.client.get("/metrics").text
    lines = [ln for ln in text.splitlines() if ln.startswith(name)]
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in lines)


def test_boinc_down_then_up_loses_and_duplicates_nothing(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    with gateway(test_db, tmp_path) as gw:
        md5 = gw.upload(b"patience\n")
        gw.fake.set_down("refused")
        names = gw.submit("down", md5, 3)
        wait(lambda: gw.client.get("/readyz").status_code == 503, "not ready")
        backend = gw.client.get("/readyz").json()["checks"]["backend"]
        assert backend.startswith("BOINC unreachable"), backend
        time.sleep(0.5)
        for n in names:
            job = gw.job(n)
            assert (job["state"], job["error"]) == ("queued", None)
        assert _metric(gw, 'bgw_backend_errors_total{backend="boinc"}') >= 1

        gw.fake.set_down(None)
        wus = gw.wait_sent(names)
        wait(lambda: gw.client.get("/readyz").status_code == 200, "ready again")

        # Down again while the volunteers finish: the results wait for the project to return.
        gw.fake.set_down("503")
        for k, wu in enumerate(wus):
            gw.fake.complete_job(wu, outputs={"out": f"R{k}\n".encode()})
        time.sleep(0.5)
        assert {gw.job(n)["state"] for n in names} == {"queued"}
        gw.fake.set_down(None)
        for k, n in enumerate(names):
            assert gw.wait_job(n, "done")["error"] is None
            r = gw.client.get(f"/v1/jobs/{n}/outputs/out", headers=gw.headers)
            assert r.content == f"R{k}\n".encode()
        ops = gw.ops()
        assert ops.count("create_batch") == 1 and ops.count("submit_batch") == 1
        assert len(gw.fake.state.batches) == 1 and len(gw.wus()) == 3


CUTS = ["create_batch", "query_files", "upload_files", "submit_batch"]


def test_a_reply_cut_short_is_continued_not_repeated(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server did the work but the reply was lost (a PHP fatal error, a dropped line)."""
    with gateway(test_db, tmp_path, quirks=Quirks.live()) as gw:
        for k, cut in enumerate(CUTS, start=1):
            handlers = boinc_server.SUBMIT_OPS
            in_files = cut not in handlers
            original = getattr(boinc_files, cut) if in_files else handlers[cut]
            calls: list[int] = []

            def cut_once(*args: Any, original: Any = original, calls: list[int] = calls) -> None:
                original(*args)
                if not calls:
                    gw.fake.truncate_next = 1  # this reply, after the work was done
                calls.append(1)

            if in_files:
                monkeypatch.setattr(boinc_files, cut, cut_once)
            else:
                monkeypatch.setitem(handlers, cut, cut_once)
            start = len(gw.fake.rpc_log)
            names = gw.submit(f"cut{k}", gw.upload(f"cut {cut}\n".encode()), 3)
            wus = gw.wait_sent(names)
            monkeypatch.undo()
            assert gw.fake.batch(k).state == 1, cut  # in progress on BOINC
            for wu in wus:
                gw.fake.complete_job(wu, outputs={"out": b"X\n"})
            for n in names:
                assert gw.wait_job(n, "done", "error")["state"] == "done", cut
            ops = gw.ops(start)
            assert calls and gw.fake.truncate_next == 0, cut  # the cut reply did happen
            if cut in ("create_batch", "submit_batch"):
                assert "query_batch" in ops, cut  # the next attempt looked the batch up
            assert ops.count("create_batch") == 1 and ops.count("submit_batch") == 1, cut
            assert len(gw.fake.state.batches) == k and len(gw.wus()) == 3 * k, cut


def test_refusals_become_job_errors_people_understand(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    with gateway(test_db, tmp_path) as gw:
        md5 = gw.upload(b"refused\n")

        # A gateway app whose outputs left the BOINC output template: refused up front.
        register_drifted_app(gw)
        body = {
            "name": "mm",
            "app": "mismatch",
            "jobs": [{"name": "mm-0", "inputs": [{"name": "in", "md5": md5}]}],
        }
        assert gw.client.post("/v1/batches", json=body, headers=gw.headers).status_code == 201
        err = gw.wait_job("mm-0", "error")["error"]
        assert "outputs ['out'] are not in the output template" in err, err
        assert "create_batch" not in gw.ops()

        # A user whose own BOINC account may not submit.
        r = gw.client.post(
            "/v1/users", json={"name": "bob", "boinc_authenticator": BOB_AUTH}, headers=gw.headers
        )
        bob = auth(r.json()["token"])
        gw.upload(b"refused\n", headers=bob)
        gw.submit("bobs", md5, 1, headers=bob)
        r = gw.client.get("/v1/jobs/bobs-0", headers=bob)
        job = wait(
            lambda: (
                (j := gw.client.get("/v1/jobs/bobs-0", headers=bob).json())["state"] == "error"
                and j
            ),
            "bob's job fails",
        )
        assert job["error"] == "BOINC refused the batch: no submit access"

        # create_work fails (the live server's template bug): the INIT batch is let go.
        gw.fake.quirks.template_entity_bug = True
        gw.submit("tb", md5, 2)
        err = gw.wait_job("tb-0", "error")["error"]
        assert err.startswith("BOINC refused the batch: couldn't parse input template file")
        assert gw.wait_job("tb-1", "error")["error"] == err
        wait(lambda: any(b.state == 4 for b in gw.fake.state.batches.values()), "retired")
        gw.fake.quirks.template_entity_bug = False

        # An argument BOINC cannot carry fails its job only; a missing output fails at fetch.
        jobs = [
            {"name": "mix-0", "args": ["two words"], "inputs": [{"name": "in", "md5": md5}]},
            {"name": "mix-1", "inputs": [{"name": "in", "md5": md5}]},
            {"name": "mix-2", "env": {"A": "1"}, "inputs": [{"name": "in", "md5": md5}]},
        ]
        body = {"name": "mix", "app": "uppercase", "jobs": jobs}
        assert gw.client.post("/v1/batches", json=body, headers=gw.headers).status_code == 201
        assert "cannot be sent to BOINC" in gw.wait_job("mix-0", "error")["error"]
        env_error = gw.wait_job("mix-2", "error")["error"]
        assert env_error == "cannot be sent to BOINC: BOINC jobs take no environment"
        gw.fake.complete_job(gw.wu("mix-1"), outputs={})  # the output file never arrived
        err = gw.wait_job("mix-1", "error")["error"]
        assert err.startswith("required output(s) missing on the BOINC server: out (")
        assert BOB_AUTH not in str(gw.client.get("/v1/jobs/bobs-0", headers=bob).json())


def test_two_workers_send_each_batch_once(test_db: TestDatabase, tmp_path: Path) -> None:
    with gateway(test_db, tmp_path, dispatcher=False) as gw:
        md5 = gw.upload(b"two workers\n")
        names = [n for k in range(12) for n in gw.submit(f"two{k}", md5, 2)]
        gw.fake.delay = 0.005  # RPCs take a moment: the workers' sends overlap
        db = Database(gw.settings.resolved_database_url)
        store = FileStore(gw.settings.store_dir)
        workers = [BoincBackend(db, store, gw.settings, f"worker-{k}") for k in range(2)]
        stop = threading.Event()

        def run(backend: BoincBackend) -> None:
            while not stop.is_set():
                backend.step()

        threads = [threading.Thread(target=run, args=(w,)) for w in workers]
        for t in threads:
            t.start()
        try:
            wait(lambda: len(gw.wus()) == len(names), "every job on BOINC")
            time.sleep(0.3)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=20)
            for w in workers:
                w.stop()
            db.dispose()
        ops = gw.ops()
        assert ops.count("create_batch") == 12 and ops.count("submit_batch") == 12
        assert len(gw.fake.state.batches) == 12 and len(gw.wus()) == len(names)


def test_a_claimed_batch_is_not_claimed_again(test_db: TestDatabase, tmp_path: Path) -> None:
    with gateway(test_db, tmp_path, dispatcher=False) as gw:
        gw.submit("claim", gw.upload(b"claim\n"), 1)
        db = Database(gw.settings.resolved_database_url)
        try:
            with db.session() as s:
                (batch_id,) = records.sendable(s, limit=10)
                soon = time.time() + 0.3
                assert records.claim_send(s, batch_id=batch_id, worker="a", until=soon) == 1
            with db.session() as s:
                assert records.claim_send(s, batch_id=batch_id, worker="b", until=soon) is None
                assert records.sendable(s, limit=10) == []
                assert not records.renew_claim(s, batch_id=batch_id, worker="b", until=soon)
            time.sleep(0.35)  # a's claim runs out (a died): b takes over, as attempt 2
            with db.session() as s:
                assert records.claim_send(s, batch_id=batch_id, worker="b", until=soon + 9) == 2
                assert not records.renew_claim(s, batch_id=batch_id, worker="a", until=soon)
        finally:
            db.dispose()


def test_a_submit_that_times_out_but_succeeds_is_found(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with gateway(test_db, tmp_path, boinc_timeout_seconds=0.5) as gw:
        original = boinc_server.SUBMIT_OPS["submit_batch"]
        calls: list[int] = []

        def slow_submit(*args: Any) -> None:
            if not calls:
                time.sleep(1.0)  # the client gives up; the server carries on
            calls.append(1)
            original(*args)

        monkeypatch.setitem(boinc_server.SUBMIT_OPS, "submit_batch", slow_submit)
        names = gw.submit("slow", gw.upload(b"slow\n"), 2)
        for wu in gw.wait_sent(names):
            gw.fake.complete_job(wu, outputs={"out": b"S\n"})
        for n in names:
            gw.wait_job(n, "done")
        assert calls == [1] and "query_batch" in gw.ops()
        assert len(gw.fake.state.batches) == 1 and len(gw.wus()) == 2


def test_a_half_created_batch_is_waited_for_then_given_up(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with gateway(
        test_db,
        tmp_path,
        dispatcher=False,
        boinc_claim_seconds=0.2,
        boinc_max_attempts=3,
        boinc_retry_seconds=0.01,
        boinc_retry_max_seconds=0.05,
    ) as gw:
        names = gw.submit("half", gw.upload(b"half\n"), 2)
        db = Database(gw.settings.resolved_database_url)
        store = FileStore(gw.settings.store_dir)
        first = BoincBackend(db, store, gw.settings, "dies-after-create")
        monkeypatch.setattr(records, "renew_claim", _crash)  # right after create_batch
        with pytest.raises(Crash):
            first.step()
        monkeypatch.undo()
        # create_work got one job in, then stopped (as when it fails midway on a real server).
        with gw.fake.state.lock:
            wid = gw.fake.state.next_id("workunit")
            gw.fake.state.wus[wid] = Workunit(wid, "stray", 1, 1, int(time.time()))
        second = BoincBackend(db, store, gw.settings, "second")
        try:
            deadline = time.monotonic() + 20
            while gw.job(names[0])["state"] == "queued":
                assert time.monotonic() < deadline
                second.step()
                time.sleep(0.05)
        finally:
            second.stop()
            first.clients.close()
            db.dispose()
        err = gw.job(names[0])["error"]
        assert "is still INIT with 1 jobs" in err, err
        assert gw.job(names[1])["error"] == err
        assert gw.ops().count("create_batch") == 1 and "submit_batch" not in gw.ops()
