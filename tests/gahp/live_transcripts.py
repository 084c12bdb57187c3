"""Helpers to replay the gahp.md section 3 transcripts against a real `boinc-gateway serve`.

`LiveReplayer` differs from `tests.gahp.replay.Replayer` in where values may differ from
the transcript, and only there:

* Sent lines (`C>`): `send_subs` replaces values the gridmanager itself would choose
  differently here (project URL, iwd, the authenticator -> a real token, lease times that
  must lie in the future). They never touch the lines the shim writes.
* Lines the shim writes (`S<`) are compared byte for byte, except at the literal
  occurrences of declared `Var`s (the `server_time` cursors, wall and cpu seconds). The
  first time such a literal appears, the shim's value at that position must fully match
  the variable's pattern and is bound; from then on the literal stands for that exact
  value, both in expected lines and in sent lines (the echoed `min_mod_time`).

`R` lines are counted, not placed, and the lines of one RESULTS are matched as a set,
for the same reasons as in replay.py.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.e2e.conftest import LiveServer
from tests.gahp.harness import Gahp, tokens

APP = "uppercase"
INPUTS = ["in", "params"]
OUTPUTS: list[Any] = ["result.txt", {"name": "log.txt", "required": False}]

# The local command of the app: wait until the gate file of its `--n` argument exists
# (bounded), then write result.txt (its `in` upper-cased) and log.txt (from `params`).
APP_SCRIPT = r"""
import pathlib, sys, time
gates, args = pathlib.Path(sys.argv[1]), sys.argv[2:]
n = args[args.index("--n") + 1]
deadline = time.monotonic() + 90
while not (gates / ("go-" + n)).exists():
    if time.monotonic() > deadline:
        sys.exit("uppercase: gate go-" + n + " never opened")
    time.sleep(0.02)
pathlib.Path("result.txt").write_bytes(pathlib.Path("in").read_bytes().upper())
pathlib.Path("log.txt").write_bytes(b"params " + pathlib.Path("params").read_bytes())
sys.stdout.write("uppercase stdout\n")
sys.stderr.write("uppercase stderr\n")
"""

CURSOR = r"[0-9]+\.000000"  # the shim prints the gateway's change number like "%f"
SECONDS = r"[0-9]+\.[0-9]{6}"  # the shim prints wall and cpu seconds as "%.6f"


# ----- the real gateway ------------------------------------------------------------------


@dataclass
class LiveGateway:
    """A started `serve` on 127.0.0.1 (SQLite, local backend) with the transcripts' app."""

    server: LiveServer
    gates: Path
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The base URL as BOINC_SELECT_PROJECT passes it."""
        return self.server.url + "/"

    def add_user(self, name: str) -> str:
        """Create a user as admin; return the token the server issued."""
        with self.server.client() as c:
            reply = c.post("/v1/users", json={"name": name})
        assert reply.status_code == 201, reply.text
        token = reply.json()["token"]
        assert isinstance(token, str) and re.fullmatch(r"[!-~]+", token), token
        assert "\\" not in token
        self.tokens[name] = token
        return token

    def client(self, user: str = "admin") -> httpx.Client:
        """A REST client as that user."""
        return self.server.client(self.tokens[user])

    def get(self, user: str, path: str) -> Any:
        """GET a JSON resource as that user; path segments must already be quoted."""
        with self.client(user) as c:
            reply = c.get(path)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def job(self, user: str, name: str) -> dict[str, Any]:
        """GET /v1/jobs/{name}."""
        result: dict[str, Any] = self.get(user, f"/v1/jobs/{quote(name, safe='')}")
        return result

    def batch(self, user: str, name: str) -> dict[str, Any]:
        """GET /v1/batches/{name}."""
        result: dict[str, Any] = self.get(user, f"/v1/batches/{quote(name, safe='')}")
        return result

    def open_gate(self, n: str) -> None:
        """Let the app's runs with `--n n` finish."""
        (self.gates / f"go-{n}").touch()

    def wait_job(
        self, user: str, name: str, check: Callable[[dict[str, Any]], bool], timeout: float = 20
    ) -> dict[str, Any]:
        """Poll GET /v1/jobs/{name} until `check` holds (bounded)."""
        deadline = time.monotonic() + timeout
        while True:  # bounded by the deadline
            job = self.job(user, name)
            if check(job):
                return job
            assert time.monotonic() < deadline, f"job {name} never got there: {job}"
            time.sleep(0.05)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """SIGSTOP the serve process we started, SIGCONT it afterwards, whatever happens.

        Requests sent meanwhile are accepted by the kernel and answered after the pause,
        so they stay in flight in the shim: the real server's way to be slow.
        """
        proc = self.server.proc
        assert proc is not None and proc.poll() is None
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(proc.pid, signal.SIGCONT)


def start_gateway(base: Path, **env: str) -> LiveGateway:
    """Start `serve` without the example apps; register `uppercase` as the transcripts use it."""
    data = base / "live-data"
    gates = base / "gates"
    data.mkdir(parents=True)
    gates.mkdir()
    env = {"BGW_REGISTER_EXAMPLES": "false", "BGW_LOCAL_SLOTS": "1", **env}
    server = LiveServer(f"sqlite:///{base / 'live.db'}", data, **env)
    server.start()
    gateway = LiveGateway(server=server, gates=gates, tokens={"admin": server.token})
    app = {
        "name": APP,
        "description": "the app of the gahp.md transcripts",
        "inputs": INPUTS,
        "outputs": OUTPUTS,
        "local": {"command": [sys.executable, "-c", APP_SCRIPT, str(gates)], "wall_seconds": 120},
    }
    try:
        with server.client() as c:
            reply = c.post("/v1/apps", json=app)
            assert reply.status_code == 201, reply.text
            assert [a["name"] for a in c.get("/v1/apps").json()] == [APP]
    except BaseException:
        server.stop()
        raise
    return gateway


