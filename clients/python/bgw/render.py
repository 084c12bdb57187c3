"""What bgw prints: rich tables for people, JSON (``--json``) for scripts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table

from bgw.progress import human

JOB_STATES = ("queued", "in_progress", "done", "error", "aborted")
BATCH_TERMINAL = frozenset({"complete", "aborted", "retired"})
STYLE = {
    "done": "green",
    "complete": "green",
    "error": "red",
    "aborted": "red",
    "in_progress": "cyan",
    "queued": "yellow",
    "open": "yellow",
    "retired": "dim",
}


def stdout_console() -> Console:
    """The console for results: plain and wide when stdout is not a terminal."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 200), no_color=True)
    return console


def print_json(console: Console, data: Any, *, compact: bool = False) -> None:
    """JSON for scripts, on stdout: one document (``compact``: on one line)."""
    console.file.write(json.dumps(data, indent=None if compact else 2, ensure_ascii=False) + "\n")
    console.file.flush()


def show(console: Console, renderable: RenderableType) -> None:
    """Print a table; off a terminal, without the padding rich adds at line ends."""
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as captured:
        console.print(renderable)
    lines = [line.rstrip() for line in captured.get().splitlines()]
    console.file.write("\n".join(lines) + "\n")
    console.file.flush()


def when(t: float | None) -> str:
    """A Unix time as local ``YYYY-MM-DD HH:MM:SS`` (empty for none)."""
    if t is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def state(s: str) -> str:
    """A state word with its colour."""
    style = STYLE.get(s)
    return f"[{style}]{s}[/{style}]" if style else s


def _counts(counts: dict[str, int]) -> str:
    return " ".join(f"{k}={counts[k]}" for k in JOB_STATES if counts.get(k))


def batches_table(rows: Iterable[dict[str, Any]]) -> Table:
    """The batches list."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("batch", "app", "state", "jobs", "done", "counts", "created"):
        table.add_column(col, justify="right" if col in ("jobs", "done") else "left")
    for b in rows:
        table.add_row(
            b["name"],
            b["app"],
            state(b["state"]),
            str(b["njobs"]),
            f"{b['fraction_done'] * 100:.0f}%",
            _counts(b["counts"]),
            when(b["created_at"]),
        )
    return table


def batch_table(b: dict[str, Any]) -> Table:
    """One batch's summary."""
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("batch", b["name"])
    table.add_row("app", b["app"])
    table.add_row("state", state(b["state"]))
    table.add_row("jobs", f"{b['njobs']} ({b['fraction_done'] * 100:.0f}% done)")
    for s in JOB_STATES:
        if b["counts"].get(s):
            table.add_row(f"  {s}", str(b["counts"][s]))
    for key in ("created_at", "submitted_at", "completed_at", "retired_at", "lease_until"):
        if b.get(key) is not None:
            table.add_row(key.removesuffix("_at"), when(b[key]))
    return table


def jobs_table(rows: Iterable[dict[str, Any]]) -> Table:
    """A batch's jobs."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("job", "state", "exit", "error"):
        table.add_column(col)
    for j in rows:
        code = j.get("exit_code")
        table.add_row(
            j["name"], state(j["state"]), "" if code is None else str(code), j.get("error") or ""
        )
    return table


def apps_table(rows: Iterable[dict[str, Any]]) -> Table:
    """The apps the user may use."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("app", "inputs", "outputs", "description"):
        table.add_column(col)
    for a in rows:
        outs = [o["name"] if o.get("required", True) else f"{o['name']}?" for o in a["outputs"]]
        table.add_row(a["name"], " ".join(a["inputs"]), " ".join(outs), a["description"])
    return table


def me_table(me: dict[str, Any]) -> Table:
    """Identity, quotas and usage."""
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    quotas, usage = me["quotas"], me["usage"]
    jobs_q = quotas.get("max_active_jobs")
    bytes_q = quotas.get("max_storage_bytes")
    jobs_max = "unlimited" if jobs_q is None else str(jobs_q)
    bytes_max = "unlimited" if bytes_q is None else human(bytes_q)
    table.add_row("user", me["name"] + (" (admin)" if me["admin"] else ""))
    table.add_row("active jobs", f"{usage['active_jobs']} of {jobs_max}")
    table.add_row("stored", f"{human(usage['stored_bytes'])} of {bytes_max}")
    return table
