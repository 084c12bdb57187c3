"""Finished jobs are fetched several at a time (their round trips overlap), each once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends.boinc.backend_harness import gateway
from tests.conftest import TestDatabase

NJOBS = 24


@pytest.mark.parametrize("threads", [1, 4])
def test_finished_jobs_are_fetched_in_parallel_each_once(
    test_db: TestDatabase, tmp_path: Path, threads: int
) -> None:
    with gateway(test_db, tmp_path, boinc_fetch_threads=threads) as gw:
        names = gw.submit("many", gw.upload(b"many\n"), NJOBS)
        wus = gw.wait_sent(names)
        # Every request now takes 50 ms, as over a real network: fetches that overlap show
        # as requests in flight at once at the project.
        gw.fake.delay = 0.05
        gw.fake.max_in_flight = 0
        n = len(gw.fake.rpc_log)
        for k, wu in enumerate(wus):
            gw.fake.complete_job(wu, outputs={"out": f"OUT {k}\n".encode()})
        for k, name in enumerate(names):
            job = gw.wait_job(name, "done", timeout=60)
            assert job["exit_code"] == 0
            r = gw.client.get(f"/v1/jobs/{name}/outputs/out", headers=gw.headers)
            assert r.content == f"OUT {k}\n".encode()
        ops = gw.ops(n)
        assert ops.count("query_completed_job") == NJOBS  # each job once
        assert ops.count("workunit_file") == NJOBS
        if threads == 1:
            assert gw.fake.max_in_flight == 1
        else:
            assert 2 <= gw.fake.max_in_flight <= threads
