"""Fixtures for the BOINC client tests: the fake server, a client for it, recorded replies."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.backends.boinc.rpc import BoincClient
from tests.fakes.boinc_server import ALICE_AUTH, FakeBoincServer, Quirks

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Recorded:
    """One recorded reply: status, content type, disposition and body bytes."""

    status: int
    content_type: str
    disposition: str | None
    body: bytes


def recorded(name: str) -> Recorded:
    """Load `data/<name>.rep`."""
    raw = (DATA / f"{name}.rep").read_bytes()
    head, body = raw.split(b"\n\n", 1)
    words = head.decode().split(" ", 2)
    ctype, _, disp = words[2].partition(" attachment")
    if ctype.endswith(" None"):
        ctype, disp = ctype.removesuffix(" None"), ""
    return Recorded(int(words[1]), ctype, ("attachment" + disp) if disp else None, body)


def request_xml(name: str) -> str:
    """Load `data/<name>.req`."""
    return (DATA / f"{name}.req").read_text()


def write_inputs(directory: Path, contents: list[bytes]) -> list[tuple[str, Path]]:
    """Write input files; return (md5, path) pairs."""
    out = []
    for k, data in enumerate(contents):
        path = directory / f"in_{k}"
        path.write_bytes(data)
        out.append((hashlib.md5(data).hexdigest(), path))
    return out


@pytest.fixture
def fake() -> Iterator[FakeBoincServer]:
    """A fake server with every quirk off."""
    with FakeBoincServer() as server:
        yield server


@pytest.fixture
def live() -> Iterator[FakeBoincServer]:
    """A fake server behaving like the recorded live server."""
    with FakeBoincServer(quirks=Quirks.live()) as server:
        yield server


@pytest.fixture(params=["fixed", "live"])
def any_fake(request: pytest.FixtureRequest) -> Iterator[FakeBoincServer]:
    """Both flavours: the client must give the same answers."""
    quirks = Quirks.live() if request.param == "live" else Quirks()
    with FakeBoincServer(quirks=quirks) as server:
        yield server


def make_client(server: FakeBoincServer, **kwargs: object) -> BoincClient:
    """A client for alice on `server`."""
    return BoincClient(server.url, ALICE_AUTH, timeout=5.0, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def client(any_fake: FakeBoincServer) -> Iterator[BoincClient]:
    """Alice's client on `any_fake`."""
    with make_client(any_fake) as c:
        yield c
