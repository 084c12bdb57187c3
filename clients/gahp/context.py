"""What every command handler shares: the gateway client, settings, and error texts.

A failed command answers one escaped token of text. The texts follow the reference
boinc_gahp (`error submitting jobs: -1 <message>`, `-1` standing for "the remote call
failed"), so HTCondor users and log scrapers see familiar hold reasons.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import httpx

from clients.gahp.config import Config
from clients.gahp.localfs import LocalFileError
from clients.gahp.rest import GatewayClient, GatewayError
from clients.gahp.watch import Registry

T = TypeVar("T")


class ParseError(Exception):
    """The request line is malformed or incomplete; the shim answers `E`."""


def parse_count(token: str, what: str, available: int) -> int:
    """Parse a non-negative decimal count that cannot exceed the tokens left."""
    if not token.isascii() or not token.isdigit() or len(token) > 18:
        raise ParseError(f"{what} {token[:20]!r} is not a count")
    value = int(token)
    if value > available:
        raise ParseError(f"{what} {value} exceeds the {available} arguments left")
    return value


class CommandError(Exception):
    """A command failed; the message is the complete error text for the result line."""


@dataclass
class Context:
    """Shared state of the command handlers of one shim process."""

    client: GatewayClient
    config: Config
    # Where the next truncated BOINC_QUERY_BATCHES reply starts (see commands.fit_groups).
    rotation: int = 0
    # The jobs the UNICORE-style commands answer for, and their callback channel.
    unicore: Registry = field(default_factory=Registry)


def describe(exc: BaseException) -> str:
    """The user-facing text of a failure below a command."""
    if isinstance(exc, GatewayError):
        return f"-1 {exc.message}"
    if isinstance(exc, httpx.HTTPError):
        return f"-1 {type(exc).__name__}: {exc}"
    return str(exc) or type(exc).__name__


@asynccontextmanager
async def step(context: str) -> AsyncIterator[None]:
    """Turn gateway and local-file failures inside the block into a CommandError."""
    try:
        yield
    except (GatewayError, LocalFileError, httpx.HTTPError) as exc:
        raise CommandError(f"{context}: {describe(exc)}") from exc


async def bounded_gather(aws: Iterable[Awaitable[T]], limit: int) -> list[T]:
    """Await all with at most `limit` running at once; the first failure cancels the rest."""
    semaphore = asyncio.Semaphore(limit)

    async def one(aw: Awaitable[T]) -> T:
        async with semaphore:
            return await aw

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(aw)) for aw in aws]
    except ExceptionGroup as failures:
        # Callers handle plain exceptions; report the first cause, not the group.
        raise failures.exceptions[0] from None
    return [task.result() for task in tasks]
