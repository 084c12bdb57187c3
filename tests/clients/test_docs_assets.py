"""Swagger UI (/docs) and ReDoc (/redoc) load every asset from this service, so they work
offline; the assets in app/static are the ones scripts/update-docs-assets recorded."""

from __future__ import annotations

import hashlib
import re

import httpx
import pytest

from tests.clients.conftest import ROOT, Server

STATIC = ROOT / "app" / "static"


@pytest.mark.parametrize(
    ("page", "assets"),
    [
        (
            "/docs",
            {"/static/swagger-ui-bundle.js", "/static/swagger-ui.css", "/static/favicon.png"},
        ),
        ("/redoc", {"/static/redoc.standalone.js", "/static/favicon.png"}),
    ],
)
def test_docs_pages_use_local_assets(server: Server, page: str, assets: set[str]) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        html = c.get(page)
        assert html.status_code == 200
        refs = set(re.findall(r'(?:src|href)="([^"]+)"', html.text))
        assert not [r for r in refs if "//" in r], f"{page} loads from elsewhere: {refs}"
        assert assets <= refs
        assert "fonts.googleapis" not in html.text
        for ref in assets:
            r = c.get(ref)
            assert r.status_code == 200 and len(r.content) > 500, ref
        spec = c.get("/openapi.json")
        assert spec.status_code == 200 and spec.json()["info"]["title"] == "boinc-gateway"


def test_assets_match_their_recorded_versions() -> None:
    lines = (STATIC / "VERSIONS").read_text().splitlines()
    recorded = dict(reversed(ln.split()) for ln in lines if re.fullmatch(r"[0-9a-f]{64}  \S+", ln))
    assert set(recorded) == {
        "favicon.png",
        "redoc.standalone.js",
        "swagger-ui-bundle.js",
        "swagger-ui.css",
    }
    for name, digest in recorded.items():
        assert hashlib.sha256((STATIC / name).read_bytes()).hexdigest() == digest, name
