"""The GAHP command loop: one immediate return line per request, results on demand.

Requests are read by a thread (stdin may be a pipe, a file or a terminal) and handled in
order on the event loop. Synchronous commands answer in full at once; asynchronous ones
answer `S`, run as tasks, and queue one result line each, which RESULTS hands out in
completion order, each once. In async mode one `R` announces the first result after a
RESULTS. Every line goes out whole under one lock and is flushed at once, because the
gridmanager waits at most 20 s for each line (gahp.md 1.5).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Sequence
from typing import BinaryIO

from clients.gahp import commands, unicore
from clients.gahp.config import Config
from clients.gahp.context import Context, ParseError
from clients.gahp.protocol import Line, LineParser, format_line, format_raw
from clients.gahp.rest import GatewayClient, Project

log = logging.getLogger(__name__)

VERSION = "0.1.0"
RELEASE_DATE = "Dec 02 2026"
# Escaped exactly like the reference banner; must stay under 150 characters (gahp.md 1.4).
BANNER = f"$GahpVersion: {VERSION} {RELEASE_DATE} boinc-gateway\\ BOINC\\ GAHP $"
# The reference boinc_gahp list, so the gridmanager's startup is banner, COMMANDS,
# ASYNC_MODE_ON and nothing more (gahp.md 1.6), plus the generic ClassAd job commands
# (gahp.md 5.1) and the Condor-B design's BOINC_QUERY_BATCH, which trigger nothing at
# startup.
COMMAND_NAMES = (
    "ASYNC_MODE_OFF",
    "ASYNC_MODE_ON",
    "BOINC_ABORT_JOBS",
    "BOINC_FETCH_OUTPUT",
    "BOINC_PING",
    "BOINC_QUERY_BATCH",
    "BOINC_QUERY_BATCHES",
    "BOINC_RETIRE_BATCH",
    "BOINC_SELECT_PROJECT",
    "BOINC_SET_LEASE",
    "BOINC_SUBMIT",
    "COMMANDS",
    "QUIT",
    "RESULTS",
    "UNICORE_JOB_CALLBACK",
    "UNICORE_JOB_CREATE",
    "UNICORE_JOB_DESTROY",
    "UNICORE_JOB_RECOVER",
    "UNICORE_JOB_START",
    "UNICORE_JOB_STATUS",
    "VERSION",
)
THREADS_LIMIT = ("F", "Threads limit reached")
_EOF = None


class Writer:
    """Serialises whole lines to the protocol stream, applying the response prefix."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.prefix = ""
        self.broken = False

    def lines(self, *lines: Sequence[str]) -> None:
        """Write token lines as one unit and flush."""
        self._write(b"".join(format_line(tokens, self.prefix) for tokens in lines))

    def raw(self, text: str) -> None:
        """Write one already escaped line and flush."""
        self._write(format_raw(text, self.prefix))

    def _write(self, data: bytes) -> None:
        with self._lock:
            if self.broken:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except OSError as exc:
                # The gridmanager is gone; the read side will see EOF and end the loop.
                log.error("cannot write to the gridmanager: %s", exc)
                self.broken = True


