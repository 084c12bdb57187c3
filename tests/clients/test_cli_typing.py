"""``bgw`` (hand-written, inside clients/python) stays ``mypy --strict`` clean; CI's mypy
line covers app/ and clients/gahp/, and the generated package is excluded on purpose."""

from __future__ import annotations

import subprocess
import sys

from tests.clients.conftest import CLIENT_DIR, ROOT, tool_env


def test_bgw_is_mypy_strict_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "-p", "bgw"],
        cwd=ROOT,
        env=tool_env(MYPYPATH=str(CLIENT_DIR)),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
