"""Drive `boinc-gahp` as a real subprocess over pipes, reading like the gridmanager does.

The splitter and tokenizer here are written independently of clients.gahp.protocol (a
test oracle must not share the code under test): a reply line ends at an unescaped LF,
a backslash makes the next byte literal, unescaped CR is dropped, every space splits.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 15.0


def tokens(line: bytes) -> list[str]:
    """Split one reply line into unescaped tokens, as the gridmanager's read_argv does."""
    out, cur, escaped = [], bytearray(), False
    for byte in line:
        if escaped:
            cur.append(byte)
            escaped = False
        elif byte == 0x5C:
            escaped = True
        elif byte == 0x20:
            out.append(cur.decode("utf-8", "surrogateescape"))
            cur = bytearray()
        elif byte != 0x0D:
            cur.append(byte)
    out.append(cur.decode("utf-8", "surrogateescape"))
    return out


def esc(value: str) -> str:
    """Escape one argument as the gridmanager's escapeGahpString does."""
    return "".join("\\" + c if c in " \\\r\n" else c for c in value)


def toml_value(value: Any) -> str:
    """Render a Python scalar as TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


class Gahp:
    """One shim process. Lines read are split into R notifications and everything else."""

    def __init__(
        self,
        tmp: Path,
        config: dict[str, Any] | None = None,
        prefix: str = "",
        config_text: str | None = None,
        config_in_env: bool = True,
    ) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        # Named by BOINC_GAHP_CONFIG, or found at the default $XDG_CONFIG_HOME location.
        self.config_path = tmp / "gahp.toml" if config_in_env else tmp / "xdg" / "boinc-gahp.toml"
        self.config_path.parent.mkdir(exist_ok=True)
        settings = {"log_level": "DEBUG", **(config or {})}
        if config_text is None:
            config_text = "".join(f"{k} = {toml_value(v)}\n" for k, v in settings.items())
        self.config_path.write_text(config_text)
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env |= {
            "HOME": str(tmp),
            "XDG_CONFIG_HOME": str(tmp / "xdg"),
            "PYTHONPATH": str(REPO),
            "NO_PROXY": "127.0.0.1",
        }
        if config_in_env:
            env["BOINC_GAHP_CONFIG"] = str(self.config_path)
        else:
            env.pop("BOINC_GAHP_CONFIG", None)
        self.stderr_path = tmp / "gahp-stderr.log"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "clients.gahp.main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=tmp,
            env=env,
        )
        self.prefix = prefix.encode()
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.r_count = 0
        self.r_lock = threading.Lock()
        self.r_event = threading.Condition(self.r_lock)
        self.all_lines: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        cur, escaped = bytearray(), False
        while chunk := self.proc.stdout.read1(65536):
            for byte in chunk:
                if escaped:
                    escaped = False
                elif byte == 0x5C:
                    escaped = True
                elif byte == 0x0A:
                    self._deliver(bytes(cur))
                    cur = bytearray()
                    continue
                cur.append(byte)
        if cur:
            self._deliver(bytes(cur))
        self.lines.put(None)

    def _deliver(self, line: bytes) -> None:
        self.all_lines.append(line)
        toks = tokens(line.removeprefix(self.prefix)) if line.startswith(self.prefix) else []
        if len(toks) == 1 and toks[0].startswith("R"):
            with self.r_lock:
                self.r_count += 1
                self.r_event.notify_all()
        else:
            self.lines.put(line)

    # ----- talking -----

    def send(self, data: bytes | str) -> None:
        """Write raw bytes (a str gets CR LF appended, like the gridmanager's lines)."""
        raw = data if isinstance(data, bytes) else data.encode() + b"\r\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def line(self, timeout: float = TIMEOUT) -> bytes:
        """The next line that is not an R notification."""
        try:
            item = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout} s; stderr:\n{self.stderr()}") from None
        if item is None:
            raise AssertionError(f"shim closed stdout; stderr:\n{self.stderr()}")
        return item

    def call(self, request: str, timeout: float = TIMEOUT) -> bytes:
        """Send one request and return its return line."""
        self.send(request)
        return self.line(timeout)

    def wait_r(self, count: int, timeout: float = TIMEOUT) -> None:
        """Wait until at least `count` R lines arrived in total."""
        with self.r_lock:
            ok = self.r_event.wait_for(lambda: self.r_count >= count, timeout)
        assert ok, f"expected {count} R lines, saw {self.r_count}; stderr:\n{self.stderr()}"

    def results(self) -> list[bytes]:
        """One RESULTS exchange: check `S <n>` and return the n result lines."""
        head = tokens(self.call("RESULTS").removeprefix(self.prefix))
        assert head[0] == "S" and len(head) == 2, head
        return [self.line().removeprefix(self.prefix) for _ in range(int(head[1]))]

    def collect(self, reqids: list[str], timeout: float = 30.0) -> dict[str, list[str]]:
        """Poll RESULTS until every reqid answered; each exactly once."""
        got: dict[str, list[str]] = {}
        deadline = time.monotonic() + timeout
        while len(got) < len(reqids):  # bounded by the deadline
            assert time.monotonic() < deadline, f"missing {set(reqids) - set(got)}"
            for raw in self.results():
                toks = tokens(raw)
                assert toks[0] in reqids and toks[0] not in got, toks
                got[toks[0]] = toks[1:]
            if len(got) < len(reqids):
                time.sleep(0.05)
        return got

    def run(self, request: str, reqid: str, timeout: float = 30.0) -> list[str]:
        """Send one async request, expect S, return its result fields."""
        assert self.call(request) == b"S"
        return self.collect([reqid], timeout)[reqid]

    def startup(self, url: str | None = None, token: str | None = None) -> None:
        """Banner, COMMANDS, ASYNC_MODE_ON, and optionally BOINC_SELECT_PROJECT."""
        assert self.line().startswith(b"$GahpVersion: ")
        assert self.call("COMMANDS").startswith(b"S ")
        assert self.call("ASYNC_MODE_ON") == b"S"
        if url is not None and token is not None:
            assert self.call(f"BOINC_SELECT_PROJECT {esc(url)} {esc(token)}") == b"S"

    # ----- ending -----

    def close_stdin(self) -> None:
        """Signal EOF, as the gridmanager does when it goes away."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def wait(self, timeout: float = TIMEOUT) -> int:
        """Wait for the process to exit; return its status."""
        return self.proc.wait(timeout)

    def wait_idle(self, timeout: float = TIMEOUT) -> None:
        """Wait until every request the shim accepted has finished, per its own log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # bounded by the deadline
            text = self.stderr()
            accepted = re.findall(r"accepted (\S+ \d+)", text)
            finished = re.findall(r"finished (\S+ \d+)", text)
            if sorted(accepted) == sorted(finished):
                return
            time.sleep(0.02)
        raise AssertionError(f"requests still running; stderr:\n{self.stderr()}")

    def stderr(self) -> str:
        """What the shim logged so far."""
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        """End the process we started (EOF first, kill if it lingers) and close pipes."""
        with contextlib.suppress(BrokenPipeError):
            self.close_stdin()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
