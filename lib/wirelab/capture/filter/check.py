"""A parsed filter → a checked one: every field known, every literal read as its field's kind.

``check(text)`` parses (``syntax``) and replaces each ``FieldTest`` by a ``Cond``:
the field (``fields.FIELDS``), the operator, and the values as numbers,
networks (``ipaddress``) or text; a set's ranges as (low, high). An unknown
field, a value of the wrong kind, or an operator the field cannot take raise
``FilterError`` with a caret under the token. Both evaluations (``frames``,
``sql``) take the checked tree.
"""
from __future__ import annotations

from dataclasses import dataclass

from .fields import FIELDS, Field, field, value
from .syntax import Binary, FilterError, Not, FieldTest, parse

__all__ = ["Cond", "check", "walk"]


@dataclass(frozen=True)
class Cond:
    """One checked test: ``op`` None (existence), a comparison name, "contains" or "in";
    ``values``: one value, or the set's members (values and (low, high) ranges)."""
    name: str
    field: Field
    op: str | None
    values: tuple
    other: "Cond | None" = None      # a field compared with another (frame.cap_len < frame.len)


def check(text: str):
    """The checked tree of display filter ``text``."""
    return _check(text, parse(text))


def _check(text: str, node):
    if isinstance(node, Binary):
        return Binary(node.op, _check(text, node.left), _check(text, node.right))
    if isinstance(node, Not):
        return Not(_check(text, node.operand))
    return _cond(text, node)


def _cond(text: str, t: FieldTest) -> Cond:
    f = field(text, t.field)
    name = t.field.text
    if t.op is None:
        return Cond(name, f, None, ())
    if f.kind == "flag" and not f.columns:
        raise FilterError(text, t.op_token.pos, t.op_token.width, f"{name} is a protocol: it is tested by its name alone",
                          f"write `{name}` (is it in the frame?) or compare one of its fields, e.g. {_example(name)}")
    if t.op == "contains":
        if f.kind != "text":
            raise FilterError(text, t.op_token.pos, t.op_token.width, f"{name} holds no bytes or text to search",
                              "the frames table has no payloads; 'contains' works on ppcb.session_id")
        return Cond(name, f, "contains", (_text(value(text, f, name, t.value)),))
    if t.op == "in":
        members = tuple((value(text, f, name, m[0]), value(text, f, name, m[1])) if isinstance(m, tuple)
                        else value(text, f, name, m) for m in t.members)
        if f.kind in ("addr4", "addr6", "text") and any(isinstance(m, tuple) for m in members):
            bad = next(m for m in t.members if isinstance(m, tuple))[0]
            raise FilterError(text, bad.pos, bad.width, f"a range of {name} values is not supported here",
                              "list the values, or use a CIDR block (10.0.0.0/8)")
        if f.kind == "text":
            members = tuple(_text(m) for m in members)
        return Cond(name, f, "in", members)
    if t.value.kind == "word" and t.value.text in FIELDS:
        return _fields(text, t, name, f)
    v = value(text, f, name, t.value)
    if f.kind == "text":
        if t.op not in ("eq", "ne", "all_eq", "any_ne"):
            raise FilterError(text, t.op_token.pos, t.op_token.width, f"{name} is compared with == or != only",
                              "e.g. ppcb.session_id == 01:02:03:04:05:06:07:08")
        v = _text(v)
    return Cond(name, f, t.op, (v,))


def _fields(text: str, t: FieldTest, name: str, f: Field) -> Cond:
    """Two fields compared (numbers of the frames table, one value each)."""
    g = FIELDS[t.value.text]
    for tok, h in ((t.field, f), (t.value, g)):
        if h.kind not in ("int", "float", "bit", "bool") or len(h.columns) != 1 or h.source != "frames":
            raise FilterError(text, tok.pos, tok.width, f"{tok.text} cannot be compared with another field here",
                              "two fields are compared when both are single numbers of the frames table "
                              "(frame.cap_len < frame.len)")
    return Cond(name, f, t.op, (), Cond(t.value.text, g, None, ()))


def _text(raw: str) -> str:
    """A bytes literal (aa:bb:cc, or a string's characters) as lower-case hex, as the session id is."""
    if all(len(p) == 2 for p in raw.split(":")) and all(c in "0123456789abcdefABCDEF:" for c in raw):
        return raw.replace(":", "").lower()
    return raw.encode("latin-1", "replace").hex()


def _example(name: str) -> str:
    known = sorted(n for n in FIELDS if n.startswith(name + "."))
    return f"{known[0]} == ..." if known else "frame.len > 100"


def walk(node):
    """Every ``Cond`` of a checked tree, left to right."""
    if isinstance(node, Binary):
        yield from walk(node.left)
        yield from walk(node.right)
    elif isinstance(node, Not):
        yield from walk(node.operand)
    else:
        yield node
        if node.other is not None:
            yield node.other
