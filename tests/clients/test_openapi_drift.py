"""The committed openapi/openapi.json is exactly what the app exports, and the document keeps
the promises generated clients rely on (ids, descriptions, problem+json errors, raw bodies)."""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import ROOT, tool, tool_env

COMMITTED = ROOT / "openapi" / "openapi.json"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
PROBLEM = {"$ref": "#/components/schemas/Problem"}


def _pretty(doc: Any) -> list[str]:
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True).splitlines()


@pytest.fixture(scope="module")
def exported() -> dict[str, Any]:
    """The document as ``boinc-gateway openapi`` prints it (no server, no database)."""
    result = subprocess.run(
        [tool("boinc-gateway"), "openapi"],
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def test_committed_document_matches_the_export(exported: dict[str, Any]) -> None:
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    if committed != exported:
        diff = "\n".join(
            difflib.unified_diff(
                _pretty(committed),
                _pretty(exported),
                "openapi/openapi.json (committed)",
                "boinc-gateway openapi (exported)",
                lineterm="",
                n=2,
            )
        )
        pytest.fail(f"openapi/openapi.json is stale: run scripts/export-openapi\n{diff[:20000]}")


def test_committed_document_is_in_the_export_format() -> None:
    text = COMMITTED.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n", (
        "openapi/openapi.json is not formatted as scripts/export-openapi writes it"
    )


def test_export_script_check_mode() -> None:
    result = subprocess.run(
        [str(ROOT / "scripts" / "export-openapi"), "--check"],
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr


def test_every_operation_has_a_stable_id_and_a_description(exported: dict[str, Any]) -> None:
    ids = [op.get("operationId") for _, _, op in operations(exported)]
    assert all(ids), [f"{m} {p}" for m, p, op in operations(exported) if not op.get("operationId")]
    assert len(ids) == len(set(ids)), "operation ids must be unique"
    for op_id in ids:
        assert op_id.isidentifier() and op_id == op_id.lower(), op_id
    undocumented = [f"{m} {p}" for m, p, op in operations(exported) if not op.get("description")]
    assert undocumented == []


def test_every_error_is_declared_as_problem_json(exported: dict[str, Any]) -> None:
    assert {"type", "title", "status", "detail", "code"} <= set(
        exported["components"]["schemas"]["Problem"]["required"]
    )
    wrong = []
    for method, path, op in operations(exported):
        if path.startswith("/v1/"):
            assert "401" in op["responses"], f"{method} {path} does not declare 401"
        for status, response in op["responses"].items():
            if not status.isdigit() or int(status) < 400 or status == "422":
                continue  # FastAPI's own request validation errors stay 422 application/json
            if (method, path, status) == ("GET", "/readyz", "503"):
                continue  # readiness reports its checks, not a problem
            if method == "HEAD":
                continue  # no body at all; see test_head_declares_no_body
            content = response.get("content", {})
            if list(content) != ["application/problem+json"] or (
                content["application/problem+json"].get("schema") != PROBLEM
            ):
                wrong.append(f"{method} {path} {status}: {sorted(content)}")
    assert wrong == []


def test_put_file_takes_raw_bytes(exported: dict[str, Any]) -> None:
    op = exported["paths"]["/v1/files/{md5}"]["put"]
    assert op["requestBody"]["required"] is True
    assert op["requestBody"]["content"] == {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
    }
    assert {"200", "201", "400", "413"} <= set(op["responses"])


def test_downloads_are_binary(exported: dict[str, Any]) -> None:
    for path, media in [
        ("/v1/files/{md5}", "application/octet-stream"),
        ("/v1/jobs/{name}/outputs/{output}", "application/octet-stream"),
        ("/v1/batches/{name}/outputs.zip", "application/zip"),
    ]:
        content = exported["paths"][path]["get"]["responses"]["200"]["content"]
        assert content == {media: {"schema": {"type": "string", "format": "binary"}}}, path


def test_head_declares_no_body(exported: dict[str, Any]) -> None:
    op = exported["paths"]["/v1/files/{md5}"]["head"]
    assert all("content" not in r for r in op["responses"].values() if r), op["responses"]


def test_committed_file_is_what_the_tests_read() -> None:
    assert Path(COMMITTED).is_file(), "run scripts/export-openapi"
