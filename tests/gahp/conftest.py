"""Fixtures: a fake gateway on 127.0.0.1, the `gateway` interface, shim processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LiveServer
from tests.gahp.fake_gateway import FakeGateway, RunResult
from tests.gahp.gateways import ALICE, BOB, Gateway, from_fake, upper
from tests.gahp.harness import Gahp


def _upper_run(args: list[str], inputs: dict[str, bytes]) -> RunResult:
    return RunResult(
        outputs={"out": upper(inputs["in"])},
        stdout=("args: " + " ".join(args) + "\n").encode(),
        stderr=b"upper: done\n",
    )


def _uppercase_run(args: list[str], inputs: dict[str, bytes]) -> RunResult:
    return RunResult(
        outputs={"result.txt": inputs["in"].upper(), "log.txt": b"params " + inputs["params"]},
        stdout=b"uppercase stdout\n",
        stderr=b"uppercase stderr\n",
    )


@pytest.fixture
def fake() -> Iterator[FakeGateway]:
    """A started fake with users alice and bob and apps `upper` and `uppercase`."""
    gw = FakeGateway()
    gw.add_user("alice", ALICE)
    gw.add_user("bob", BOB)
    gw.add_app("upper", ["in"], [("out", True)], _upper_run)
    gw.add_app(
        "uppercase", ["in", "params"], [("result.txt", True), ("log.txt", False)], _uppercase_run
    )
    gw.start()
    try:
        yield gw
    finally:
        gw.stop()
    assert not gw.errors, f"the fake gateway itself failed: {gw.errors}"


@pytest.fixture(params=["fake", "live"])
def gateway(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Gateway]:
    """The gateway under test: the fake, and a real ``serve`` process (SQLite, local backend)."""
    if request.param == "fake":
        yield from_fake(request.getfixturevalue("fake"))
        return
    data = tmp_path / "live-data"
    data.mkdir()
    server = LiveServer(f"sqlite:///{tmp_path / 'live.db'}", data)
    server.start()
    try:
        yield Gateway(
            url=server.url + "/",
            token=server.token,
            app="uppercase",
            output="out",
            transform=bytes.upper,
            finish=lambda _batch: None,
            wait_seconds=60,
        )
    finally:
        server.stop()


@pytest.fixture
def gahp(tmp_path: Path) -> Iterator[Callable[..., Gahp]]:
    """Start shim processes (config keys as keyword arguments); all are stopped at the end."""
    started: list[Gahp] = []

    def start(
        prefix: str = "", config_text: str | None = None, config_in_env: bool = True, **config: Any
    ) -> Gahp:
        proc = Gahp(
            tmp_path / f"gahp{len(started)}",
            config,
            prefix=prefix,
            config_text=config_text,
            config_in_env=config_in_env,
        )
        started.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in started:
            proc.stop()