# ----- replaying -------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    """A value the real server chooses: transcript literal, the pattern the shim's must match."""

    literal: str
    pattern: str


def cursors(*literals: str) -> list[Var]:
    """server_time values of the transcript."""
    return [Var(lit, CURSOR) for lit in literals]


class LiveReplayer:
    """Replays transcript scripts on one shim against a real gateway (see the module doc)."""

    def __init__(self, gahp: Gahp, send_subs: dict[str, str], variables: list[Var]) -> None:
        self.gahp = gahp
        self.send_subs = dict(send_subs)
        self.vars = {v.literal: v for v in variables}
        self.bound: dict[str, str] = {}
        self.order: list[str] = []  # literals in the order they were bound
        self.r_expected = 0
        names = sorted(self.vars, key=len, reverse=True)
        self._var_re = re.compile("|".join(map(re.escape, names))) if names else None

    def value(self, literal: str) -> str:
        """What a transcript literal was bound to."""
        return self.bound[literal]

    # ----- lines -----

    def _outgoing(self, text: str) -> bytes:
        for old, new in self.send_subs.items():
            text = text.replace(old, new)
        if self._var_re is not None:
            for literal in set(self._var_re.findall(text)):
                assert literal in self.bound, f"{literal} is sent before the shim printed it"
                text = text.replace(literal, self.bound[literal])
        return text.encode()

    def _matcher(self, expected: str) -> tuple[re.Pattern[bytes], list[str]]:
        """A full-line pattern for an expected line; the literals it would bind, in order."""
        parts: list[str] = []
        new: list[str] = []
        pos = 0
        for m in self._var_re.finditer(expected) if self._var_re is not None else []:
            parts.append(re.escape(expected[pos : m.start()]))
            lit = m.group()
            if lit in self.bound:
                parts.append(re.escape(self.bound[lit]))
            elif lit in new:
                parts.append(f"(?P=v{new.index(lit)})")
            else:
                parts.append(f"(?P<v{len(new)}>{self.vars[lit].pattern})")
                new.append(lit)
            pos = m.end()
        parts.append(re.escape(expected[pos:]))
        return re.compile("".join(parts).encode()), new

    def _match(self, expected: str, got: bytes) -> dict[str, str] | None:
        pattern, new = self._matcher(expected)
        m = pattern.fullmatch(got)
        if m is None:
            return None
        return {lit: m.group(f"v{i}").decode() for i, lit in enumerate(new)}

    def _bind(self, values: dict[str, str]) -> None:
        for lit, val in values.items():
            self.bound[lit] = val
            self.order.append(lit)

    def expect(self, expected: str, got: bytes) -> None:
        """One line the shim wrote against one expected line; binds new variables."""
        values = self._match(expected, got)
        assert values is not None, f"shim wrote {got!r}, transcript says {expected!r}"
        self._bind(values)

    # ----- scripts -----

    def run(self, script: str) -> None:
        """Replay one script; raise AssertionError at the first difference."""
        prefix = self.gahp.prefix.decode()
        block: list[str] | None = None  # expected lines of the open RESULTS
        size = 0
        for raw in script.strip().splitlines():
            line = raw.strip()
            if line.startswith("C> "):
                assert line.endswith(r"\r\n"), line
                assert block is None, "RESULTS block cut short in the script"
                data = self._outgoing(line[3:-4]) + b"\r\n"
                if data == b"RESULTS\r\n":
                    self.gahp.wait_idle()
                    block, size = [], -1
                self.gahp.send(data)
                continue
            if not line.startswith("S< "):
                continue
            assert line.endswith(r"\n"), line
            text = line[3:-2]
            if text in ("R", prefix + "R"):
                self.r_expected += 1
                self.gahp.wait_r(self.r_expected)
            elif block is not None and size < 0:
                self.expect(text, self.gahp.line())
                size = int(tokens(text.removeprefix(prefix).encode())[1])
                block = None if size == 0 else block
            elif block is not None:
                block.append(text)
                if len(block) == size:
                    self._match_block(block, [self.gahp.line() for _ in range(size)])
                    block = None
            else:
                self.expect(text, self.gahp.line())
        assert block is None, "script ended inside a RESULTS block"

    def _match_block(self, expected: list[str], got: list[bytes]) -> None:
        """Result lines come in completion order: pair each expected line with one got line."""
        left = list(got)
        for text in expected:
            hits = [(g, v) for g in left if (v := self._match(text, g)) is not None]
            assert len(hits) == 1, f"{text!r} matches {len(hits)} of the result lines {got!r}"
            left.remove(hits[0][0])
            self._bind(hits[0][1])

    def finish(self) -> None:
        """Check that the shim wrote no line (R or other) beyond the ones the scripts expected."""
        self.gahp.wait_idle()
        time.sleep(0.2)
        assert self.gahp.r_count == self.r_expected
        assert self.gahp.lines.empty(), f"unexpected line {self.gahp.lines.get_nowait()!r}"
