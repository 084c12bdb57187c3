"""Entry point of ``bgw``: runs the typer app and turns errors into one line and an exit code."""

from __future__ import annotations

import sys

from bgw import commands, follow  # noqa: F401  (they register their commands on ``cli``)
from bgw.cli import cli
from bgw.errors import BgwError


def main() -> None:
    """Console-script entry point."""
    try:
        cli(prog_name="bgw")
    except BgwError as exc:
        print(f"bgw: error: {exc.message}", file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        print("bgw: interrupted", file=sys.stderr)
        sys.exit(130)
