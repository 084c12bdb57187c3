"""GAHP wire format: the char-wise request parser and the escaping of reply tokens.

The gridmanager escapes exactly four characters (space, backslash, CR, LF) with a
backslash, separates arguments with single spaces (so empty arguments survive as two
adjacent spaces), ignores unescaped CR and ends a line at an unescaped LF (gahp.md 1.2,
1.3). A readline()+split() parser gets escaped newlines and empty fields wrong, hence
this state machine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_SPECIAL = re.compile(rb"[\\ \r\n]")
_TO_ESCAPE = re.compile(r"([\\ \r\n])")
_BACKSLASH, _SPACE, _CR = 0x5C, 0x20, 0x0D

# Bytes are decoded with surrogateescape so that any input (file names that are not
# UTF-8, random garbage) round-trips through str without raising.
ENCODING = "utf-8"
ERRORS = "surrogateescape"


@dataclass(frozen=True)
class Line:
    """One request line: its unescaped arguments, or `overflow` when it was too long."""

    args: tuple[str, ...]
    overflow: bool = False


class LineParser:
    """Incremental parser turning raw stdin bytes into argument lists."""

    def __init__(self, max_line_bytes: int = 64 * 1024 * 1024) -> None:
        self._max = max_line_bytes
        self._args: list[str] = []
        self._cur = bytearray()
        self._escape = False
        self._size = 0
        self._overflow = False

    def feed(self, data: bytes) -> list[Line]:
        """Consume a chunk of bytes and return every line it completed."""
        lines: list[Line] = []
        pos, end = 0, len(data)
        while pos < end:  # bounded: pos grows by at least one byte per turn
            if self._escape:
                self._take(data[pos : pos + 1])
                self._escape = False
                pos += 1
                continue
            match = _SPECIAL.search(data, pos)
            stop = match.start() if match else end
            self._take(data[pos:stop])
            if match is None:
                break
            char = data[stop]
            pos = stop + 1
            if char == _BACKSLASH:
                self._escape = True
            elif char == _SPACE:
                self._split()
            elif char == _CR:
                continue
            else:
                lines.append(self._finish())
        return lines

    @property
    def pending(self) -> bool:
        """True when a line has started but has not been terminated yet."""
        return bool(self._args or self._cur or self._escape or self._overflow)

    def _take(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size > self._max:
            # Keep scanning for the terminating LF but stop storing: memory stays bounded.
            self._overflow = True
            self._args.clear()
            self._cur.clear()
        elif not self._overflow:
            self._cur += chunk

    def _split(self) -> None:
        self._size += 1
        if not self._overflow:
            self._args.append(self._cur.decode(ENCODING, ERRORS))
            self._cur.clear()

    def _finish(self) -> Line:
        self._split()
        line = Line(args=() if self._overflow else tuple(self._args), overflow=self._overflow)
        self._args = []
        self._cur.clear()
        self._size = 0
        self._overflow = False
        return line


def escape(value: str) -> str:
    """Escape one token the way the gridmanager's escapeGahpString() does."""
    return _TO_ESCAPE.sub(r"\\\1", value)


def format_line(tokens: Sequence[str], prefix: str = "") -> bytes:
    """Render reply tokens as one LF-terminated protocol line."""
    text = prefix + " ".join(escape(token) for token in tokens) + "\n"
    return text.encode(ENCODING, ERRORS)


def format_raw(text: str, prefix: str = "") -> bytes:
    """Render an already escaped line (banner, COMMANDS reply) with the prefix."""
    return (prefix + text + "\n").encode(ENCODING, ERRORS)
