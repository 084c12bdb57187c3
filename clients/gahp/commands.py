"""The asynchronous BOINC GAHP commands: parsing, REST calls, result fields.

Each command class parses its arguments strictly (a malformed line is answered `E`,
gahp.md 6 item 5) and `run` returns the result fields after the reqid. Token counts of
results are what the gridmanager checks (gahp.md 2): PING, SUBMIT, ABORT, RETIRE and
LEASE answer exactly one field; QUERY answers NULL, server_time and one group per
requested batch; FETCH answers NULL and three numbers. Errors are one field of text.

The Condor-B design's forms (BOINC_QUERY_BATCH, and the SUBMIT and FETCH variants
parsed in submit.py and fetch.py) are accepted beside the gridmanager's.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from clients.gahp.context import CommandError, Context, ParseError, describe, parse_count, step
from clients.gahp.fetch import FetchOutput
from clients.gahp.localfs import LocalFileError
from clients.gahp.protocol import escape
from clients.gahp.rest import GatewayError, Project
from clients.gahp.submit import Submit
from clients.gahp.unicore import PARSERS as UNICORE_PARSERS

log = logging.getLogger(__name__)

STATUS_WORDS = {
    "queued": "NOT_STARTED",
    "in_progress": "IN_PROGRESS",
    "done": "DONE",
    "error": "ERROR",
    "aborted": "ERROR",
}
# `min_mod_time` comes back exactly as we sent `server_time`: the gateway's change
# number printed like BOINC's "%f". Plain integers and `0` are accepted as well.
_TIME = re.compile(r"([0-9]{1,30})(?:\.[0-9]{0,30})?")
_CURSOR = re.compile(r"[0-9]{1,30}")
MAX_ERROR_CHARS = 4000
# BOINC_QUERY_BATCH reads the batch's jobs in pages of the gateway's largest size.
LIST_PAGE_SIZE = 1000
MAX_LIST_PAGES = 100_000


class Command(Protocol):
    """A parsed asynchronous command, ready to run against one project."""

    context: ClassVar[str]

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """Perform the command; return the result fields after the reqid."""
        ...


def _exactly(args: Sequence[str], n: int, usage: str) -> None:
    if len(args) != n:
        raise ParseError(f"expected {usage}, got {len(args)} arguments")


@dataclass(frozen=True)
class Ping:
    """BOINC_PING: is the gateway there and does it accept the token?"""

    context: ClassVar[str] = "error pinging server"

    @classmethod
    def parse(cls, args: Sequence[str]) -> Ping:
        """No arguments."""
        _exactly(args, 0, "no arguments")
        return cls()

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """GET /v1/me."""
        async with step(self.context):
            await ctx.client.me(project)
        return ["NULL"]


@dataclass(frozen=True)
class QueryBatches:
    """BOINC_QUERY_BATCHES <min_mod_time> <#batches> <batch>..."""

    context: ClassVar[str] = "error querying batch"
    since_token: str
    since: str
    batches: tuple[str, ...]

    @classmethod
    def parse(cls, args: Sequence[str]) -> QueryBatches:
        """The time token must be one we could have produced."""
        if len(args) < 2:
            raise ParseError("BOINC_QUERY_BATCHES needs <min_mod_time> <#batches>")
        match = _TIME.fullmatch(args[0])
        if match is None:
            raise ParseError(f"min_mod_time {args[0][:40]!r} is not a time")
        n = parse_count(args[1], "batch count", len(args) - 2)
        _exactly(args[2:], n, f"{n} batch names")
        return cls(since_token=args[0], since=str(int(match[1])), batches=tuple(args[2:]))

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """POST /v1/batches/query; one group per requested batch, in request order."""
        if not self.batches:
            return ["NULL", self.since_token]
        unique = list(dict.fromkeys(self.batches))
        try:
            reply = await ctx.client.query_batches(project, unique, self.since)
        except GatewayError as exc:
            name = exc.extra.get("batch")
            if exc.status == 404 and exc.code == "batch_not_found" and isinstance(name, str):
                # The gridmanager drops or resubmits the batch named at the very end.
                raise CommandError(f"{self.context}: -1 no batch named {name}") from exc
            raise CommandError(f"{self.context}: {describe(exc)}") from exc
        if _CURSOR.fullmatch(reply.cursor) is None:
            raise CommandError(
                f"{self.context}: -1 gateway cursor {reply.cursor!r} is not a number"
            )
        by_name = {group.name: group.jobs for group in reply.batches}
        groups = [
            [
                (job.name, STATUS_WORDS.get(job.state, job.state.upper()))
                for job in by_name.get(b, [])
            ]
            for b in self.batches
        ]
        budget = ctx.config.max_reply_bytes - 64 - 24 * len(groups)
        fitted = fit_groups(groups, budget, ctx.rotation)
        server_time = f"{reply.cursor}.000000"
        if fitted is not None:
            # Too big for one line: report a window and repeat the old time, so what was
            # left out comes again next query; the window moves on each time.
            shown = sum(len(g) for g in fitted)
            ctx.rotation += shown
            log.warning("query reply truncated to %d of %d jobs", shown, _total(groups))
            groups, server_time = fitted, self.since_token
        fields = ["NULL", server_time]
        for group in groups:
            fields.append(str(len(group)))
            for job_name, status in group:
                fields += [job_name, status]
        return fields


