"""Unit tests of the wire format and of the pure parsing helpers."""

from __future__ import annotations

import random

import pytest

from clients.gahp.commands import QueryBatches, SetLease, fit_groups, parse
from clients.gahp.context import CommandError, ParseError
from clients.gahp.fetch import FetchOutput
from clients.gahp.protocol import Line, LineParser, escape, format_line
from clients.gahp.submit import Submit
from tests.gahp.harness import esc, tokens


def feed(data: bytes, step: int | None = None) -> list[Line]:
    """Parse data in one go, or in chunks of `step` bytes."""
    parser = LineParser()
    if step is None:
        return parser.feed(data)
    return [line for i in range(0, len(data), step) for line in parser.feed(data[i : i + step])]


@pytest.mark.parametrize(
    ("wire", "args"),
    [
        (b"COMMANDS\r\n", ("COMMANDS",)),
        (b"COMMANDS\n", ("COMMANDS",)),
        (b"A hello\\ world\r\n", ("A", "hello world")),
        (b"A C:\\\\tmp\r\n", ("A", "C:\\tmp")),
        (b"A a\\\nb\r\n", ("A", "a\nb")),
        (b"A a\\\rb\r\n", ("A", "a\rb")),
        (b"A  b\r\n", ("A", "", "b")),
        (b"A b \r\n", ("A", "b", "")),
        (b"A\r \r\n", ("A", "")),
        (b"A x\ry\r\n", ("A", "xy")),
        (b"\r\n", ("",)),
        (b"A \\q\r\n", ("A", "q")),
        (b"A \\\\ \\ \r\n", ("A", "\\", " ")),
    ],
)
def test_parser_cases(wire: bytes, args: tuple[str, ...]) -> None:
    """Escapes, empty fields, CR handling and both line endings, whole and byte by byte."""
    assert feed(wire) == [Line(args)]
    assert feed(wire, step=1) == [Line(args)]


def test_several_lines_and_partial_tail() -> None:
    """Lines split across chunks; an unterminated tail stays pending."""
    parser = LineParser()
    assert parser.feed(b"A 1\r\nB 2") == [Line(("A", "1"))]
    assert parser.pending
    assert parser.feed(b"\nC\\") == [Line(("B", "2"))]
    assert parser.feed(b"\n\n") == [Line(("C\n",))]
    assert not parser.pending


def test_overlong_line_is_flagged_and_bounded() -> None:
    """A line over the limit becomes one overflow marker; the next line parses normally."""
    parser = LineParser(max_line_bytes=100)
    lines = parser.feed(b"X " + b"a\\ " * 200 + b"\r\nCOMMANDS\r\n")
    assert lines == [Line((), overflow=True), Line(("COMMANDS",))]


def test_escape_round_trip_random() -> None:
    """escape -> gridmanager-style tokenizer gives back the value, for awkward strings."""
    rng = random.Random(7)
    alphabet = " \\\r\n\tab#$:é\x00"
    for _ in range(300):
        values = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(6))) for _ in range(4)]
        line = format_line(values)
        assert line.endswith(b"\n") and line.count(b"\n") == 1 + sum(v.count("\n") for v in values)
        assert tokens(line[:-1]) == values
        wire = " ".join(esc(v) for v in values).encode() + b"\r\n"
        assert " ".join(escape(v) for v in values).encode() + b"\r\n" == wire
        assert feed(wire) == [Line(tuple(values))]


def test_format_line_prefix_and_escaping() -> None:
    """Free text is one token; the prefix is glued to the first token."""
    assert format_line(["7", "error: bad thing"], "GAHP:") == b"GAHP:7 error:\\ bad\\ thing\n"


SUBMIT_ONE = ["b", "app", "1", "j", "2", "x y", "", "1", "/p/in", "in"]


