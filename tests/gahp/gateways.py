"""The gateway a GAHP test talks to: the in-process fake now, a real server later.

Tests that only need "a gateway that runs jobs" take the `gateway` fixture and use
nothing but this interface, so the same test can run against a real boinc-gateway: add
a parametrisation of the fixture in conftest.py that builds a `Gateway` from a real URL
and token (its `finish` a no-op, since real jobs finish on their own, and its `app`,
`output` and `transform` describing an app registered there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.gahp.fake_gateway import FakeGateway

ALICE = "0123456789abcdef0123456789abcdef"
BOB = "fedcba9876543210fedcba9876543210"


@dataclass(frozen=True)
class Gateway:
    """What a test needs to know about the gateway under test."""

    url: str  # base URL as BOINC_SELECT_PROJECT passes it (a trailing "/" is fine)
    token: str  # bearer token of a user allowed to run `app`
    app: str  # an app with exactly one input file
    output: str  # the name of the output that app always writes
    transform: Callable[[bytes], bytes]  # that output's content for a given input
    finish: Callable[[str], None]  # push the named batch's jobs on (real server: no-op)
    wait_seconds: float  # how long a job may take to be done


def upper(data: bytes) -> bytes:
    """What the fake app `upper` writes to `out`."""
    return data.upper()


def from_fake(fake: FakeGateway) -> Gateway:
    """The Gateway view of a started fake with the standard users and apps."""
    return Gateway(
        url=fake.url,
        token=ALICE,
        app="upper",
        output="out",
        transform=upper,
        finish=fake.finish,
        wait_seconds=10.0,
    )
