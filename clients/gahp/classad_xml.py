"""ClassAds in XML, as HTCondor's gridmanager sends job ads and reads status ads.

The reader takes `<c>...</c>`, optionally inside `<classads>` after an XML prolog, in
the element vocabulary of HTCondor's ClassAdXMLParser (`s i r b un er l c e at rt`,
and the old `n t`). XML is parsed by defusedxml (no entity expansion); `&amp; &lt;
&gt;` are decoded first, then ClassAd string escapes. Stray text, mixed content,
missing or repeated values are errors. The writer produces the compact form HTCondor's
ClassAdXMLUnParser writes, which HTCondor reads back to the same values.
"""

from __future__ import annotations

import math
import re
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from clients.gahp.classad import (
    MAX_AD_CHARS,
    MAX_DEPTH,
    ClassAd,
    ClassAdError,
    Expr,
    Special,
    Value,
    escape,
    unescape,
)
from clients.gahp.classad_text import parse_expression, parse_text


def parse(text: str) -> ClassAd:
    """Parse either form, told apart by the first character that is not white space."""
    if len(text) > MAX_AD_CHARS:
        raise ClassAdError(f"ClassAd longer than {MAX_AD_CHARS} characters")
    start = text.lstrip()[:1]
    if start == "<":
        return parse_xml(text)
    if start == "[":
        return parse_text(text)
    raise ClassAdError("not a ClassAd: expected XML (<c>...</c>) or [ name = value; ... ]")


_INT = re.compile(r"-?\d+")
_REAL = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_REAL_WORDS = {"NaN": math.nan, "INF": math.inf, "-INF": -math.inf}


def parse_xml(text: str) -> ClassAd:
    """Parse `<c>...</c>`, optionally wrapped in `<classads>` after an XML prolog."""
    try:
        root = SafeET.fromstring(text)
    except (ParseError, DefusedXmlException) as exc:
        raise ClassAdError(f"malformed XML: {exc}") from None
    if root.tag == "classads":
        _no_attributes(root)
        _blank(root.text, "classads")
        ads = list(root)
        if len(ads) != 1:
            raise ClassAdError(f"expected exactly one ClassAd, found {len(ads)}")
        for child in ads:
            _blank(child.tail, "classads")
        root = ads[0]
    if root.tag != "c":
        raise ClassAdError(f"expected a <c> element, found <{root.tag}>")
    return _xml_ad(root, 0)


def _blank(text: str | None, where: str) -> None:
    if text is not None and text.strip():
        raise ClassAdError(f"unexpected text {text.strip()[:20]!r} in <{where}>")


def _no_attributes(elem: Element, allowed: tuple[str, ...] = ()) -> None:
    extra = set(elem.attrib) - set(allowed)
    if extra:
        raise ClassAdError(f"unexpected XML attribute {sorted(extra)[0]!r} on <{elem.tag}>")


def _xml_ad(elem: Element, depth: int) -> ClassAd:
    if depth > MAX_DEPTH:
        raise ClassAdError("ClassAds nested too deeply")
    _no_attributes(elem)
    _blank(elem.text, "c")
    ad = ClassAd()
    for attr in elem:
        _blank(attr.tail, "c")
        if attr.tag != "a":
            raise ClassAdError(f"expected <a> inside <c>, found <{attr.tag}>")
        _no_attributes(attr, ("n",))
        name = attr.get("n")
        if not name:
            raise ClassAdError("an <a> element has no n attribute")
        _blank(attr.text, "a")
        values = list(attr)
        if len(values) != 1:
            raise ClassAdError(f"attribute {name} has {len(values)} values, expected one")
        _blank(values[0].tail, "a")
        ad.add(name, _xml_value(values[0], name, depth))
    return ad


def _xml_value(elem: Element, name: str, depth: int) -> Value:
    tag = elem.tag
    if tag == "c":
        return _xml_ad(elem, depth + 1)
    if tag == "l":
        if depth > MAX_DEPTH:
            raise ClassAdError("lists nested too deeply")
        _no_attributes(elem)
        _blank(elem.text, "l")
        items = []
        for item in elem:
            _blank(item.tail, "l")
            items.append(_xml_value(item, name, depth + 1))
        return items
    if tag == "b":
        _no_attributes(elem, ("v",))
        _leaf(elem, name)
        flag = (elem.get("v") or "").lower()
        if flag not in ("t", "f"):
            raise ClassAdError(f'attribute {name}: <b> needs v="t" or v="f"')
        return flag == "t"
    if tag in ("un", "er"):
        _no_attributes(elem)
        _leaf(elem, name)
        return Special.UNDEFINED if tag == "un" else Special.ERROR
    _no_attributes(elem)
    text = _leaf(elem, name)
    if tag == "s":
        return unescape(text)
    if tag in ("i", "r", "n"):
        if tag != "r" and _INT.fullmatch(text):
            return int(text)
        if tag != "i" and text in _REAL_WORDS:
            return _REAL_WORDS[text]
        if tag != "i" and _REAL.fullmatch(text):
            return float(text)
        raise ClassAdError(f"attribute {name}: {text[:40]!r} is not a number for <{tag}>")
    if tag == "e":
        try:
            return parse_expression(text)
        except ClassAdError as exc:
            raise ClassAdError(f"attribute {name}: {exc}") from None
    if tag in ("at", "rt", "t"):
        if not text or '"' in text or "\\" in text:
            raise ClassAdError(f"attribute {name}: bad time {text[:40]!r}")
        function = "relTime" if tag == "rt" else "absTime"
        return Expr(f'{function}("{text}")')
    raise ClassAdError(f"attribute {name}: unknown value element <{tag}>")


def _leaf(elem: Element, name: str) -> str:
    if len(elem):
        raise ClassAdError(f"attribute {name}: <{elem.tag}> may not contain elements")
    return elem.text or ""


def to_xml(ad: ClassAd) -> str:
    """The compact XML form, as HTCondor's ClassAdXMLUnParser writes it."""
    return "<c>" + "".join(f'<a n="{_xml_escape(n)}">{_xml(v)}</a>' for n, v in ad.items()) + "</c>"


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _xml(value: Value) -> str:
    if isinstance(value, bool):
        return f'<b v="{"t" if value else "f"}"/>'
    if isinstance(value, int):
        return f"<i>{value}</i>"
    if isinstance(value, float):
        return f"<r>{_real(value)}</r>"
    if isinstance(value, str):
        return f"<s>{_xml_escape(escape(value, quote=False))}</s>"
    if isinstance(value, Special):
        return "<un/>" if value is Special.UNDEFINED else "<er/>"
    if isinstance(value, Expr):
        return f"<e>{_xml_escape(value.text)}</e>"
    if isinstance(value, list):
        return "<l>" + "".join(_xml(v) for v in value) + "</l>"
    return to_xml(value)


def _real(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return f"{value:1.15E}"
