"""The new ClassAd text syntax: `[ Cmd = "uppercase"; Args = "a b"; Req = x > 3 ]`.

A recursive-descent reader over a small tokenizer. Literal values (strings, numbers,
booleans, undefined, error, lists and nested ads of literals) become Python values;
any other expression is checked for shape (operands and operators alternate, brackets
nest, no missing `;`) and kept as `Expr` source text. Comments and adjacent string
literals are accepted as HTCondor accepts them; `3K`, `010` and trailing junk are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clients.gahp.classad import MAX_DEPTH, ClassAd, ClassAdError, Expr, Special, Value, unescape

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|/\*.*?\*/|//[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<qname>'(?:[^'\\]|\\.)*')
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>>>>|=\?=|=!=|==|!=|<=|>=|&&|\|\||<<|>>|[-+*/%!~|^&?:<>.,;=()\[\]{}])
    """,
    re.VERBOSE | re.DOTALL,
)
_BINARY = {"==", "!=", "=?=", "=!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/"}
_BINARY |= {"%", "|", "^", "&", "<<", ">>", ">>>", "?", ":"}
_PREFIX = {"-", "+", "!", "~"}
_CLOSE = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):  # each match consumes at least one character
        match = _TOKEN.match(text, pos)
        if match is None:
            snippet = text[pos : pos + 20]
            if snippet[:1] in "\"'":
                raise ClassAdError(f"unterminated quote at offset {pos}")
            raise ClassAdError(f"unexpected {snippet!r} at offset {pos}")
        kind = match.lastgroup or ""
        if kind == "number" and re.match(r"[A-Za-z0-9_.]", text[match.end() : match.end() + 1]):
            raise ClassAdError(f"malformed number at offset {pos}")
        if kind == "number" and re.fullmatch(r"0\d+", match[0]):
            raise ClassAdError(f"number with a leading zero at offset {pos}")
        if kind != "ws":
            toks.append(_Tok(kind, match[0], pos, match.end()))
        pos = match.end()
    return toks


