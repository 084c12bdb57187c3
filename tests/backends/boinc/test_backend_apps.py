"""Registering an app with the boinc backend asks the project about it first."""

from __future__ import annotations

from pathlib import Path

from tests.backends.boinc.backend_harness import UPPERCASE, gateway
from tests.conftest import TestDatabase


def test_registration_checks_the_boinc_app(test_db: TestDatabase, tmp_path: Path) -> None:
    with gateway(test_db, tmp_path, dispatcher=False) as gw:
        h = gw.headers
        good = {**UPPERCASE, "name": "upper2"}
        r = gw.client.post("/v1/apps", json=good, headers=h)
        assert r.status_code == 201, r.text
        assert gw.ops() == ["get_templates"]

        # No such BOINC app: BOINC's words, nothing registered.
        missing = {**UPPERCASE, "name": "ghost", "boinc": {"app_name": "nosuchapp"}}
        r = gw.client.post("/v1/apps", json=missing, headers=h)
        assert r.status_code == 400, r.text
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert (body["code"], body["app"]) == ("boinc_app_mismatch", "ghost")
        assert "BOINC app nosuchapp: app not found" in body["detail"], body
        assert gw.client.get("/v1/apps/ghost", headers=h).status_code == 404

        # Inputs or outputs that disagree with the templates, by POST and by PUT.
        two_inputs = {**UPPERCASE, "name": "twoin", "inputs": ["in", "extra"]}
        r = gw.client.post("/v1/apps", json=two_inputs, headers=h)
        assert r.status_code == 400 and r.json()["code"] == "boinc_app_mismatch", r.text
        assert "do not match the input template of BOINC app uppercase" in r.json()["detail"]
        bad_out = {**UPPERCASE, "outputs": ["result"]}
        r = gw.client.put("/v1/apps/upper2", json=bad_out, headers=h)
        assert r.status_code == 400, r.text
        assert "outputs ['result'] are not in the output template" in r.json()["detail"]
        assert gw.client.get("/v1/apps/upper2", headers=h).json()["outputs"][0]["name"] == "out"

        # BOINC unreachable: 503, nothing registered; once it is back the same call works.
        gw.fake.set_down("refused")
        r = gw.client.post("/v1/apps", json={**UPPERCASE, "name": "later"}, headers=h)
        assert r.status_code == 503 and r.json()["code"] == "unavailable", r.text
        assert "nothing was registered, retry later" in r.json()["detail"]
        assert gw.client.get("/v1/apps/later", headers=h).status_code == 404
        gw.fake.set_down(None)
        r = gw.client.post("/v1/apps", json={**UPPERCASE, "name": "later"}, headers=h)
        assert r.status_code == 201, r.text


def test_without_a_project_wide_account_apps_register_unchecked(
    test_db: TestDatabase, tmp_path: Path
) -> None:
    """Users' own authenticators may be the only accounts: nobody to ask at registration
    (the submission still checks, as that user)."""
    with gateway(test_db, tmp_path, dispatcher=False, boinc_authenticator=None) as gw:
        missing = {**UPPERCASE, "name": "ghost", "boinc": {"app_name": "nosuchapp"}}
        r = gw.client.post("/v1/apps", json=missing, headers=gw.headers)
        assert r.status_code == 201, r.text
        assert gw.ops() == []
