"""A checked filter → a DuckDB WHERE clause over a capture dataset's ``packets`` (``capture.sql``).

The same rules as ``frames`` (read its docstring): a field occurs where its
layer is and its column is not NULL; ``==`` holds if any occurrence does, ``!=``
if one occurs and none is equal, and so on. Every test is wrapped in
``coalesce(…, false)``, so NULLs never leak into ``not``.

Fields computed by the analyses read the dataset's tables by name, as
``capture.sql`` makes them: ``tcp_flags`` (``sql.tcp.tcp_flags``: the six TCP
analysis flags), ``conversations`` (``sql.flows.conversations``) and
``filter_streams`` (``STREAMS``: Wireshark's stream numbers), ``filter_fragments``
(``FRAGMENTS``: where Wireshark shows a fragmented datagram's TCP/UDP); ``tables(ds, cond)``
makes those a filter needs. Not here (``UsageError`` naming the frames way):
the expert notes beyond the six flags (keep-alive, window update, ACKed
unseen), ``tcp.analysis.flags`` and ``ppcb.*``; IPv6 blocks and ordering need the
dataset (its distinct addresses are listed: ``ipv6_addresses``).
"""
from __future__ import annotations

import ipaddress
import operator

from ...errors import UsageError
from ..tcp_sequence import FLAGS
from .check import Cond, walk
from .fields import LAYERS, TRANSPORT, proto_names
from .syntax import Binary, Not

__all__ = ["where", "tables", "ipv6_addresses", "STREAMS", "FRAGMENTS"]

#: per packet in a conversation: its stream number among its protocol's conversations (as flows())
STREAMS = """
SELECT c.file_offset, s.stream FROM conversations c JOIN (
  SELECT conv, row_number() OVER (PARTITION BY proto ORDER BY conv) - 1 AS stream
  FROM (SELECT c.conv, arg_min(p.proto, p.file_offset) AS proto
        FROM conversations c JOIN packets p USING (file_offset) GROUP BY c.conv)) s USING (conv)"""
#: a fragmented datagram captured whole: its last fragment shows the first one's TCP/UDP header
#: (``frames.Context.header``)
FRAGMENTS = """
SELECT max(file_offset) FILTER (WHERE NOT coalesce(more_frags, false)) AS last_offset,
       min(file_offset) FILTER (WHERE coalesce(frag_offset, 0) = 0) AS head_offset,
       sum(coalesce(payload_len, 0)) AS payload
FROM packets WHERE coalesce(frag_offset, 0) > 0 OR coalesce(more_frags, false)
GROUP BY src, dst, proto, ip_id
HAVING bool_and(coalesce(payload_offset + coalesce(payload_len, 0) <= cap_len, false))
   AND last_offset IS NOT NULL AND head_offset IS NOT NULL"""
