"""Commands that read or change one thing: me, apps, upload, status, jobs, abort, retire, lease."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, RenderableType
from rich.live import Live

from bgw import render
from bgw.api import seg
from bgw.cli import IntervalOpt, JsonOpt, api, cli, err, out
from bgw.errors import UsageError
from bgw.transfer import hash_files, upload


@cli.command()
def me(json: JsonOpt = False) -> None:
    """Who you are, your quotas and usage."""
    with api() as a:
        data = a.get("/v1/me")
    if json:
        render.print_json(out(), data)
    else:
        render.show(out(), render.me_table(data))


@cli.command()
def apps(json: JsonOpt = False) -> None:
    """The apps you may use, with their input and output names."""
    with api() as a:
        data = a.get("/v1/apps")
    if json:
        render.print_json(out(), data)
    else:
        render.show(out(), render.apps_table(data))


@cli.command("upload")
def upload_cmd(
    files: Annotated[list[Path], typer.Argument(help="files to upload", show_default=False)],
    batch: Annotated[
        str | None, typer.Option(help="associate the files with this open batch")
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Upload files the service does not have yet (MD5 computed locally, streamed)."""
    e = err()
    local = hash_files(files, e)
    with api() as a:
        sent = upload(a, local, e, batch=batch)
    rows = [
        {"path": str(f.path), "md5": f.md5, "size": f.size, "uploaded": f.md5 in sent}
        for f in local
    ]
    if json:
        render.print_json(out(), rows)
    else:
        o = out()
        for r in rows:
            what = "uploaded" if r["uploaded"] else "present"
            o.print(f"{r['md5']}  {what:8}  {r['path']}", markup=False)
    e.print(f"{len(sent)} uploaded, {len({f.md5 for f in local}) - len(sent)} already present")


def _watch(
    fetch: Callable[[], Any],
    show: Callable[[Any], RenderableType],
    *,
    interval: float,
    json: bool,
    stop: Callable[[Any], bool],
) -> None:
    """Refresh until ``stop(data)`` or Ctrl-C: live on a terminal, else one print per change."""
    o = out()
    try:
        if o.is_terminal and not json:
            data = fetch()
            with Live(show(data), console=o, auto_refresh=False) as live:
                while not stop(data):
                    time.sleep(interval)
                    data = fetch()
                    live.update(show(data), refresh=True)
            return
        last = None
        while True:
            data = fetch()
            if data != last:
                if json:
                    render.print_json(o, data, compact=True)
                else:
                    render.show(o, show(data))
                last = data
            if stop(data):
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        return


@cli.command()
def status(
    batch: Annotated[str | None, typer.Argument(help="one batch (default: all)")] = None,
    state: Annotated[str | None, typer.Option(help="only batches in this state")] = None,
    app: Annotated[str | None, typer.Option(help="only batches of this app")] = None,
    watch: Annotated[bool, typer.Option("--watch", help="refresh until Ctrl-C")] = False,
    interval: IntervalOpt = 2.0,
    json: JsonOpt = False,
) -> None:
    """Your batches as a table, or one batch's summary."""
    with api() as a:

        def fetch() -> Any:
            if batch is not None:
                return a.get(f"/v1/batches/{seg(batch)}")
            return list(a.pages("/v1/batches", state=state, app=app))

        show = render.batch_table if batch is not None else render.batches_table
        if watch:
            _watch(
                fetch,
                show,
                interval=interval,
                json=json,
                stop=lambda d: batch is not None and d["state"] in render.BATCH_TERMINAL,
            )
            return
        data = fetch()
    if json:
        render.print_json(out(), data)
    else:
        render.show(out(), show(data))


@cli.command()
def jobs(
    batch: Annotated[str, typer.Argument(help="the batch")],
    state: Annotated[str | None, typer.Option(help="only jobs in this state")] = None,
    json: JsonOpt = False,
) -> None:
    """A batch's jobs with their state, exit code and error."""
    with api() as a:
        rows = list(a.pages(f"/v1/batches/{seg(batch)}/jobs", state=state))
    if json:
        render.print_json(out(), rows)
    else:
        render.show(out(), render.jobs_table(rows))


def _split(values: list[str]) -> list[str]:
    return [n for v in values for n in v.split(",") if n]


def _summary(console: Console, data: dict[str, Any], json: bool) -> None:
    if json:
        render.print_json(console, data)
    else:
        render.show(console, render.batch_table(data))


@cli.command()
def abort(
    batch: Annotated[str, typer.Argument(help="the batch")],
    jobs: Annotated[
        list[str] | None,
        typer.Option("--jobs", help="abort only these jobs (repeat, or comma-separated)"),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Abort a batch (its unfinished jobs), or only some of its jobs."""
    with api() as a:
        if not jobs:
            _summary(out(), a.post(f"/v1/batches/{seg(batch)}/abort"), json)
            return
        names = _split(jobs)
        for name in names:
            owner = a.get(f"/v1/jobs/{seg(name)}")["batch"]
            if owner != batch:
                raise UsageError(f"job {name} belongs to batch {owner}, not {batch}")
        result = a.post("/v1/jobs/abort", {"jobs": names})
    if json:
        render.print_json(out(), result)
    else:
        out().print(f"aborted {result['aborted']} of {len(names)} job(s)")


@cli.command()
def retire(batch: Annotated[str, typer.Argument(help="the batch")], json: JsonOpt = False) -> None:
    """Retire a batch: you are done with it, its files are no longer kept for it."""
    with api() as a:
        _summary(out(), a.post(f"/v1/batches/{seg(batch)}/retire"), json)


UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_until(value: str, now: float | None = None) -> float:
    """Unix seconds, ``+N[smhd]`` from now, or an ISO 8601 time (local if no zone)."""
    now = time.time() if now is None else now
    text = value.strip()
    try:
        if text.startswith("+"):
            unit = text[-1].lower() if text[-1].isalpha() else "s"
            amount = float(text[1:-1] if text[-1].isalpha() else text[1:])
            if unit not in UNITS:
                raise ValueError(text)
            return now + amount * UNITS[unit]
        try:
            return float(text)
        except ValueError:
            return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise UsageError(
            f"cannot read time {value!r}: give Unix seconds, +30m / +2h / +7d, or an ISO 8601 time"
        ) from None


@cli.command()
def lease(
    batch: Annotated[str, typer.Argument(help="the batch")],
    until: Annotated[str, typer.Argument(help="Unix seconds, +2h / +7d, or ISO 8601 time")],
    json: JsonOpt = False,
) -> None:
    """Set a batch's lease: when it passes, the batch is aborted and retired."""
    t = parse_until(until)
    with api() as a:
        _summary(out(), a.put(f"/v1/batches/{seg(batch)}/lease", {"until": t}), json)
