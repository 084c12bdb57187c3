"""``boinc-gateway boinc check`` against the fake project."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.backends.boinc import check
from app.db import Database
from tests.backends.boinc.backend_harness import gateway, register_drifted_app
from tests.conftest import TestDatabase
from tests.fakes.boinc_server import ALICE_AUTH, BOB_AUTH, FakeBoincServer


def test_check_reports_accounts_apps_and_the_template_bug(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    # An upload budget over the fake's post_max_size (PHP's default, 8 MiB).
    with gateway(test_db, tmp_path, dispatcher=False, boinc_upload_max_bytes=9 << 20) as gw:
        register_drifted_app(gw)
        for name, key in (("bob", BOB_AUTH), ("carol", "not-a-key")):
            body = {"name": name, "boinc_authenticator": key}
            assert gw.client.post("/v1/users", json=body, headers=gw.headers).status_code == 201
        db = Database(gw.settings.resolved_database_url)
        try:
            report = check.run(gw.settings, db)
            assert not report.ok
            text = "\n".join(report.lines)
            assert f"ok    {gw.fake.url} answers" in text
            # The 8 MiB submit limit gets through, the 9 MiB upload budget would be dropped.
            assert "ok    requests of 8388608 bytes (BGW_BOINC_SUBMIT_MAX_BYTES) get thr" in text
            assert (
                "FAIL  requests of 9437184 bytes (BGW_BOINC_UPLOAD_MAX_BYTES) are dropped "
                "(can't parse request message"
            ) in text
            assert "ok    the project-wide account (BGW_BOINC_AUTHENTICATOR): known" in text
            assert "ok    app uppercase: BOINC app uppercase templates match" in text
            assert "ok    app uppercase: BOINC accepts submissions to uppercase" in text
            assert "FAIL  app mismatch: outputs ['out'] are not in the output template" in text
            assert "FAIL  user bob's own account: no file access" in text
            assert "FAIL  user carol's own account: bad authenticator" in text
            assert ALICE_AUTH not in text and BOB_AUTH not in text

            gw.fake.quirks.template_entity_bug = True
            text = "\n".join(check.run(gw.settings, db).lines)
            assert "FAIL  app uppercase: this BOINC server cannot read input templates" in text

            gw.fake.set_down("refused")
            report = check.run(gw.settings, db)
            assert not report.ok and report.lines[0].startswith(f"FAIL  {gw.fake.url}: ")
            gw.fake.set_down(None)
        finally:
            db.dispose()


def test_check_command_exit_status(tmp_path: Path) -> None:
    # The command's wiring only: one engine is enough (the checks run on both above).
    with FakeBoincServer() as fake:
        env = {
            **os.environ,
            "BGW_DATABASE_URL": f"sqlite:///{tmp_path / 'check.db'}",
            "BGW_DATA_DIR": str(tmp_path / "data"),
            "BGW_BACKEND": "boinc",
            "BGW_BOINC_URL": fake.url,
            "BGW_BOINC_AUTHENTICATOR": ALICE_AUTH,
        }
        cmd = [sys.executable, "-m", "app.cli", "boinc", "check"]
        env["BGW_BOINC_AUTHENTICATOR"] = "wrong-key"
        bad = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert "FAIL  the project-wide account (BGW_BOINC_AUTHENTICATOR): bad authenticator" in (
            bad.stdout
        )
        assert f"ok    {fake.url} answers" in bad.stdout  # the rest of the report is there
        assert "wrong-key" not in bad.stdout + bad.stderr
