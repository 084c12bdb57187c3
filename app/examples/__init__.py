"""Example apps shipped with the project, registered on first start with the local backend."""

from __future__ import annotations

import sys
from pathlib import Path

from app.schemas import AppIn

HERE = Path(__file__).resolve().parent


def example_apps() -> list[AppIn]:
    """The example apps, with commands that run the scripts beside this module."""
    py = sys.executable
    return [
        AppIn(
            name="uppercase",
            description="Copies input 'in' to output 'out' in upper case.",
            inputs=["in"],
            outputs=["out"],
            local={"command": [py, str(HERE / "uppercase.py")], "wall_seconds": 600},
            boinc={"app_name": "uppercase"},
        ),
        AppIn(
            name="concat",
            description=(
                "Writes 'a', then the --sep text, then 'b' to 'out', --repeat N times; "
                "counts the lines it wrote into the optional output 'count'."
            ),
            inputs=["a", "b"],
            outputs=["out", {"name": "count", "required": False}],
            local={"command": [py, str(HERE / "concat.py")], "wall_seconds": 600},
        ),
        AppIn(
            name="exitcode",
            description=(
                "Copies 'in' to 'out', optionally sleeping (--sleep S), then exits with "
                "--exit N; --no-output skips writing 'out'. Shows error and abort."
            ),
            inputs=["in"],
            outputs=["out"],
            local={"command": [py, str(HERE / "exitcode.py")], "wall_seconds": 3600},
        ),
    ]