@dataclass(frozen=True)
class QueryBatch:
    """BOINC_QUERY_BATCH <batch> (the Condor-B design): every job of one batch, in job
    order, each with its status word. Its clients are not the gridmanager, so the reply is
    never cut to a window: a batch of any size is answered whole."""

    context: ClassVar[str] = "error querying batch"
    batch: str

    @classmethod
    def parse(cls, args: Sequence[str]) -> QueryBatch:
        """Exactly one batch name."""
        _exactly(args, 1, "<batch>")
        return cls(batch=args[0])

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """GET /v1/batches/{name}/jobs, paged through to the end."""
        fields = ["NULL"]
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):  # bounded; each turn moves the cursor on
            async with step(self.context):
                page = await ctx.client.batch_jobs(
                    project, self.batch, cursor=cursor, limit=LIST_PAGE_SIZE
                )
            for job in page.items:
                fields += [job.name, STATUS_WORDS.get(job.state, job.state.upper())]
            if page.next_cursor is None:
                return fields
            if page.next_cursor == cursor:
                raise CommandError(f"{self.context}: -1 the gateway repeated page {cursor}")
            cursor = page.next_cursor
        raise CommandError(f"{self.context}: -1 batch {self.batch} has over {MAX_LIST_PAGES} pages")


def _total(groups: list[list[tuple[str, str]]]) -> int:
    return sum(len(g) for g in groups)


def fit_groups(
    groups: list[list[tuple[str, str]]], budget: int, rotation: int
) -> list[list[tuple[str, str]]] | None:
    """None when all pairs fit in budget bytes, else a cyclic window of them that does."""
    cost = [[len(escape(j)) + len(escape(s)) + 2 for j, s in g] for g in groups]
    if sum(map(sum, cost)) <= budget:
        return None
    flat = [(gi, pi) for gi, g in enumerate(groups) for pi in range(len(g))]
    start = rotation % len(flat)
    chosen: set[tuple[int, int]] = set()
    used = 0
    for k in range(len(flat)):  # bounded by the number of pairs
        gi, pi = flat[(start + k) % len(flat)]
        if used + cost[gi][pi] > budget:
            break
        used += cost[gi][pi]
        chosen.add((gi, pi))
    return [[p for pi, p in enumerate(g) if (gi, pi) in chosen] for gi, g in enumerate(groups)]