def test_submit_with_and_without_params() -> None:
    """Both shapes parse; six trailing fields become params, NULL means unset."""
    old = Submit.parse(SUBMIT_ONE)
    assert old.jobs[0].args == ("x y", "") and old.jobs[0].inputs == ("/p/in",)
    assert old.rest_params() == {}
    new = Submit.parse([*SUBMIT_ONE, "1e12", "NULL", "", "2e9", "86400", "3"])
    assert new.rest_params() == {
        "rsc_fpops_est": 1e12,
        "rsc_disk_bound": 2e9,
        "delay_bound": 86400.0,
        "app_version_num": 3,
    }
    # A whole number, 0 meaning any version; anything else is refused before any request.
    any_version = Submit.parse([*SUBMIT_ONE, "NULL", "NULL", "NULL", "NULL", "NULL", "0"])
    assert any_version.rest_params() == {}
    assert Submit.parse([*SUBMIT_ONE, *["NULL"] * 5, "7.0"]).rest_params() == {"app_version_num": 7}
    with pytest.raises(CommandError, match=r"bad app_version_num '7\.5'"):
        Submit.parse([*SUBMIT_ONE, *["NULL"] * 5, "7.5"]).rest_params()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["b", "app"],
        ["b", "app", "x"],
        ["b", "app", "2", "j", "0", "0"],
        ["b", "app", "1", "j", "3", "a", "b"],
        ["b", "app", "1", "j", "0", "2", "/p", "n"],
        ["b", "app", "1", "j", "0", "0", "1", "2", "3"],
        ["b", "app", "1", "j", "0", "0", "1", "2", "3", "4", "5", "6", "7"],
        ["b", "app", "9" * 40],
    ],
)
def test_submit_malformed(args: list[str]) -> None:
    """Every count mismatch is a parse error (answered E)."""
    with pytest.raises(ParseError):
        Submit.parse(args)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("BOINC_PING", ["x"]),
        ("BOINC_QUERY_BATCHES", ["0"]),
        ("BOINC_QUERY_BATCHES", ["0", "2", "b"]),
        ("BOINC_QUERY_BATCHES", ["soon", "1", "b"]),
        ("BOINC_QUERY_BATCHES", ["-1", "1", "b"]),
        ("BOINC_FETCH_OUTPUT", ["j", "/iwd", "err", "MAYBE", "0"]),
        ("BOINC_FETCH_OUTPUT", ["j", "/iwd", "err", "SOME", "1", "a"]),
        ("BOINC_FETCH_OUTPUT", ["j", "/iwd", "err", "ALL"]),
        ("BOINC_ABORT_JOBS", []),
        ("BOINC_RETIRE_BATCH", []),
        ("BOINC_RETIRE_BATCH", ["a", "b"]),
        ("BOINC_SET_LEASE", ["b"]),
        ("BOINC_SET_LEASE", ["b", "tomorrow"]),
        ("BOINC_FROBNICATE", []),
    ],
)
def test_other_commands_malformed(name: str, args: list[str]) -> None:
    """Wrong argument counts and unparsable numbers are parse errors."""
    with pytest.raises(ParseError):
        parse(name, args)


def test_time_tokens() -> None:
    """min_mod_time accepts 0, integers and %f floats; the lease accepts integers."""
    assert QueryBatches.parse(["0", "1", "b"]).since == "0"
    assert QueryBatches.parse(["17", "0"]).since == "17"
    query = QueryBatches.parse(["1700000131.000000", "2", "a", "b"])
    assert (query.since, query.batches) == ("1700000131", ("a", "b"))
    assert SetLease.parse(["b", "1700021610"]).until == 1700021610
    fetch = FetchOutput.parse(["j", "/i", "e", "SOME", "1", "a", "b"])
    assert fetch.pairs == (("a", "b"),) and not fetch.fetch_all


def test_fit_groups_keeps_counts_consistent_and_rotates() -> None:
    """A truncated reply is a window of whole pairs; successive windows cover every job."""
    groups = [[(f"b{g}#{i}", "DONE") for i in range(50)] for g in range(3)]
    assert fit_groups(groups, 10**6, 0) is None
    seen: set[str] = set()
    rotation = 0
    for _ in range(20):  # bounded; coverage must complete well before
        fitted = fit_groups(groups, 300, rotation)
        assert fitted is not None and len(fitted) == 3
        shown = [name for g in fitted for name, _ in g]
        assert len(shown) > 0 and sum(len(n) + 6 for n in shown) <= 300
        for g, fit in zip(groups, fitted, strict=True):
            assert all(pair in g for pair in fit)
        seen |= set(shown)
        rotation += len(shown)
    assert seen == {name for g in groups for name, _ in g}
