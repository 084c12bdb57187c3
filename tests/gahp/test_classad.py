"""The strict ClassAd reader (XML and text syntax) and the XML writer.

Expected values were cross-checked against HTCondor's own parser (the `classad2` module
of the htcondor 25.x wheel), which reads the same input to the same values; where that
parser guesses (unknown escapes, duplicates, trailing junk), this one refuses.
"""

from __future__ import annotations

import math
import random

import pytest

from clients.gahp.classad import ClassAd, ClassAdError, Expr, Special, escape, unescape
from clients.gahp.classad_xml import parse, parse_xml, to_xml

# What the gridmanager's ClassAdXMLUnParser writes (compact spacing), abridged.
GRIDMANAGER_AD = (
    '<c><a n="ClusterId"><i>42</i></a><a n="ProcId"><i>0</i></a>'
    '<a n="Cmd"><s>/home/alice/uppercase</s></a>'
    '<a n="Arguments"><s>--label \'hello world\' C:\\\\tmp "q"</s></a>'
    '<a n="Iwd"><s>/home/alice/run</s></a>'
    '<a n="Rank"><r>0.0</r></a><a n="RemoteWallClockTime"><r>3.605250000000000E+03</r></a>'
    '<a n="WantCheckpoint"><b v="f"/></a><a n="LeaveJobInQueue"><b v="t"/></a>'
    '<a n="Requirements"><e>(Arch == "X86_64") &amp;&amp; (Memory &gt;= 1024)</e></a>'
    '<a n="PeriodicRemove"><e>false</e></a><a n="Nums"><l><i>1</i><s>a</s></l></a>'
    '<a n="X"><un/></a><a n="Y"><er/></a><a n="Note"><s>a &lt;b&gt; &amp; c\\n\\t\\303\\251</s></a>'
    "</c>"
)


def test_gridmanager_xml_ad() -> None:
    """Every value element of the compact form, with entities and ClassAd escapes."""
    ad = parse(GRIDMANAGER_AD)
    assert ad.items() == [
        ("ClusterId", 42),
        ("ProcId", 0),
        ("Cmd", "/home/alice/uppercase"),
        ("Arguments", "--label 'hello world' C:\\tmp \"q\""),
        ("Iwd", "/home/alice/run"),
        ("Rank", 0.0),
        ("RemoteWallClockTime", 3605.25),
        ("WantCheckpoint", False),
        ("LeaveJobInQueue", True),
        ("Requirements", Expr('(Arch == "X86_64") && (Memory >= 1024)')),
        ("PeriodicRemove", False),
        ("Nums", [1, "a"]),
        ("X", Special.UNDEFINED),
        ("Y", Special.ERROR),
        ("Note", "a <b> & c\n\té"),
    ]
    assert ad.get("cmd") == ad.get("CMD") == "/home/alice/uppercase"
    assert "clusterid" in ad and "Nope" not in ad and len(ad) == 15


def test_xml_file_form_and_white_space() -> None:
    """The prolog, DOCTYPE and <classads> wrapper, and indentation between elements."""
    text = (
        '<?xml version="1.0"?>\n<!DOCTYPE classads SYSTEM "classads.dtd">\n<classads>\n'
        '<c>\n    <a n="A"> <s> two spaces </s> </a>\n    <a n="B"><s></s></a>\n</c>\n'
        "</classads>\n"
    )
    assert parse(text).items() == [("A", " two spaces "), ("B", "")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('<c><a n="A"><s>x</s></a>', "malformed XML"),
        ('<c><a n="A"><s>x</s></a></c><c/>', "malformed XML"),
        ("<classads><c/><c/></classads>", "exactly one ClassAd"),
        ('<ad><a n="A"><s>x</s></a></ad>', "expected a <c> element"),
        ('<c>junk<a n="A"><s>x</s></a></c>', "unexpected text"),
        ('<c><a n="A"><s>x<b/></s></a></c>', "may not contain elements"),
        ("<c><a><s>x</s></a></c>", "no n attribute"),
        ('<c><a n="A"></a></c>', "0 values"),
        ('<c><a n="A"><s>x</s><s>y</s></a></c>', "2 values"),
        ('<c><a n="A"><s>x</s></a><a n="a"><i>1</i></a></c>', "given twice"),
        ('<c><a n="A"><i>x</i></a></c>', "not a number"),
        ('<c><a n="A"><i>+7</i></a></c>', "not a number"),
        ('<c><a n="A"><b v="yes"/></a></c>', 'v="t"'),
        ('<c><a n="A"><q>1</q></a></c>', "unknown value element"),
        ('<c><a n="A B"><s>x</s></a></c>', "bad attribute name"),
        ('<c x="1"><a n="A"><s>x</s></a></c>', "unexpected XML attribute"),
        ('<c><a n="A"><s>a\\qb</s></a></c>', "unknown escape"),
        ('<c><a n="A"><s>a\\0b</s></a></c>', "\\0"),
        ('<c><a n="A"><e>(a &lt; 3</e></a></c>', "attribute A"),
        ('<!DOCTYPE c [<!ENTITY e "boom">]><c><a n="A"><s>&e;</s></a></c>', "malformed XML"),
        ("", "not a ClassAd"),
        ("Cmd = uppercase", "not a ClassAd"),
    ],
)
def test_malformed_xml(text: str, message: str) -> None:
    """Whatever HTCondor's lenient reader would guess at is refused, with a reason."""
    with pytest.raises(ClassAdError, match=None) as info:
        parse(text)
    assert message in str(info.value)


