"""clients/python/boinc_gateway_client is exactly what scripts/generate-client makes from
openapi/openapi.json, and clients/python builds as one distribution with the ``bgw`` CLI."""

from __future__ import annotations

import difflib
import filecmp
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.clients.conftest import CLIENT_DIR, ROOT, tool_env

PACKAGE = "boinc_gateway_client"


def _files(base: Path) -> set[str]:
    return {
        str(p.relative_to(base))
        for p in base.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_committed_client_is_regenerated_identically(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(ROOT / "scripts" / "generate-client"), "--into", str(tmp_path)],
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    fresh, committed = tmp_path / PACKAGE, CLIENT_DIR / PACKAGE
    fresh_files, committed_files = _files(fresh), _files(committed)
    problems = [f"only in the fresh client: {f}" for f in sorted(fresh_files - committed_files)]
    problems += [f"not generated any more: {f}" for f in sorted(committed_files - fresh_files)]
    for rel in sorted(fresh_files & committed_files):
        if not filecmp.cmp(fresh / rel, committed / rel, shallow=False):
            diff = difflib.unified_diff(
                (committed / rel).read_text().splitlines(),
                (fresh / rel).read_text().splitlines(),
                f"committed/{rel}",
                f"generated/{rel}",
                lineterm="",
                n=1,
            )
            problems.append("\n".join(list(diff)[:60]))
    if problems:
        pytest.fail(
            "the committed client is stale: run scripts/generate-client\n"
            + "\n".join(problems)[:20000]
        )


def test_client_distribution_builds_with_cli(tmp_path: Path) -> None:
    # build from a copy: setuptools leaves build/ and *.egg-info/ beside the sources
    src = tmp_path / "src"
    shutil.copytree(
        CLIENT_DIR, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        env=tool_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [wheel] = (tmp_path / "dist").glob("boinc_gateway_client-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        scripts = zf.read(entry_points).decode()
    assert f"{PACKAGE}/client.py" in names and f"{PACKAGE}/py.typed" in names
    assert "bgw/main.py" in names and "bgw/py.typed" in names
    assert "bgw = bgw.main:main" in scripts
    assert not any(n.startswith(("tests/", "generator-config")) for n in names)