class _Parser:
    """Recursive descent over tokens: records, and expressions checked for shape."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self, offset: int = 0) -> _Tok | None:
        index = self.pos + offset
        return self.toks[index] if index < len(self.toks) else None

    def next_is(self, text: str | None = None, kind: str | None = None) -> bool:
        tok = self.peek()
        return tok is not None and text in (None, tok.text) and kind in (None, tok.kind)

    def take(self, text: str | None = None) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise ClassAdError(f"unexpected end of input, expected {text or 'more'!r}")
        if text is not None and tok.text != text:
            raise ClassAdError(f"expected {text!r} at offset {tok.start}, got {tok.text[:20]!r}")
        self.pos += 1
        return tok

    def record(self, depth: int) -> ClassAd:
        """'[' (name '=' expr)? (';' (name '=' expr)?)* ']'."""
        if depth > MAX_DEPTH:
            raise ClassAdError("ClassAds nested too deeply")
        self.take("[")
        ad = ClassAd()
        while True:  # each turn consumes tokens, ends at ']'
            tok = self.peek()
            if tok is None:
                raise ClassAdError("missing ']' at the end of the ClassAd")
            if tok.text == "]":
                self.pos += 1
                return ad
            if tok.text == ";":
                self.pos += 1
                continue
            if tok.kind != "name":
                raise ClassAdError(f"expected an attribute name at offset {tok.start}")
            self.pos += 1
            self.take("=")
            value = self.value(depth, (";", "]"))
            after = self.peek()
            if after is not None and after.text not in (";", "]"):
                raise ClassAdError(f"expected ';' after attribute {tok.text}")
            ad.add(tok.text, value)

    def value(self, depth: int, stops: tuple[str, ...]) -> Value:
        """One expression up to a stop token; a literal becomes its Python value."""
        first = self.pos
        tok = self.peek()
        if tok is not None and tok.text == "[":
            nested = self.record(depth + 1)
            if self._at_stop(stops):
                return nested
            self.pos = first
        if tok is not None and tok.text == "{":
            items = self._literal_list(depth, stops)
            if items is not None:
                return items
            self.pos = first
        self.expression(depth, stops)
        span = self.toks[first : self.pos]
        if not span:
            raise ClassAdError(f"missing value at offset {tok.start if tok else len(self.text)}")
        literal = _literal(span)
        if literal is not None:
            return literal
        return Expr(self.text[span[0].start : span[-1].end])

    def _at_stop(self, stops: tuple[str, ...]) -> bool:
        nxt = self.peek()
        return nxt is None or nxt.text in stops

    def _literal_list(self, depth: int, stops: tuple[str, ...]) -> list[Value] | None:
        self.take("{")
        items: list[Value] = []
        if self.next_is("}"):
            self.pos += 1
            return items if self._at_stop(stops) else None
        while True:  # each turn consumes one element
            item = self.value(depth + 1, (",", "}"))
            if isinstance(item, Expr):
                return None
            items.append(item)
            if self.take().text == "}":
                return items if self._at_stop(stops) else None

    def expression(self, depth: int, stops: tuple[str, ...]) -> None:
        """Check operand/operator alternation and bracket nesting up to a stop token."""
        if depth > MAX_DEPTH:
            raise ClassAdError("expression nested too deeply")
        expect_operand = True
        prev: _Tok | None = None
        while not self._at_stop(stops):  # each turn consumes at least one token
            tok = self.take()
            text = tok.text
            if expect_operand:
                if text in _PREFIX or (text == ":" and prev is not None and prev.text == "?"):
                    pass
                elif tok.kind in ("string", "number", "name", "qname"):
                    expect_operand = tok.kind == "name" and text.lower() in ("is", "isnt")
                elif text == "." and self.next_is(kind="name"):
                    self.pos += 1
                    expect_operand = False
                elif text in ("(", "{"):
                    self._group(depth, text)
                    expect_operand = False
                elif text == "[":
                    self.pos -= 1
                    self.record(depth + 1)
                    expect_operand = False
                else:
                    raise ClassAdError(f"unexpected {text!r} at offset {tok.start}")
            elif text in _BINARY or (tok.kind == "name" and text.lower() in ("is", "isnt")):
                expect_operand = True
            elif text == "." and self.next_is(kind="name"):
                self.pos += 1
            elif text == "[":
                self.expression(depth + 1, ("]",))
                self.take("]")
            elif text == "(" and prev is not None and prev.kind == "name":
                self._group(depth, "(")
            elif tok.kind == "string" and prev is not None and prev.kind == "string":
                pass  # adjacent strings are concatenated
            else:
                raise ClassAdError(f"unexpected {text!r} at offset {tok.start} (missing ';'?)")
            prev = tok
        if expect_operand:
            nxt = self.peek()
            where = nxt.start if nxt is not None else len(self.text)
            raise ClassAdError(f"incomplete expression at offset {where}")

    def _group(self, depth: int, opener: str) -> None:
        """The comma-separated contents of (...) or {...}, the opener already taken."""
        closer = _CLOSE[opener]
        if self.next_is(closer):
            self.pos += 1
            return
        while True:  # each turn consumes one element
            self.expression(depth + 1, (",", closer))
            if self.take().text == closer:
                return


def _literal(span: list[_Tok]) -> Value | None:
    """The Python value of a literal token sequence, None for any other expression."""
    if all(t.kind == "string" for t in span):
        return "".join(unescape(t.text[1:-1]) for t in span)
    sign = 1
    if len(span) == 2 and span[0].text == "-":
        sign, span = -1, span[1:]
    if len(span) != 1:
        return None
    tok = span[0]
    if tok.kind == "number":
        if re.fullmatch(r"\d+", tok.text):
            return sign * int(tok.text)
        return sign * float(tok.text)
    if sign == 1 and tok.kind == "name":
        word = tok.text.lower()
        if word in ("true", "false"):
            return word == "true"
        if word in ("undefined", "error"):
            return Special(word)
    return None


def parse_text(text: str) -> ClassAd:
    """Parse `[ name = expr; ... ]`; nothing but white space or comments may follow."""
    parser = _Parser(text)
    ad = parser.record(0)
    extra = parser.peek()
    if extra is not None:
        raise ClassAdError(f"unexpected {extra.text[:20]!r} after the ClassAd")
    return ad


def parse_expression(text: str) -> Value:
    """Parse one expression (the content of an XML <e> element)."""
    parser = _Parser(text)
    value = parser.value(0, ())
    extra = parser.peek()
    if extra is not None:
        raise ClassAdError(f"unexpected {extra.text[:20]!r} in expression")
    return value
