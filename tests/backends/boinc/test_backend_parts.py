"""Batches whose submit_batch would exceed PHP's post_max_size go as several BOINC batches."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from app.backends.boinc import models as m
from app.backends.boinc import submit
from app.backends.boinc.backend import BoincBackend
from app.backends.boinc.context import MappingError, Target
from app.backends.boinc.errors import BoincRequestError
from app.backends.boinc.names import Namer
from app.backends.boinc.rpc import BoincClient
from app.db import Database
from app.models import BoincBatch
from app.services.store import FileStore
from tests.backends.boinc.backend_harness import Gateway, gateway, wait
from tests.conftest import TestDatabase
from tests.fakes.boinc_server import Quirks

LIMIT = 64 << 10  # the smallest BGW_BOINC_SUBMIT_MAX_BYTES allowed
NJOBS = 600  # about three parts of LIMIT bytes


def _plan(specs: list[m.JobSpec]) -> submit.Plan:
    return submit.Plan(
        batch_id=7,
        batch_name="big",
        batch_state="in_progress",
        namer=Namer("bgw", "0123abcd"),
        app=None,  # type: ignore[arg-type]
        authenticator="a" * 32,
        synced_change=0,
        lease_until=None,
        params=None,
        priority=None,
        specs=specs,
    )


def _specs(n: int, args: str = "--n 1") -> list[m.JobSpec]:
    return [
        m.JobSpec(f"bgw-0123abcd-j{k}-job{k}", args, inputs=[m.LocalInput(f"{k:032x}")])
        for k in range(n)
    ]


def test_split_keeps_order_and_every_part_under_the_limit() -> None:
    client = BoincClient("http://127.0.0.1:9/", "a" * 32)
    target = Target("uppercase", 0, ())
    specs = _specs(1000)
    parts = submit.split(client, _plan(specs), target, specs, LIMIT)
    assert len(parts) > 1
    assert [s for part in parts for s in part] == specs
    for part in parts:
        fixed, each = client.submit_batch_sizes("uppercase", part, batch_id=2**63 - 1)
        assert fixed + sum(each) <= LIMIT
    # Greedy: a part ends only where the next job would not fit.
    for part, after in itertools.pairwise(parts):
        fixed, each = client.submit_batch_sizes("uppercase", [*part, after[0]], batch_id=2**63 - 1)
        assert fixed + sum(each) > LIMIT
    assert submit.split(client, _plan(specs[:5]), target, specs[:5], LIMIT) == [specs[:5]]
    client.close()


def test_a_job_that_alone_is_too_large_is_a_clear_error() -> None:
    """Unreachable with the smallest allowed limit (create_work's 4,096-byte job line keeps
    a job far below 64 KiB), but split() never makes a part it knows is refused."""
    client = BoincClient("http://127.0.0.1:9/", "a" * 32)
    target = Target("uppercase", 0, ())
    specs = [*_specs(2), m.JobSpec("huge", "x" * 3000)]
    with pytest.raises(MappingError, match="job huge alone makes a submit_batch of"):
        submit.split(client, _plan(specs), target, specs, 2000)
    client.close()


def test_part_names() -> None:
    namer = Namer("bgw", "0123abcd")
    assert namer.part(12, "big run", 0) == namer.batch(12, "big run") == "bgw-0123abcd-b12-big_run"
    assert namer.part(12, "big run", 3) == "bgw-0123abcd-b12p3-big_run"
    assert namer.parts(12, "x" * 300, 2)[1].startswith("bgw-0123abcd-b12p1-xxx")
    assert all(len(n) <= 191 for n in namer.parts(12, "x" * 300, 12))


def _submit(gw: Gateway, name: str, njobs: int, **extra: Any) -> list[str]:
    return gw.submit(name, gw.upload(f"input of {name}\n".encode()), njobs, **extra)


def _boinc_batches(gw: Gateway) -> list[tuple[int, str, int, int]]:
    """(id, name, state, jobs) of every batch on the fake project."""
    with gw.fake.state.lock:
        wus = list(gw.fake.state.wus.values())
        return [
            (b.id, b.name, b.state, sum(1 for w in wus if w.batch_id == b.id))
            for b in gw.fake.state.batches.values()
        ]


def test_a_large_batch_goes_as_parts_and_runs_whole(test_db: TestDatabase, tmp_path: Path) -> None:
    """With the project's post_max_size at 64 KiB, a 600-job batch goes as three BOINC
    batches (each submit_batch fits), every job once; results, abort, lease and retirement
    reach every part."""
    with gateway(test_db, tmp_path, quirks=Quirks.live(), boinc_submit_max_bytes=LIMIT) as gw:
        gw.fake.post_max_size = LIMIT
        lease = 4_000_000_000.0
        names = _submit(gw, "big", NJOBS, lease_until=lease)
        wus = gw.wait_sent(names)
        batches = _boinc_batches(gw)
        assert len(batches) >= 3, batches
        assert [b[1].split("-")[2] for b in batches] == [
            "b1",
            *(f"b1p{k}" for k in range(1, len(batches))),
        ]
        assert all(b[2] == 1 for b in batches)  # IN_PROGRESS
        assert sum(b[3] for b in batches) == NJOBS == len(set(wus))
        ops = gw.ops()
        assert ops.count("create_batch") == ops.count("submit_batch") == len(batches)
        assert ops.count("upload_files") == 1  # the shared input went once ...
        assert ops.count("query_files") == len(batches)  # ... and is tied to every part
        r = gw.client.get("/v1/batches/big", headers=gw.headers).json()
        assert r["counts"]["queued"] == NJOBS

        # Results come from every part.
        last = wus[-1]
        for wu in (wus[0], last):
            gw.fake.complete_job(wu, outputs={"out": wu.encode()})
        for job in (names[0], names[-1]):
            gw.wait_job(job, "done")
        # A failed job of a later part: its exit status is found in its own part (the live
        # server's query_completed_job cannot report it; query_batch of the part can).
        gw.fake.fail_job(wus[-2], exit_status=-186)
        failed = gw.wait_job(names[-2], "error")
        assert failed["exit_code"] == -186, failed
        assert failed["error"] == "BOINC: too many instances failed (exit status -186)"
        out = gw.client.get(f"/v1/jobs/{names[-1]}/outputs/out", headers=gw.headers)
        assert out.content == last.encode()

        # The lease reaches every part (part 0 by id, the others by name).
        r = gw.client.put("/v1/batches/big/lease", json={"until": lease + 60}, headers=gw.headers)
        assert r.status_code == 200, r.text
        margin = gw.settings.boinc_expire_margin_seconds
        wait(
            lambda: all(gw.fake.batch(b[0]).expire_time == lease + 60 + margin for b in batches),
            "set_expire_time on every part",
        )
        # Abort, then retire: every part.
        r = gw.client.post("/v1/batches/big/abort", headers=gw.headers)
        assert r.status_code == 200, r.text
        wait(lambda: all(gw.fake.batch(b[0]).state == 3 for b in batches), "parts aborted")
        r = gw.client.post("/v1/batches/big/retire", headers=gw.headers)
        assert r.status_code == 200, r.text
        wait(lambda: all(gw.fake.batch(b[0]).state == 4 for b in batches), "parts retired")
        ops = gw.ops()
        for op in ("set_expire_time", "abort_batch", "retire_batch"):
            assert ops.count(op) == len(batches), (op, ops.count(op))
        assert gw.job(names[0])["state"] == "done" and gw.job(names[1])["state"] == "aborted"


def test_a_limit_above_the_projects_is_learned_by_halving(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    """BGW_BOINC_SUBMIT_MAX_BYTES larger than the project's post_max_size: PHP drops the
    request whole (the batch stays an empty INIT one), so the part is sent again in halves,
    reusing that batch, until each request fits. Every job once, nothing left INIT."""
    with gateway(test_db, tmp_path, boinc_submit_max_bytes=1 << 20) as gw:
        gw.fake.post_max_size = LIMIT
        names = _submit(gw, "halved", NJOBS)
        wus = gw.wait_sent(names)
        wait(lambda: gw.batch("halved")["counts"]["queued"] == NJOBS or None, "all sent")
        batches = _boinc_batches(gw)
        assert len(batches) >= 3 and all(b[2] == 1 for b in batches), batches  # IN_PROGRESS
        assert sum(b[3] for b in batches) == NJOBS == len(set(wus))
        ops = gw.ops()
        assert ops.count("create_batch") == len(batches)  # a dropped part's batch is reused
        assert ops.count("submit_batch") == len(batches)
        assert ops.count("") >= 1  # the dropped attempts: PHP read nothing of them


def test_a_job_too_large_for_the_project_is_a_readable_refusal(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    """A post_max_size no single job fits in: the job fails with BOINC's words and the
    INIT batch is retired."""
    with gateway(test_db, tmp_path) as gw:
        md5 = gw.upload(b"toobig\n")
        gw.fake.post_max_size = 1200  # the other RPCs fit, a job with this argument does not
        jobs = [
            {"name": f"toobig-{k}", "args": ["x" * 1500], "inputs": [{"name": "in", "md5": md5}]}
            for k in range(2)
        ]
        body = {"name": "toobig", "app": "uppercase", "jobs": jobs}
        assert gw.client.post("/v1/batches", json=body, headers=gw.headers).status_code == 201
        job = gw.wait_job("toobig-0", "error")
        assert "BOINC refused the batch" in job["error"], job["error"]
        assert "can't parse request" in job["error"], job["error"]
        assert gw.job("toobig-1")["state"] == "error"
        wait(lambda: all(b[2] == 4 for b in _boinc_batches(gw)), "the INIT batch retired")


def _fail_second_call(monkeypatch: pytest.MonkeyPatch, method: str, error: BaseException) -> None:
    """The second call of ``BoincClient.<method>`` raises ``error`` (the others go through)."""
    real = getattr(BoincClient, method)
    calls: list[object] = []

    def second_fails(self: BoincClient, *args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        if len(calls) == 2:
            raise error
        return real(self, *args, **kwargs)

    monkeypatch.setattr(BoincClient, method, second_fails)


class Crash(BaseException):
    """The process dies here (nothing in the backend may catch it)."""


def test_a_crash_between_parts_continues_after_the_submitted_ones(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with gateway(
        test_db, tmp_path, dispatcher=False, boinc_submit_max_bytes=LIMIT, boinc_claim_seconds=0.2
    ) as gw:
        gw.fake.post_max_size = LIMIT
        names = _submit(gw, "crashy", NJOBS)
        db = Database(gw.settings.resolved_database_url)
        store = FileStore(gw.settings.store_dir)
        first = BoincBackend(db, store, gw.settings, "dies-after-part-0")
        _fail_second_call(monkeypatch, "create_batch", Crash())
        with pytest.raises(Crash):
            first.step()
        monkeypatch.undo()
        first.clients.close()
        (part0,) = _boinc_batches(gw)
        assert part0[2] == 1 and 0 < part0[3] < NJOBS

        time.sleep(0.25)  # the dead worker's claim runs out
        second = BoincBackend(db, store, gw.settings, "takes-over")
        try:
            n = len(gw.fake.rpc_log)
            second.step()
            after = [op for op in gw.ops(n) if op != "get_templates"]
            assert after[:3] == ["query_batch", "query_batch", "create_batch"]  # 0 found, 1 not
            batches = _boinc_batches(gw)
            assert len(batches) >= 3 and all(b[2] == 1 for b in batches)
            assert sum(b[3] for b in batches) == NJOBS
            assert len({w.name for w in gw.wus()}) == NJOBS  # no job twice
            with db.read_session() as s:
                row = s.get_one(BoincBatch, 1)
                assert (row.phase, row.parts) == ("sent", len(batches))
            second.step()
            assert gw.job(names[-1])["state"] == "queued"
        finally:
            second.stop()
            db.dispose()


def test_a_refused_later_part_aborts_the_submitted_ones(
    test_db: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BOINC refuses part 1 for good: part 0's jobs must not run untracked, so part 0 is
    aborted, part 1 (INIT) retired, and every job fails with BOINC's message."""
    with gateway(test_db, tmp_path, dispatcher=False, boinc_submit_max_bytes=LIMIT) as gw:
        gw.fake.post_max_size = LIMIT
        names = _submit(gw, "refused", NJOBS)
        db = Database(gw.settings.resolved_database_url)
        store = FileStore(gw.settings.store_dir)
        backend = BoincBackend(db, store, gw.settings, "worker")
        refusal = BoincRequestError("create_work failed: no space left on device")
        _fail_second_call(monkeypatch, "submit_batch", refusal)
        try:
            backend.step()
        finally:
            backend.stop()
            db.dispose()
        batches = _boinc_batches(gw)
        assert [b[2] for b in batches] == [3, 4], batches  # part 0 aborted, part 1 retired
        errors = {gw.job(n)["error"] for n in names}
        assert len(errors) == 1 and "no space left on device" in errors.pop()