class Engine:
    """State of one GAHP session: mode flags, project, in-flight work, queued results."""

    def __init__(
        self,
        writer: Writer,
        config: Config,
        client: GatewayClient,
        project: Project | None = None,
    ) -> None:
        self.writer = writer
        self.config = config
        self.ctx = Context(client=client, config=config)
        self.project = project
        self.async_mode = False
        self._announced = False
        self._results: deque[list[str]] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self.quit = False

    @property
    def pending(self) -> int:
        """Requests accepted and not yet handed out by RESULTS (running or finished)."""
        return len(self._tasks) + len(self._results)

    def start(self) -> None:
        """Print the version banner."""
        self.writer.raw(BANNER)

    def handle(self, line: Line) -> None:
        """Answer one request line with exactly one return line."""
        if line.overflow or not line.args or not line.args[0]:
            log.warning("malformed line (%s)", "too long" if line.overflow else "empty")
            self.writer.lines(["E"])
            return
        name, args = line.args[0].upper(), line.args[1:]
        handler = self._SYNC.get(name)
        try:
            if handler is not None:
                handler(self, args)
            else:
                self._start_async(name, args)
        except ParseError as exc:
            log.warning("rejected %s: %s", name[:40], exc)
            self.writer.lines(["E"])

    def _start_async(self, name: str, args: Sequence[str]) -> None:
        reqid = _reqid(name, args)
        command = commands.parse(name, args[1:])
        if self.pending >= self.config.max_in_flight:
            # The gridmanager lowers its in-flight limit and re-sends (gahp.md T12).
            self.writer.lines(THREADS_LIMIT)
            return
        # The project is bound now: a later BOINC_SELECT_PROJECT must not redirect it.
        task = asyncio.get_running_loop().create_task(self._run(name, reqid, command, self.project))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        log.info("accepted %s %s", name, reqid)
        self.writer.lines(["S"])

    async def _run(
        self, name: str, reqid: str, command: commands.Command, project: Project | None
    ) -> None:
        fields = await commands.execute(command, self.ctx, project)
        self.push([reqid, *fields])
        log.info("finished %s %s", name, reqid)

    def push(self, fields: list[str]) -> None:
        """Queue one result line for RESULTS (announced by R in async mode)."""
        self._results.append(fields)
        self._announce()

    def _announce(self) -> None:
        if self.async_mode and self._results and not self._announced:
            self._announced = True
            self.writer.lines(["R"])

    # Synchronous commands: each answers its own return line.

    def _commands(self, args: Sequence[str]) -> None:
        _no_args(args)
        names = list(COMMAND_NAMES)
        if self.config.advertise_response_prefix:
            names = sorted([*names, "RESPONSE_PREFIX"])
        self.writer.lines(["S", *names])

    def _version(self, args: Sequence[str]) -> None:
        _no_args(args)
        self.writer.raw("S " + BANNER)

    def _async_on(self, args: Sequence[str]) -> None:
        _no_args(args)
        self.async_mode = True
        self.writer.lines(["S"])
        self._announce()

    def _async_off(self, args: Sequence[str]) -> None:
        _no_args(args)
        self.async_mode = False
        self.writer.lines(["S"])

    def _results_cmd(self, args: Sequence[str]) -> None:
        _no_args(args)
        ready = list(self._results)
        self._results.clear()
        self._announced = False
        self.writer.lines(["S", str(len(ready))], *ready)

    def _response_prefix(self, args: Sequence[str]) -> None:
        if len(args) != 1:
            raise ParseError("RESPONSE_PREFIX needs exactly one argument")
        # The reply to this command itself is not prefixed (gahp.md 1.10).
        self.writer.lines(["S"])
        self.writer.prefix = args[0]

    def _select_project(self, args: Sequence[str]) -> None:
        if len(args) != 2:
            raise ParseError("BOINC_SELECT_PROJECT needs <url> <authenticator>")
        self.project = Project(url=args[0], token=args[1])
        log.info("selected project %s", args[0])
        self.writer.lines(["S"])

    def _unicore_callback(self, args: Sequence[str]) -> None:
        # Synchronous: exactly `S`; results follow unsolicited with this reqid (gahp.md 5.1).
        if len(args) != 1:
            raise ParseError("UNICORE_JOB_CALLBACK needs exactly a request id")
        unicore.enable_callbacks(self.ctx, _reqid("UNICORE_JOB_CALLBACK", args), self.push)
        self.writer.lines(["S"])

    def _quit(self, args: Sequence[str]) -> None:
        _no_args(args)
        self.writer.lines(["S"])
        self.quit = True

    _SYNC = {
        "ASYNC_MODE_OFF": _async_off,
        "ASYNC_MODE_ON": _async_on,
        "BOINC_SELECT_PROJECT": _select_project,
        "COMMANDS": _commands,
        "QUIT": _quit,
        "RESPONSE_PREFIX": _response_prefix,
        "RESULTS": _results_cmd,
        "UNICORE_JOB_CALLBACK": _unicore_callback,
        "VERSION": _version,
    }

    def abandon(self) -> None:
        """Cancel every running command (EOF or QUIT)."""
        for task in list(self._tasks):
            task.cancel()
        self.ctx.unicore.stop()


def _reqid(name: str, args: Sequence[str]) -> str:
    if not args or not args[0].isascii() or not args[0].isdigit() or len(args[0]) > 9:
        raise ParseError(f"{name[:40]} needs a request id")
    if int(args[0]) == 0:
        raise ParseError("request id 0")
    return args[0]


def _no_args(args: Sequence[str]) -> None:
    if args:
        raise ParseError("this command takes no arguments")


def start_reader(
    fd: int, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Line | None]
) -> None:
    """Read stdin in a daemon thread, passing parsed lines (then None at EOF) to the loop."""

    def deliver(item: Line | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop has closed: the shim is exiting
            return False
        return True

    def read() -> None:
        parser = LineParser()
        try:
            while chunk := os.read(fd, 65536):  # ends at EOF
                for line in parser.feed(chunk):
                    if not deliver(line):
                        return
        except OSError as exc:
            log.error("cannot read stdin: %s", exc)
        if parser.pending:
            log.warning("dropping an unterminated last line")
        deliver(_EOF)

    threading.Thread(target=read, name="gahp-stdin", daemon=True).start()


async def serve(engine: Engine, fd: int) -> int:
    """Run the session until EOF or QUIT; return the exit status."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Line | None] = asyncio.Queue()
    start_reader(fd, loop, queue)
    engine.start()
    try:
        while not engine.quit:  # ends at EOF (None) or QUIT
            line = await queue.get()
            if line is _EOF:
                log.info("stdin closed; exiting with %d commands in flight", engine.pending)
                break
            engine.handle(line)
    finally:
        engine.abandon()
    return 0
