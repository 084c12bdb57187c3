"""The typer application and what every command shares (options, consoles, the API client)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from bgw import __version__
from bgw.api import Api
from bgw.config import load_config
from bgw.render import stdout_console

HELP = """\
bgw: use a boinc-gateway service from the command line.

Configure it with BGW_URL and BGW_TOKEN, or a TOML file (BGW_CONFIG, else
~/.config/bgw/config.toml) holding `url = "..."` and `token = "..."`.

Exit codes: 0 ok; 1 the API answered with an error; 2 usage (bad arguments, spec or
config); 3 cannot reach the service; 4 under --wait, the batch ended with failed or
aborted jobs.
"""

cli = typer.Typer(
    name="bgw",
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]
IntervalOpt = Annotated[
    float, typer.Option("--interval", min=0.05, help="seconds between polls", show_default=True)
]


def api() -> Api:
    """An API client configured from the environment or the config file."""
    return Api(load_config())


def out() -> Console:
    """Where results go (stdout)."""
    return stdout_console()


def err() -> Console:
    """Where progress and notes go (stderr)."""
    return Console(stderr=True, highlight=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bgw {__version__}")
        raise typer.Exit()


@cli.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="show the version"),
    ] = False,
) -> None:
    """bgw: use a boinc-gateway service from the command line."""
