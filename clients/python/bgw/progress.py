"""Transfer progress: rich bars (per file and overall) when stderr is a terminal, else lines.

Results go to stdout; progress and notes go to stderr so ``--json`` output stays clean.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)


def human(size: int) -> str:
    """A byte count for people (``1.5 MiB``)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class FileTask:
    """One file's bar (or nothing, in plain mode)."""

    def __init__(self, bars: Transfers, task: TaskID | None) -> None:
        self._bars = bars
        self._task = task

    def advance(self, n: int) -> None:
        """Count ``n`` more bytes for this file and for the total."""
        self._bars.advance(self._task, n)


class Transfers:
    """Bars for a set of transfers: one per running file plus an overall one."""

    def __init__(self, console: Console, *, verb: str, total: int, files: int) -> None:
        self.console = console
        self.verb = verb
        self.enabled = console.is_terminal and files > 0
        self._progress: Progress | None = None
        self._overall: TaskID | None = None
        if self.enabled:
            self._progress = Progress(
                TextColumn("{task.description}", style="bold"),
                BarColumn(),
                DownloadColumn(binary_units=True),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=False,
            )
            label = f"{verb} {files} file{'s' if files != 1 else ''}"
            self._overall = self._progress.add_task(label, total=total)

    def __enter__(self) -> Transfers:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, task: TaskID | None, n: int) -> None:
        """Count bytes for one file's bar and the overall bar."""
        if self._progress is None:
            return
        if task is not None:
            self._progress.advance(task, n)
        if self._overall is not None:
            self._progress.advance(self._overall, n)

    def note(self, message: str) -> None:
        """A line for the user (above the bars, or plain on stderr)."""
        self.console.print(message, highlight=False, markup=False)

    @contextmanager
    def file(self, label: str, size: int, *, done: str | None = None) -> Iterator[FileTask]:
        """A bar for one file while it transfers; ``done`` is printed when it completes."""
        task: TaskID | None = None
        if self._progress is not None:
            task = self._progress.add_task(f"  {label}", total=size)
        try:
            yield FileTask(self, task)
        finally:
            if self._progress is not None and task is not None:
                self._progress.remove_task(task)
        if done is not None:
            self.note(done)