@dataclass(frozen=True)
class AbortJobs:
    """BOINC_ABORT_JOBS <job> [<job>...]."""

    context: ClassVar[str] = "error aborting jobs"
    jobs: tuple[str, ...]

    @classmethod
    def parse(cls, args: Sequence[str]) -> AbortJobs:
        """At least one job name."""
        if not args:
            raise ParseError("BOINC_ABORT_JOBS needs at least one job")
        return cls(jobs=tuple(args))

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """POST /v1/jobs/abort; a job the gateway does not know needs no abort."""
        names = list(dict.fromkeys(self.jobs))
        for _ in range(len(names)):  # each turn drops one unknown name
            try:
                await ctx.client.abort_jobs(project, names)
                return ["NULL"]
            except GatewayError as exc:
                unknown = exc.extra.get("job")
                if exc.code != "job_not_found" or unknown not in names:
                    raise CommandError(f"{self.context}: {describe(exc)}") from exc
                log.warning("abort: gateway does not know job %s; treating it as gone", unknown)
                names.remove(unknown)
            if not names:
                break
        return ["NULL"]


@dataclass(frozen=True)
class RetireBatch:
    """BOINC_RETIRE_BATCH <batch>."""

    context: ClassVar[str] = "error retiring batch"
    batch: str

    @classmethod
    def parse(cls, args: Sequence[str]) -> RetireBatch:
        """Exactly one batch name."""
        _exactly(args, 1, "<batch>")
        return cls(batch=args[0])

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """POST /v1/batches/{name}/retire."""
        async with step(self.context):
            await ctx.client.retire_batch(project, self.batch)
        return ["NULL"]


@dataclass(frozen=True)
class SetLease:
    """BOINC_SET_LEASE <batch> <epoch_seconds>."""

    context: ClassVar[str] = "error setting lease"
    batch: str
    until: int

    @classmethod
    def parse(cls, args: Sequence[str]) -> SetLease:
        """A batch name and a non-negative time."""
        _exactly(args, 2, "<batch> <epoch_seconds>")
        match = _TIME.fullmatch(args[1])
        if match is None:
            raise ParseError(f"lease time {args[1][:40]!r} is not a time")
        return cls(batch=args[0], until=int(match[1]))

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """PUT /v1/batches/{name}/lease."""
        async with step(self.context):
            await ctx.client.set_lease(project, self.batch, self.until)
        return ["NULL"]


PARSERS: dict[str, Callable[[Sequence[str]], Command]] = {
    "BOINC_ABORT_JOBS": AbortJobs.parse,
    "BOINC_FETCH_OUTPUT": FetchOutput.parse,
    "BOINC_PING": Ping.parse,
    "BOINC_QUERY_BATCH": QueryBatch.parse,
    "BOINC_QUERY_BATCHES": QueryBatches.parse,
    "BOINC_RETIRE_BATCH": RetireBatch.parse,
    "BOINC_SET_LEASE": SetLease.parse,
    "BOINC_SUBMIT": Submit.parse,
    **UNICORE_PARSERS,
}


def parse(name: str, args: Sequence[str]) -> Command:
    """Parse the arguments (after the reqid) of an asynchronous command."""
    parser = PARSERS.get(name)
    if parser is None:
        raise ParseError(f"unknown command {name[:40]!r}")
    return parser(args)


async def execute(command: Command, ctx: Context, project: Project | None) -> list[str]:
    """Run a command within the deadline; every failure becomes its command's error fields."""
    context = command.context
    if project is None:
        message = f"{context}: -1 no project selected (BOINC_SELECT_PROJECT or config file)"
        return failure(command, message)
    timeout = ctx.config.command_timeout
    try:
        async with asyncio.timeout(timeout):
            return await command.run(ctx, project)
    except CommandError as exc:
        message = str(exc)
    except TimeoutError:
        message = f"{context}: -1 timed out after {timeout:g} s"
    except (GatewayError, LocalFileError) as exc:
        message = f"{context}: {describe(exc)}"
    except Exception as exc:  # a bug must not kill the gridmanager: answer and log it
        log.exception("%s failed", type(command).__name__)
        message = f"{context}: -1 internal error: {describe(exc)}"
    log.warning("%s", message)
    # The gridmanager dies on a line over 500 KiB; a message never needs that much.
    return failure(command, message[:MAX_ERROR_CHARS])


def failure(command: Command, message: str) -> list[str]:
    """A failed command's result fields: the message alone, or the command's own shape."""
    shape = getattr(command, "failure_fields", None)
    return list(shape(message)) if callable(shape) else [message]