def test_text_syntax_literals_and_expressions() -> None:
    """Literals become values; other expressions stay checked source text."""
    ad = parse(
        """[ /* a comment */ A = -3; B = 1.5e3; C = .5; D = TRUE; E = undefined; F = error;
             G = { 1, "a", { } }; H = [ x = 1; y = "z" ]; I = a + b; J = "con" "cat";
             K = f(1, 2) && MY.x =?= .y ? "yes" : list[3]; L = x is undefined;
             M = a ?: b; N = "C:\\\\tmp \\"q\\" \\101"; // trailing comment
             ; O = { a, 1 }; ]"""
    )
    assert ad.items() == [
        ("A", -3),
        ("B", 1500.0),
        ("C", 0.5),
        ("D", True),
        ("E", Special.UNDEFINED),
        ("F", Special.ERROR),
        ("G", [1, "a", []]),
        ("H", ClassAd([("x", 1), ("y", "z")])),
        ("I", Expr("a + b")),
        ("J", "concat"),
        ("K", Expr('f(1, 2) && MY.x =?= .y ? "yes" : list[3]')),
        ("L", Expr("x is undefined")),
        ("M", Expr("a ?: b")),
        ("N", 'C:\\tmp "q" A'),
        ("O", Expr("{ a, 1 }")),
    ]
    assert parse("[]").items() == []
    assert parse("  [ A = 1 ]  \n").items() == [("A", 1)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[ A = 1", "missing ']'"),
        ('[ A = "x" B = 2 ]', "missing ';'"),
        ('[ A = "x" B ]', "missing ';'"),
        ("[ A = ]", "incomplete expression"),
        ("[ A = 1 + ]", "incomplete expression"),
        ("[ A = (1 ]", "unexpected ']'"),
        ("[ A = 1 ] junk", "after the ClassAd"),
        ("[ A = 3K ]", "malformed number"),
        ("[ A = 0x10 ]", "malformed number"),
        ("[ A = 010 ]", "leading zero"),
        ('[ A = "open ]', "unterminated quote"),
        ('[ A = "\\x" ]', "unknown escape"),
        ('[ A = "\\0" ]', "\\0"),
        ("[ A = 1; A = 2 ]", "given twice"),
        ("[ 'my attr' = 1 ]", "attribute name"),
        ("[ A = 1 $ ]", "unexpected '$"),
        ("[ A == 1 ]", "expected '='"),
    ],
)
def test_malformed_text(text: str, message: str) -> None:
    """Syntax errors are reported, never guessed around."""
    with pytest.raises(ClassAdError) as info:
        parse(text)
    assert message in str(info.value)


def test_string_escapes() -> None:
    """The ClassAd library's escapes, octal bytes joined as UTF-8, surrogates kept."""
    assert unescape(r"\a\b\f\n\r\t\v\\\"\'\?") == "\a\b\f\n\r\t\v\\\"'?"
    assert unescape(r"\1\12\123\1234\400") == "\x01\nSS4 0"
    assert unescape(r"\303\251") == "é"
    assert escape('a\\b "q"\n\x01\x7f') == 'a\\\\b \\"q\\"\\n\\001\\177'
    assert escape('"', quote=False) == '"'
    raw = b"\xff\xfe".decode("utf-8", "surrogateescape")
    assert unescape(escape(raw)) == raw


def test_xml_writer_exact_bytes() -> None:
    """The compact form HTCondor's ClassAdXMLUnParser writes, byte for byte."""
    ad = ClassAd(
        [
            ("UnicoreJobId", "b#1/b#1#0"),
            ("JobStatus", 4),
            ("ExitBySignal", False),
            ("RemoteWallClockTime", 3605.25),
            ("Zero", 0.0),
            ("Note", 'a\\b "q" <&> \n\t\x01 é'),
            ("L", [1, "x", Special.UNDEFINED, Special.ERROR]),
            ("E", Expr("a < b")),
            ("N", ClassAd([("x", True)])),
            ("Inf", math.inf),
        ]
    )
    assert to_xml(ad) == (
        '<c><a n="UnicoreJobId"><s>b#1/b#1#0</s></a><a n="JobStatus"><i>4</i></a>'
        '<a n="ExitBySignal"><b v="f"/></a>'
        '<a n="RemoteWallClockTime"><r>3.605250000000000E+03</r></a>'
        '<a n="Zero"><r>0.0</r></a>'
        '<a n="Note"><s>a\\\\b "q" &lt;&amp;&gt; \\n\\t\\001 é</s></a>'
        '<a n="L"><l><i>1</i><s>x</s><un/><er/></l></a><a n="E"><e>a &lt; b</e></a>'
        '<a n="N"><c><a n="x"><b v="t"/></a></c></a><a n="Inf"><r>INF</r></a></c>'
    )
    assert parse_xml(to_xml(ad)) == ad


def test_round_trip_of_awkward_strings() -> None:
    """Any string survives writer and reader, whatever bytes it holds (seeded, bounded)."""
    rng = random.Random(20261202)
    alphabet = " \\\"'<>&;=[]{}\n\r\t\x01\x7féü€\U0001f600aZ0" + "\udcff"
    for _ in range(300):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        ad = ClassAd([("S", value), ("L", [value, -1, 2.5])])
        assert parse(to_xml(ad)) == ad, repr(value)
        assert parse(f'[ S = "{escape(value)}" ]').get("S") == value, repr(value)
