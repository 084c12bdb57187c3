"""A big batch costs the same number of RPCs to submit and to poll as a small one."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sqlalchemy import text

from app.db import Database
from tests.backends.boinc.backend_harness import gateway, wait
from tests.conftest import TestDatabase

NJOBS = 2000


def test_2000_jobs_cost_a_constant_number_of_rpcs(test_db: TestDatabase, tmp_path: Path) -> None:
    # No periodic full listing: every poll after the first asks only for changed jobs.
    with gateway(test_db, tmp_path, boinc_full_poll_seconds=3600) as gw:
        md5 = gw.upload(b"one input for every job\n")
        names = gw.submit("big", md5, NJOBS)
        wait(lambda: len(gw.wus()) == NJOBS, "the batch on BOINC", timeout=40)
        first_poll = wait(lambda: len(gw.ops()) >= 6 and len(gw.ops()), "the first poll")
        assert gw.ops()[:6] == [
            "get_templates",
            "create_batch",
            "query_files",
            "upload_files",
            "submit_batch",
            "query_batch2",
        ]
        wait(lambda: gw.ops(first_poll).count("query_batch2") >= 5, "five more polls")
        assert set(gw.ops(first_poll)) == {"query_batch2"}  # one RPC per poll, nothing per job
        db = Database(gw.settings.resolved_database_url)
        try:
            with db.read_session() as s:
                since = s.execute(text("SELECT poll_since FROM boinc_batches")).scalar_one()
            assert since > 0  # polls ask only for jobs changed since the previous one
        finally:
            db.dispose()

        # Three jobs finish: per-job RPCs for those three only.
        start = len(gw.fake.rpc_log)
        finished = [names[0], names[999], names[-1]]
        for n in finished:
            gw.fake.complete_job(gw.wu(n), outputs={"out": b"DONE\n"})
        for n in finished:
            gw.wait_job(n, "done")
        per_job = Counter(op for op in gw.ops(start) if op != "query_batch2")
        assert per_job == {"query_completed_job": 3, "workunit_file": 3}
        assert gw.job(names[1])["state"] == "queued"
        assert gw.ops().count("submit_batch") == 1
