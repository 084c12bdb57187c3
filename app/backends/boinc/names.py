"""BOINC batch and job names, derived from gateway ids and nothing else that can change.

A name is ``<prefix>-<token>-<kind><id>-<readable>``: the prefix is configurable, the token is
random per gateway database (so two gateways, or a gateway whose database was recreated, never
reuse a name in one project: workunit names are unique project-wide), the id is the gateway's
row id, and the readable tail is the gateway name with every character outside
``[A-Za-z0-9_.-]`` replaced, for people reading BOINC's web pages. Names stay within 191 bytes
(``workunit.name``) and within the characters create_work's unquoted stdin line survives.
Because the name is a function of the row, a batch whose sending was interrupted is found again
with ``query_batch(batch_name=...)`` instead of being submitted twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_NAME = 191
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def readable(name: str) -> str:
    """The gateway name with characters BOINC names should not carry replaced by ``_``."""
    return _UNSAFE.sub("_", name)


@dataclass(frozen=True, slots=True)
class Namer:
    """Names for one gateway installation (``prefix`` from settings, ``token`` from the db)."""

    prefix: str
    token: str

    @property
    def head(self) -> str:
        """What every name of this installation starts with."""
        return f"{self.prefix}-{self.token}-"

    def _name(self, kind: str, row_id: int | str, name: str) -> str:
        base = f"{self.head}{kind}{row_id}"
        tail = readable(name)[: MAX_NAME - len(base) - 1]
        return f"{base}-{tail}" if tail else base

    def batch(self, batch_id: int, name: str) -> str:
        """The BOINC batch name of gateway batch ``batch_id``."""
        return self._name("b", batch_id, name)

    def part(self, batch_id: int, name: str, part: int) -> str:
        """The BOINC batch name of part ``part`` of a batch sent as several (part 0 is
        named like the batch itself)."""
        return (
            self.batch(batch_id, name) if part == 0 else self._name("b", f"{batch_id}p{part}", name)
        )

    def parts(self, batch_id: int, name: str, count: int) -> list[str]:
        """The BOINC batch names of a batch sent as ``count`` parts, in order."""
        return [self.part(batch_id, name, k) for k in range(max(1, count))]

    def job(self, job_id: int, name: str) -> str:
        """The BOINC job (workunit) name of gateway job ``job_id``."""
        return self._name("j", job_id, name)

    def job_id(self, boinc_name: str) -> int | None:
        """The gateway job id a BOINC job name stands for (None: not one of ours)."""
        if not boinc_name.startswith(self.head + "j"):
            return None
        digits = boinc_name[len(self.head) + 1 :].split("-", 1)[0]
        return int(digits) if digits.isdigit() else None
