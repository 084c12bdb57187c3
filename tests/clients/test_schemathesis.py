"""Property-based requests generated from the committed OpenAPI document against a live server.

Bounded: a few examples per operation. Checks: no 5xx, status codes, content types and
bodies as the document declares them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.conftest import LiveServer

DOC = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
schema = schemathesis.openapi.from_dict(json.loads(DOC.read_text()))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("schemathesis")
    data = base / "data"
    data.mkdir()
    srv = LiveServer(f"sqlite:///{base / 'g.db'}", data)
    srv.start()
    yield srv
    srv.stop()


@schema.parametrize()
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_conforms(case: schemathesis.Case, server: LiveServer) -> None:
    response = case.call(
        base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=30
    )
    case.validate_response(response, checks=CHECKS)
