"""The ClassAd data model of the UNICORE-style commands, and ClassAd string escapes.

A parsed ad maps attribute names (compared case-insensitively, as in HTCondor) to
Python values for literals, or to `Expr` (checked source text, never evaluated) for any
other expression. The two input forms live beside this module: `classad_text` (the
new ClassAd syntax `[ A = "x"; B = 3 ]`) and `classad_xml` (what HTCondor's
ClassAdXMLUnParser writes, `<c><a n="A"><s>x</s></a></c>`, and the writer for it).

Strings follow the ClassAd library exactly: backslash escapes (`\\\\`, `\\"`, `\\n`, octal
bytes joined as UTF-8...) are decoded. Anything the library would guess at (an unknown
escape, `\\0`, a duplicate attribute) is an error here, so a job never runs with a
value its author did not mean.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass

MAX_AD_CHARS = 4 * 1024 * 1024
MAX_DEPTH = 32
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ClassAdError(Exception):
    """The text is not a well-formed ClassAd; the message says where and why."""


class Special(enum.Enum):
    """The two ClassAd values that are neither numbers nor strings."""

    UNDEFINED = "undefined"
    ERROR = "error"


@dataclass(frozen=True)
class Expr:
    """An expression kept as (checked) ClassAd source text, never evaluated here."""

    text: str


class ClassAd:
    """Attributes in their order; names compare case-insensitively, as in HTCondor."""

    def __init__(self, items: list[tuple[str, Value]] | None = None) -> None:
        self._attrs: dict[str, tuple[str, Value]] = {}
        for name, value in items or []:
            self.add(name, value)

    def add(self, name: str, value: Value) -> None:
        """Add a new attribute; a name given twice is an error."""
        if not NAME.fullmatch(name):
            raise ClassAdError(f"bad attribute name {name[:80]!r}")
        if name.lower() in self._attrs:
            raise ClassAdError(f"attribute {name} is given twice")
        self._attrs[name.lower()] = (name, value)

    def get(self, name: str) -> Value | None:
        """The value of an attribute, None when absent."""
        item = self._attrs.get(name.lower())
        return None if item is None else item[1]

    def items(self) -> list[tuple[str, Value]]:
        """(name as written, value) pairs in order."""
        return list(self._attrs.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._attrs

    def __len__(self) -> int:
        return len(self._attrs)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._attrs.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClassAd):
            return NotImplemented
        return {k: v for k, (_, v) in self._attrs.items()} == {
            k: v for k, (_, v) in other._attrs.items()
        }

    def __repr__(self) -> str:
        return f"ClassAd({self.items()!r})"


Value = str | int | float | bool | Special | Expr | list["Value"] | ClassAd


_ESCAPES = {"b": 8, "t": 9, "n": 10, "f": 12, "r": 13, "a": 7, "v": 11}
_ESCAPES |= {"\\": 0x5C, '"': 0x22, "'": 0x27, "?": 0x3F}
_OCTAL = re.compile(r"[0-3][0-7]{0,2}|[4-7][0-7]?")


def unescape(body: str) -> str:
    """Decode ClassAd string escapes; octal escapes are bytes, joined as UTF-8."""
    out = bytearray()
    pos = 0
    while pos < len(body):  # each turn consumes at least one character
        char = body[pos]
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            pos += 1
            continue
        nxt = body[pos + 1 : pos + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            pos += 2
            continue
        octal = _OCTAL.match(body, pos + 1)
        if octal is None:
            raise ClassAdError(f"unknown escape \\{nxt!s} in a string")
        value = int(octal[0], 8)
        if value == 0:
            raise ClassAdError("a string may not contain \\0")
        out.append(value)
        pos = octal.end()
    return out.decode("utf-8", "surrogateescape")


def escape(value: str, *, quote: bool = True) -> str:
    """Encode a string body as the ClassAd unparser does; XML leaves `"` bare (quote=False)."""
    parts: list[str] = []
    for char in value:
        code = ord(char)
        if char == "\\":
            parts.append("\\\\")
        elif char == '"' and quote:
            parts.append('\\"')
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8: write it back as is
            parts.append(f"\\{code - 0xDC00:03o}")
        elif code < 0x20 or code == 0x7F:
            letter = next((k for k, v in _ESCAPES.items() if v == code and k.isalpha()), None)
            parts.append("\\" + letter if letter else f"\\{code:03o}")
        else:
            parts.append(char)
    return "".join(parts)
