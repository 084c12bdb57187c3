"""Commands that move a batch along: submit (upload, create, ``--wait``) and fetch."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bgw import render
from bgw.api import Api, seg
from bgw.cli import IntervalOpt, JsonOpt, api, cli, err, out
from bgw.errors import JobsFailed, UsageError
from bgw.progress import Transfers, human
from bgw.spec import load_spec
from bgw.transfer import complete, download, hash_files, output_url, safe_component, upload

JOB_CHUNK = 1000


def _create(a: Api, body: dict[str, Any]) -> dict[str, Any]:
    """Create (and by default submit) the batch; big ones go in parts, then submit."""
    jobs = body.get("jobs") or []
    if len(jobs) <= JOB_CHUNK:
        result: dict[str, Any] = a.post("/v1/batches", body)
        return result
    submit = body.get("submit", True)
    head = {k: v for k, v in body.items() if k != "jobs"} | {"submit": False}
    result = a.post("/v1/batches", head)
    path = f"/v1/batches/{seg(body['name'])}"
    if result["state"] == "open":
        for i in range(0, len(jobs), JOB_CHUNK):
            a.post(f"{path}/jobs", {"jobs": jobs[i : i + JOB_CHUNK]})
        result = a.post(f"{path}/submit") if submit else a.get(path)
    return result


def _line(b: dict[str, Any]) -> str:
    counts = " ".join(f"{k}={v}" for k, v in b["counts"].items() if v)
    done = f"{b['fraction_done'] * 100:.0f}% of {b['njobs']}"
    return f"batch {b['name']}: {b['state']} ({done}) {counts}".rstrip()


def wait_batch(a: Api, name: str, console: Console, *, interval: float) -> dict[str, Any]:
    """Poll the batch until it is complete, aborted or retired (a bar on a terminal)."""
    path = f"/v1/batches/{seg(name)}"
    b: dict[str, Any] = a.get(path)
    if b["state"] == "open":
        raise UsageError(f"batch {name} is open (not submitted): nothing to wait for")
    if console.is_terminal:
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console) as bar:
            task = bar.add_task(name, total=b["njobs"])
            while True:
                finished = sum(b["counts"].get(s, 0) for s in ("done", "error", "aborted"))
                bar.update(task, completed=finished, description=f"{name} {b['state']}")
                if b["state"] in render.BATCH_TERMINAL:
                    return b
                time.sleep(interval)
                b = a.get(path)
    last = ""
    while True:
        line = _line(b)
        if line != last:
            console.print(line, markup=False)
            last = line
        if b["state"] in render.BATCH_TERMINAL:
            return b
        time.sleep(interval)
        b = a.get(path)


def _failed(b: dict[str, Any]) -> str | None:
    bad = {s: b["counts"].get(s, 0) for s in ("error", "aborted") if b["counts"].get(s)}
    if not bad and b["state"] == "complete":
        return None
    what = ", ".join(f"{n} {s}" for s, n in bad.items()) or "no job finished"
    return f"batch {b['name']} ended {b['state']}: {what} of {b['njobs']} job(s)"


@cli.command()
def submit(
    spec: Annotated[Path, typer.Argument(help="batch description (JSON or YAML)")],
    name: Annotated[str | None, typer.Option(help="batch name (overrides the spec's)")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="follow the batch to its end")] = False,
    interval: IntervalOpt = 2.0,
    json: JsonOpt = False,
) -> None:
    """Upload the spec's local input files that are missing, then create the batch.

    SPEC is the POST /v1/batches body (name, app, jobs, params, ...) where a job input may be
    {"name": "in", "path": "data/a.txt"}: a local file, relative to the spec's directory.
    Submitting the same spec again is safe (the service answers with the existing batch).
    """
    parsed = load_spec(spec, name=name)
    e = err()
    local = hash_files(parsed.paths, e) if parsed.paths else []
    with api() as a:
        if local:
            upload(a, local, e)
        b = _create(a, parsed.resolved({f.path: f.md5 for f in local}))
        if not wait:
            e.print(_line(b), markup=False)
        else:
            b = wait_batch(a, b["name"], e, interval=interval)
    if json:
        render.print_json(out(), b)
    else:
        render.show(out(), render.batch_table(b))
    problem = _failed(b) if wait else None
    if problem:
        raise JobsFailed(problem)


def _plan(a: Api, batch: str, dest: Path) -> tuple[list[dict[str, Any]], int]:
    """Every output of every done job, with its local target; and the count of unfinished jobs."""
    b = a.get(f"/v1/batches/{seg(batch)}")
    items: list[dict[str, Any]] = []
    for row in a.pages(f"/v1/batches/{seg(batch)}/jobs", state="done"):
        job = a.get(f"/v1/jobs/{seg(row['name'])}")
        jdir = dest / safe_component(job["name"], "job")
        for o in job["outputs"]:
            if o.get("md5") is None:
                continue  # an optional output the job did not write
            target = jdir / safe_component(o["name"], "output")
            items.append(
                {
                    "job": job["name"],
                    "output": o["name"],
                    "path": target,
                    "md5": o["md5"],
                    "size": o["size"] or 0,
                }
            )
    unfinished = b["counts"].get("queued", 0) + b["counts"].get("in_progress", 0)
    return items, unfinished


@cli.command()
def fetch(
    batch: Annotated[str, typer.Argument(help="the batch")],
    dest: Annotated[Path, typer.Argument(help="directory: outputs go to DIR/<job>/<output>")],
    json: JsonOpt = False,
) -> None:
    """Download every output of the batch's done jobs; files already complete are skipped."""
    e = err()
    with api() as a:
        items, unfinished = _plan(a, batch, dest)
        todo = []
        for item in items:
            item["fetched"] = not complete(item["path"], item["md5"], item["size"])
            if item["fetched"]:
                todo.append(item)
        total = sum(i["size"] for i in todo)
        with Transfers(e, verb="fetching", total=total, files=len(todo)) as bars:
            for i in todo:
                url = output_url(i["job"], i["output"])
                download(a, url, i["path"], i["md5"], i["size"], bars)
    rows = [{**i, "path": str(i["path"])} for i in items]
    if json:
        render.print_json(out(), rows)
    e.print(
        f"{len(todo)} fetched ({human(total)}), {len(items) - len(todo)} already complete"
        + (f"; {unfinished} job(s) not finished yet" if unfinished else ""),
        markup=False,
    )
