"""A display filter's text → a tree: the lexer and parser of Wireshark's display-filter language.

The grammar (the common part of Wireshark 4.0's, doc/wireshark-filter.adoc and
epan/dfilter/grammar.lemon), loosest first::

    expr     := and_expr (("or" | "||") and_expr)*
    and_expr := unary (("and" | "&&") unary)*
    unary    := ("not" | "!") unary | "(" expr ")" | test
    test     := FIELD                                    existence: the field is in the frame
              | FIELD OP VALUE                           OP: == != === !== < <= > >= (eq ne any_eq
                                                         all_ne all_eq any_ne lt le gt ge) contains
              | FIELD ["not"] "in" "{" member ("," member)* "}"
    member   := VALUE | VALUE ".." VALUE                 a value or an inclusive range; commas between
    VALUE    := WORD | STRING | FIELD                    a field: compared with the frame's own value

("and" binds tighter than "or", as in Wireshark 4.0, which warns about mixing
them without parentheses.) A VALUE is a word (a number, an address, a CIDR
block, colon-separated bytes) or a quoted string; what it means is decided by
the field it is compared with (``fields``). Every node keeps its token, so an
error can put a caret under it: ``FilterError``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import UsageError

__all__ = ["FilterError", "Token", "FieldTest", "Not", "Binary", "parse", "OPERATORS"]


class FilterError(UsageError):
    """A display filter that cannot be read: the message quotes it with a caret under the token."""

    def __init__(self, text: str, position: int, width: int, problem: str, fix: str):
        super().__init__(problem, fix)
        caret = " " * position + "^" * max(width, 1)
        self.args = (f"{problem}: {fix}\n    {text}\n    {caret}",)     # (str(err) is args[0])
        self.text, self.position = text, position


@dataclass(frozen=True)
class Token:
    kind: str        # "word", "string", "op", "punct", "end"
    text: str        # as written (a string: its value, escapes read)
    pos: int         # where it starts in the filter
    width: int       # how many characters it covers


#: comparison operators, symbols and words → one name (Wireshark 4.0: "!=" is "all_ne", "!==" "any_ne")
OPERATORS = {"==": "eq", "eq": "eq", "any_eq": "eq", "!=": "ne", "ne": "ne", "all_ne": "ne",
             "===": "all_eq", "all_eq": "all_eq", "!==": "any_ne", "any_ne": "any_ne",
             "<": "lt", "lt": "lt", "<=": "le", "le": "le", ">": "gt", "gt": "gt", ">=": "ge", "ge": "ge",
             "contains": "contains"}
_LOGIC = {"and": "and", "&&": "and", "or": "or", "||": "or", "not": "not", "!": "not"}
_SYMBOLS = ["===", "!==", "==", "!=", "<=", ">=", "&&", "||", "..", "<", ">", "!", "(", ")", "{", "}", ","]
# a word: letters, digits, _ - : / joined by single dots ("80..90" is 80, "..", 90)
_WORD = re.compile(r"[A-Za-z0-9_\-:/]+(?:\.[A-Za-z0-9_\-:/]+)*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


@dataclass(frozen=True)
class FieldTest:
    """A test of one field: existence (``op`` None), a comparison (``value``), or ``in`` a set
    (``members``: values and (low, high) ranges)."""
    field: Token
    op: str | None = None
    op_token: Token | None = None
    value: Token | None = None
    members: tuple = ()


@dataclass(frozen=True)
class Not:
    operand: object


@dataclass(frozen=True)
class Binary:
    op: str          # "and" | "or"
    left: object
    right: object


def tokens(text: str) -> list[Token]:
    """The filter's tokens, then an "end" token."""
    out, i = [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        if text[i] == '"':
            value, j = _string(text, i)
            out.append(Token("string", value, i, j - i))
            i = j
            continue
        symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
        word = _WORD.match(text, i)
        if word:
            out.append(Token("word", word.group(), i, word.end() - i))
            i = word.end()
        elif symbol:
            out.append(Token("op" if symbol not in "(){}," else "punct", symbol, i, len(symbol)))
            i += len(symbol)
        else:
            raise FilterError(text, i, 1, f"'{text[i]}' is not part of the display-filter language",
                              "fields are compared with == != < <= > >= contains in, joined by and/or/not")
    out.append(Token("end", "", len(text), 1))
    return out


def _string(text: str, start: int) -> tuple[str, int]:
    """A quoted string from ``start`` (the quote): its value and where it ends."""
    chars, i = [], start + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(chars), i + 1
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", text[i + 2:i + 4]):
                chars.append(chr(int(text[i + 2:i + 4], 16)))
                i += 4
                continue
            chars.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        chars.append(c)
        i += 1
    raise FilterError(text, start, len(text) - start, "this string has no closing quote", 'end it with "')


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokens(text)
        self.i = 0

    def peek(self) -> Token:
        return self.toks[self.i]

    def take(self) -> Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def error(self, tok: Token, problem: str, fix: str):
        raise FilterError(self.text, tok.pos, tok.width, problem, fix)

    def logic(self, tok: Token) -> str | None:
        return _LOGIC.get(tok.text) if tok.kind in ("word", "op") else None

    def expr(self):
        node = self.and_expr()
        while self.logic(self.peek()) == "or":
            self.take()
            node = Binary("or", node, self.and_expr())
        return node

    def and_expr(self):
        node = self.unary()
        while self.logic(self.peek()) == "and":
            self.take()
            node = Binary("and", node, self.unary())
        return node

    def unary(self):
        tok = self.peek()
        if self.logic(tok) == "not":
            self.take()
            return Not(self.unary())
        if tok.text == "(" and tok.kind == "punct":
            self.take()
            node = self.expr()
            close = self.take()
            if close.text != ")":
                self.error(close, "a parenthesis is not closed here", "add ')'")
            return node
        return self.test()

    def test(self) -> FieldTest:
        field = self.take()
        if field.kind != "word" or self.logic(field) or field.text in OPERATORS or field.text == "in":
            what = "the filter ends" if field.kind == "end" else f"'{field.text}' is here"
            self.error(field, f"a field name is expected where {what}",
                       "write a test such as tcp.port == 80, or a protocol such as tcp")
        tok = self.peek()
        negate = tok.kind == "word" and tok.text == "not" and self.toks[self.i + 1].text == "in"
        if negate or (tok.kind == "word" and tok.text == "in"):
            self.i += 2 if negate else 1
            test = FieldTest(field, "in", tok, members=self.members())
            return Not(test) if negate else test
        op = OPERATORS.get(tok.text) if tok.kind in ("word", "op") else None
        if op is None:
            if tok.kind in ("end",) or tok.text == ")" or self.logic(tok):
                return FieldTest(field)
            self.error(tok, f"'{tok.text}' is not a comparison",
                       "compare with == != === !== < <= > >= (eq ne lt le gt ge), contains, or in {...}")
        self.take()
        value = self.take()
        if value.kind not in ("word", "string"):
            self.error(value, f"a value is expected after '{tok.text}'", "e.g. tcp.port == 80, ip.addr == 10.0.0.0/8")
        return FieldTest(field, op, tok, value)

    def members(self) -> tuple:
        brace = self.take()
        if brace.text != "{":
            self.error(brace, "'in' takes a set in braces", "e.g. tcp.port in {80, 443, 8000..8080}")
        out = []
        while True:
            tok = self.take()
            if out:                     # members are separated by commas (Wireshark 4.0)
                if tok.text == "}" and tok.kind == "punct":
                    break
                if tok.text != ",":
                    self.error(tok, "members of a set are separated by commas", "e.g. tcp.port in {80, 443}")
                tok = self.take()
            if tok.kind not in ("word", "string"):
                self.error(tok, "a value or '}' is expected here", "e.g. tcp.port in {80, 443, 8000..8080}")
            if self.peek().text == "..":
                self.take()
                high = self.take()
                if high.kind not in ("word", "string"):
                    self.error(high, "a range needs its upper end", "e.g. 8000..8080")
                out.append((tok, high))
            else:
                out.append(tok)
        if not out:
            self.error(brace, "this set is empty", "put at least one value in the braces")
        return tuple(out)


def parse(text: str):
    """The tree of display filter ``text`` (``FieldTest``, ``Not``, ``Binary``); ``FilterError`` if
    it cannot be read."""
    p = _Parser(text)
    if p.peek().kind == "end":
        raise FilterError(text, 0, 1, "the filter is empty", "e.g. tcp.port == 80")
    node = p.expr()
    rest = p.peek()
    if rest.kind != "end":
        p.error(rest, f"'{rest.text}' is not expected here",
                "join tests with and/or (&& ||), e.g. tcp and frame.len > 100")
    return node
