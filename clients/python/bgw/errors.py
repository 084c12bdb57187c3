"""bgw's errors and the exit codes they map to (documented in ``bgw --help``).

- 0: success
- 1: the API answered with an error (the one-line message is its problem+json ``detail``)
- 2: usage: bad arguments, unreadable spec or config, missing token
- 3: cannot reach the service (connection refused, DNS, timeout, TLS)
- 4: under ``--wait``: the batch ended with failed or aborted jobs
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Process exit codes scripts can rely on."""

    OK = 0
    API = 1
    USAGE = 2
    CONNECTION = 3
    FAILED = 4


class BgwError(Exception):
    """Base of every error bgw reports as one line and an exit code."""

    exit_code: ExitCode = ExitCode.API

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))

    @property
    def message(self) -> str:
        """The one-line message."""
        return str(self)


class UsageError(BgwError):
    """Bad input from the user (arguments, spec, config)."""

    exit_code = ExitCode.USAGE


class ConnectionFailed(BgwError):
    """The service could not be reached."""

    exit_code = ExitCode.CONNECTION


class JobsFailed(BgwError):
    """A waited-for batch ended with failed or aborted jobs."""

    exit_code = ExitCode.FAILED


class ApiError(BgwError):
    """An error answer from the API, carrying its problem+json fields."""

    exit_code = ExitCode.API

    def __init__(self, status: int, code: str, detail: str, problem: dict[str, Any]) -> None:
        super().__init__(f"{detail} ({code}, HTTP {status})")
        self.status = status
        self.code = code
        self.detail = detail
        self.problem = problem