_UNFRAGMENTED = "(coalesce(frag_offset, 0) = 0 AND NOT coalesce(more_frags, false))"
_SQL_FLAGS = set(FLAGS) | {"zero_window"}
_OPS = {"eq": "=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ORDER = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}


def _literal(v) -> str:
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(float(v)) if isinstance(v, float) else str(int(v))


def _layer(name: str) -> str:
    parts = [f"{col} IS NOT NULL" if test == "present" else f"{col} = {_literal(arg)}"
             for col, test, arg in LAYERS[name]]
    return " AND ".join(parts) or "true"


def _ipv4(x: str) -> str:
    """A dotted-quad text column as its 32-bit number (NULL where it is not one)."""
    return " + ".join(f"TRY_CAST(split_part({x}, '.', {i + 1}) AS BIGINT) * {1 << (24 - 8 * i)}" for i in range(4))


def _pred(c: Cond, op: str, x: str, addresses=None) -> str:
    """SQL for: value expression ``x`` compared by ``op`` (eq lt le gt ge in) with ``c.values``
    (``addresses``: the dataset's IPv6 addresses, for blocks and ordering)."""
    kind = c.field.kind
    if op == "in":
        parts = [_pred(Cond(c.name, c.field, "eq", (m,)), "eq", x, addresses) if not isinstance(m, tuple) else
                 f"({_pred(Cond(c.name, c.field, 'ge', (m[0],)), 'ge', x, addresses)} AND "
                 f"{_pred(Cond(c.name, c.field, 'le', (m[1],)), 'le', x, addresses)})" for m in c.values]
        return "(" + " OR ".join(parts) + ")"
    v = c.values[0]
    if kind in ("addr4", "addr6"):
        if op == "eq" and v.num_addresses == 1:
            return f"{x} = {_literal(str(v.network_address))}"
        if kind == "addr6":             # the dataset's addresses that pass, listed
            if addresses is None:
                raise UsageError(f"{c.name}: an IPv6 block or ordering needs the dataset's addresses",
                                 "give the dataset: f.sql(dataset)")
            test = (lambda a: a in v) if op == "eq" else (lambda a: _ORDER[op](int(a), int(v.network_address)))
            kept = [a for a in addresses if ipaddress.ip_address(a).version == 6 and test(ipaddress.ip_address(a))]
            return f"{x} IN ({', '.join(_literal(a) for a in kept)})" if kept else "false"
        n = f"({_ipv4(x)})"
        if op == "eq":
            return f"{n} BETWEEN {int(v.network_address)} AND {int(v.broadcast_address)}"
        return f"{n} {_OPS[op]} {int(v.network_address)}"
    if kind == "ipproto":
        test = {"eq": lambda n: n == v, "lt": lambda n: n < v, "le": lambda n: n <= v,
                "gt": lambda n: n > v, "ge": lambda n: n >= v}[op]
        return f"{x} IN ({', '.join(_literal(p) for p in proto_names(test))})"
    return f"{x} {_OPS[op]} {_literal(v)}"


def _occurrences(c: Cond) -> list[tuple[str, object]]:
    """Per column of the field: (SQL: it occurs, function: SQL of a predicate on its value → it
    occurs and the predicate holds)."""
    f, layer = c.field, _layer(c.field.layer)
    if f.source == "ppcb":
        raise UsageError(f"{c.name}: PPCB fields are read from the capture's bytes, which a dataset does not hold",
                         "filter the frames: f.mask(frames, ppcb=ppcb_packets(path))")
    if f.kind == "flag" and not f.columns:
        return [(layer, lambda p: f"({layer} AND {p('1')})")]
    if f.source == "analysis":
        out = []
        for col in f.columns:
            if col not in _SQL_FLAGS or len(f.columns) > 1:
                raise UsageError(f"{c.name} is computed on frames only (the dataset's tcp_flags has the six "
                                 f"flags {', '.join(FLAGS)})", "filter the frames (dataset.frame(), then f.mask)")
            there = ("(tcp_win = 0 AND (tcp_flags & 7) = 0)" if col == "zero_window" else
                     f"file_offset IN (SELECT file_offset FROM tcp_flags WHERE {col})")
            out.append((f"({layer} AND {there})", lambda p, t=there: f"({layer} AND {t} AND {p('1')})"))
        return out
    if f.source == "streams":
        there = "file_offset IN (SELECT file_offset FROM filter_streams{})"
        return [(f"({layer} AND {there.format('')})",
                 lambda p: f"({layer} AND {there.format(' WHERE ' + p('stream'))})")]
    out = []
    for col in f.columns:
        present, value = f"({layer} AND {col} IS NOT NULL)", _value(f, col)
        out.append((present, lambda p, present=present, value=value: f"({present} AND {p(value)})"))
    return out


def _value(f, col: str) -> str:
    """The SQL of field ``f``'s value in column ``col`` of ``packets``."""
    return (f"CASE WHEN ({col} & {f.bit}) <> 0 THEN 1 ELSE 0 END" if f.kind == "bit" else
            f"CASE WHEN {col} THEN 1 ELSE 0 END" if f.kind == "bool" else
            f"({col} + {f.add})" if f.add else col)


def _two(c: Cond) -> str:
    """Two fields of one value each compared where both are."""
    (seen_a, _), = _occurrences(c)
    (seen_b, _), = _occurrences(c.other)
    a, b = (_value(x.field, x.field.columns[0]) for x in (c, c.other))
    op = {"eq": "=", "all_eq": "=", "ne": "<>", "any_ne": "<>", **_OPS}[c.op]
    return f"coalesce({seen_a} AND {seen_b} AND {a} {op} {b}, false)"


def _test(c: Cond, addresses=None) -> str:
    if c.other is not None:
        return _two(c)
    occ = _occurrences(c)
    seen = " OR ".join(f"coalesce({present}, false)" for present, _ in occ)
    if c.op is None:
        return f"({seen})"
    base = {"ne": "eq", "all_eq": "eq", "any_ne": "eq"}.get(c.op, c.op)

    def anyof(negate: bool) -> str:
        return " OR ".join(f"coalesce({hit(lambda x: ('NOT ' if negate else '') + '(' + _pred(c, base, x, addresses) + ')')}, false)"
                           for _, hit in occ)
    if c.op == "ne":
        return f"(({seen}) AND NOT ({anyof(False)}))"
    if c.op == "all_eq":
        return f"(({seen}) AND NOT ({anyof(True)}))"
    if c.op == "any_ne":
        return f"({anyof(True)})"
    return f"({anyof(False)})"


def where(node, addresses=None) -> str:
    """The checked tree ``node`` as a WHERE clause over ``packets`` (and the tables above);
    ``addresses``: the dataset's IPv6 addresses (``ipv6_addresses``), for IPv6 blocks and ordering."""
    if isinstance(node, Binary):
        return f"({where(node.left, addresses)} {node.op.upper()} {where(node.right, addresses)})"
    if isinstance(node, Not):
        return f"(NOT {where(node.operand, addresses)})"
    test = _test(node, addresses)
    if node.field.layer not in TRANSPORT:
        return test
    # a TCP/UDP test holds on a frame with its own header, or on a last fragment whose first holds it
    return (f"(({_UNFRAGMENTED} AND {test}) OR file_offset IN (SELECT last_offset FROM filter_fragments "
            f"WHERE head_offset IN (SELECT file_offset FROM (SELECT p.* REPLACE (f.payload AS payload_len) "
            f"FROM packets p JOIN filter_fragments f ON p.file_offset = f.head_offset) WHERE {test})))")


def ipv6_addresses(ds, node) -> list[str] | None:
    """The dataset's IPv6 addresses when the filter compares them with a block or an order."""
    if not any(c.field.kind == "addr6" and (c.op not in ("eq", "ne", "all_eq", "any_ne") or any(
            isinstance(v, tuple) or v.num_addresses > 1 for v in c.values)) for c in walk(node)):
        return None
    rows = ds.sql("SELECT DISTINCT src AS a FROM packets WHERE l3 = 'ipv6' "
                  "UNION SELECT DISTINCT dst FROM packets WHERE l3 = 'ipv6'")
    return [str(a) for a in rows["a"] if a is not None]


def tables(ds, node) -> None:
    """Make in dataset ``ds`` the tables the filter ``node`` reads (each made once per dataset)."""
    sources = {c.field.source for c in walk(node)}
    if any(c.field.layer in TRANSPORT for c in walk(node)):
        ds.table("filter_fragments", FRAGMENTS)
    if "analysis" in sources:
        # start-up: numpy, pandas, pyarrow only when tables() runs
        from ..sql.tcp import tcp_flags
        tcp_flags(ds)
    if "streams" in sources:
        # start-up: numpy, pandas, pyarrow only when tables() runs
        from ..sql.flows import conversations
        conversations(ds)
        ds.table("filter_streams", STREAMS)
