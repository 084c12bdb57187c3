"""Replay transcripts written in gahp.md section 3 notation against a shim process.

`C> line\\r\\n` is sent byte for byte; `S< line\\n` must come back byte for byte. `R`
lines may legally arrive anywhere between lines (gahp.md 1.9), so they are counted, not
placed: each `S< R` waits for one more R, and the total must match in the end. The
result lines of one RESULTS come in completion order, which is timing dependent when
several commands run at once, so they are compared as a set; `S <n>` is exact. Before
each RESULTS every request the shim accepted must have finished (per its log), so
the block holds every result the transcript expects.
"""

from __future__ import annotations

import time

from tests.gahp.harness import Gahp, tokens


def parse(script: str, subs: dict[str, str]) -> list[tuple[str, bytes]]:
    """Turn transcript text into ("C", bytes to send) and ("S", expected line) steps."""
    steps: list[tuple[str, bytes]] = []
    for raw in script.strip().splitlines():
        line = raw.strip()
        for old, new in subs.items():
            line = line.replace(old, new)
        if line.startswith("C> "):
            assert line.endswith(r"\r\n"), line
            steps.append(("C", line[3:-4].encode() + b"\r\n"))
        elif line.startswith("S< "):
            assert line.endswith(r"\n"), line
            steps.append(("S", line[3:-2].encode()))
    return steps


class Replayer:
    """Replays scripts on one shim, keeping the running count of expected R lines."""

    def __init__(self, gahp: Gahp, subs: dict[str, str]) -> None:
        self.gahp = gahp
        self.subs = subs
        self.r_expected = 0

    def run(self, script: str) -> None:
        """Replay one script; raise AssertionError at the first difference."""
        steps = parse(script, self.subs)
        prefix = self.gahp.prefix
        block: list[bytes] | None = None  # expected result lines of the open RESULTS
        size = 0
        for kind, data in steps:
            if kind == "C":
                assert block is None, "RESULTS block cut short in the script"
                if data == b"RESULTS\r\n":
                    self.gahp.wait_idle()
                    block, size = [], -1
                self.gahp.send(data)
            elif data in (b"R", prefix + b"R"):
                self.r_expected += 1
                self.gahp.wait_r(self.r_expected)
            elif block is not None and size < 0:
                assert self.gahp.line() == data
                size = int(tokens(data.removeprefix(prefix))[1])
                block = None if size == 0 else block
            elif block is not None:
                block.append(data)
                if len(block) == size:
                    got = [self.gahp.line() for _ in range(size)]
                    assert sorted(got) == sorted(block)
                    block = None
            else:
                assert self.gahp.line() == data
        assert block is None, "script ended inside a RESULTS block"

    def finish(self) -> None:
        """Check that no R line came beyond the ones the scripts expected."""
        self.gahp.wait_idle()
        time.sleep(0.2)
        assert self.gahp.r_count == self.r_expected
