"""A checked filter on ``read_capture``'s DataFrame → one bool per frame (numpy).

A field has zero, one or several occurrences in a frame (``ip.addr`` two, a
PPCB field one per packet ending in the frame): ``occurrences`` gives them as
(row, value) arrays. Then, as Wireshark 4.0 (doc/wireshark-filter.adoc,
"Comparing values"): ``==``, ``<``..., ``contains`` and ``in`` hold if any
occurrence does; ``!=`` (all_ne) if there is one and none is equal; ``===``
if there is one and all are equal; ``!==`` (any_ne) if any differs; a bare
field if it occurs. A frame without the field fails every comparison.

Addresses are compared once per distinct address (a categorical's categories),
not once per frame. The TCP analysis flags and stream numbers are computed when
the filter needs them and not given (``Context``).
"""
from __future__ import annotations

import ipaddress
import operator

import numpy as np

from ...errors import UsageError
from ...wire.ppcb import CODES
from ..conversations import first_seen_ids, conversation_ids
from ..tcp_sequence import tcp_analysis
from .check import Cond
from .fields import LAYERS, TRANSPORT, proto_names
from .syntax import Binary, Not

__all__ = ["Context", "evaluate"]

_ORDER = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}


class Context:
    """One DataFrame's columns as the filter reads them, each computed once: ``analysis`` (the
    flags of ``tcp_analysis(df, expert=True)``) and ``streams`` (``conversation_ids``) are
    computed when needed unless given; ``ppcb`` (``ppcb_packets``) must be given."""

    def __init__(self, df, *, analysis=None, streams=None, ppcb=None):
        self.df, self.n = df, len(df)
        self.given = {"analysis": analysis, "streams": streams, "ppcb": ppcb}
        self.layers: dict[str, np.ndarray] = {}

    def layer(self, name: str) -> np.ndarray:
        if name not in self.layers:
            keep = np.ones(self.n, dtype=bool)
            for column, test, arg in LAYERS[name]:
                if column not in self.df:
                    keep[:] = False
                    continue
                col = self.df[column]
                keep &= col.notna().to_numpy(bool) if test == "present" else (col == arg).fillna(False).to_numpy(bool)
            if name in TRANSPORT:           # where Wireshark shows it: the header's, moved (``header``)
                at = self.header()
                keep = (at >= 0) & keep[np.maximum(at, 0)]
            self.layers[name] = keep
        return self.layers[name]

    def header(self) -> np.ndarray:
        """Per frame, the row holding the transport header Wireshark shows in it (-1: none): its
        own, or for the last fragment of an IP datagram the first fragment's, when every fragment's
        payload was captured (Wireshark reassembles then, and shows TCP/UDP on the last fragment
        only, its length all fragments' payload; otherwise on none of them). ``sql.FRAGMENTS``
        is the SQL twin."""
        if "_header" not in self.layers:
            df = self.df
            offset = df["frag_offset"].fillna(0).to_numpy(np.int64)
            more = df["more_frags"].fillna(False).to_numpy(bool)
            at = np.arange(self.n)
            frag = np.flatnonzero((offset > 0) | more)
            at[frag] = -1
            if frag.size:
                keys = np.stack([df[c].cat.codes.to_numpy(np.int64)[frag] if str(df[c].dtype) == "category"
                                 else df[c].fillna(-1).to_numpy(np.int64)[frag] for c in ("src", "dst", "proto", "ip_id")], 1)
                ids, _ = first_seen_ids(keys)
                groups = int(ids.max()) + 1
                payload = df["payload_len"].fillna(0).to_numpy(np.int64)
                captured = (df["payload_offset"].fillna(1 << 40).to_numpy(np.int64) + payload
                            <= df["cap_len"].to_numpy(np.int64))
                whole = np.ones(groups, dtype=bool)
                np.logical_and.at(whole, ids, captured[frag])
                total = np.zeros(groups, dtype=np.int64)
                np.add.at(total, ids, payload[frag])
                head = np.full(groups, self.n, dtype=np.int64)
                np.minimum.at(head, ids, np.where(offset[frag] == 0, frag, self.n))
                last = np.full(groups, -1, dtype=np.int64)
                np.maximum.at(last, ids, np.where(~more[frag], frag, -1))
                ok = whole & (head < self.n) & (last >= 0)
                at[last[ok]] = head[ok]
                # the datagram's transport payload (tcp.len, udp.length): all its fragments'
                self.layers["_payload"] = payload.copy()
                self.layers["_payload"][last[ok]] = total[ok]
            self.layers["_header"] = at
        return self.layers["_header"]

    def table(self, source: str):
        """The per-frame table of ``source`` ("analysis", "streams"; computed if not given)."""
        if self.given[source] is None:
            if source == "analysis":
                self.given[source] = tcp_analysis(self.df, expert=True)
            else:
                self.given[source] = conversation_ids(self.df)
        return self.given[source]

    def occurrences(self, c: Cond) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per column of the field: the rows where it occurs and its values there."""
        f = c.field
        if f.source == "ppcb":
            return self._ppcb(c)
        layer = self.layer(f.layer)
        if f.kind == "flag":          # a protocol or an analysis flag: it occurs where it is set
            if not f.columns:
                return [(np.flatnonzero(layer), np.ones(int(layer.sum()), dtype=np.int64))]
            table, at = self.table("analysis"), np.maximum(self.header(), 0)
            missing = [col for col in f.columns if col not in table]
            if missing:
                raise UsageError(f"{c.name} needs the column {missing[0]} the analysis given lacks",
                                 "give tcp_analysis(frames, expert=True), or nothing (then it is computed)")
            rows = [np.flatnonzero(layer & table[col].to_numpy(bool)[at]) for col in f.columns]
            return [(r, np.ones(r.size, dtype=np.int64)) for r in rows]
        out = []
        at = self.header() if f.layer in TRANSPORT else np.arange(self.n)
        for name in f.columns:
            col = (self.table(f.source) if f.source != "frames" else self.df)[name]
            rows = np.flatnonzero(layer & col.notna().to_numpy(bool)[np.maximum(at, 0)])
            if f.kind in ("addr4", "addr6", "ipproto"):
                out.append((rows, col.cat.codes.to_numpy()[at[rows]]))
                continue
            values = col.to_numpy()[at[rows]]
            if name == "payload_len" and "_payload" in self.layers and f.layer in TRANSPORT:
                values = self.layers["_payload"][rows]
            values = values.astype(np.float64 if f.kind == "float" else np.int64)
            if f.kind == "bit":
                values = ((values & f.bit) != 0).astype(np.int64)
            out.append((rows, values + f.add))
        return out

    def _ppcb(self, c: Cond):
        packets = self.given["ppcb"]
        if packets is None:
            raise UsageError(f"{c.name} needs the capture's PPCB packets",
                             "pass them: f.mask(frames, ppcb=ppcb_packets(path))")
        numbers = self.df["frame"].to_numpy()
        order = np.argsort(numbers, kind="stable")
        wanted = packets["frame"].to_numpy(np.int64)
        at = np.minimum(np.searchsorted(numbers[order], wanted), max(self.n - 1, 0))
        here = (numbers[order][at] == wanted) if self.n else np.zeros(wanted.size, dtype=bool)
        where = order[at]                 # (packets in frames this table lacks are left out: ``here``)
        if c.field.columns == ("ppcb",):
            return [(where[here], np.ones(int(here.sum()), dtype=np.int64))]
        col = packets[c.field.columns[0]]
        ok = col.notna().to_numpy(bool) & here
        if c.name == "ppcb.type":      # the table names the type; the filter compares its code
            values = np.array([CODES.get(t, -1) for t in col.astype(str)], dtype=np.int64)
            return [(where[here], values[here])]
        values = col.to_numpy()[ok]
        return [(where[ok], values if c.field.kind == "text" else values.astype(np.int64))]

    def categories(self, column: str) -> list:
        return list(self.df[column].cat.categories)


def _pred(c: Cond, op: str, ctx: Context, column: str):
    """A function of an occurrence's values → bool array, for comparison ``op`` with ``c.values``."""
    kind = c.field.kind
    if op == "in":
        tests = [_pred(Cond(c.name, c.field, "eq", (m,)), "eq", ctx, column) if not isinstance(m, tuple)
                 else _range(c, m, ctx, column) for m in c.values]
        return lambda v: np.logical_or.reduce([t(v) for t in tests])
    v = c.values[0]
    if kind in ("addr4", "addr6"):
        def on_address(a, net=v):
            if a.version != net.version:
                return False
            if op in ("eq", "ne", "all_eq", "any_ne"):
                return a in net
            return _ORDER[op](int(a), int(net.network_address))
        table = np.array([on_address(ipaddress.ip_address(a)) for a in ctx.categories(column)] + [False])
        return lambda codes: table[codes]
    if kind == "ipproto":
        test = (lambda n: n == v) if op in ("eq", "ne", "all_eq", "any_ne") else (lambda n: _ORDER[op](n, v))
        names = set(proto_names(test))
        table = np.array([name in names for name in ctx.categories(column)] + [False])
        return lambda codes: table[codes]
    if op == "contains":
        return lambda values: np.array([v in str(x) and str(x).index(v) % 2 == 0 for x in values], dtype=bool)
    if kind == "text":
        return lambda values: np.array([str(x) == v for x in values], dtype=bool)
    if op in ("eq", "ne", "all_eq", "any_ne"):
        return lambda values: values == v
    return lambda values: _ORDER[op](values, v)


def _range(c: Cond, member: tuple, ctx: Context, column: str):
    low = _pred(Cond(c.name, c.field, "ge", (member[0],)), "ge", ctx, column)
    high = _pred(Cond(c.name, c.field, "le", (member[1],)), "le", ctx, column)
    return lambda v: low(v) & high(v)


def _two(c: Cond, ctx: Context) -> np.ndarray:
    """Two fields of one value each compared in every frame that has both."""
    sides = []
    for cond in (c, c.other):
        (rows, values), = ctx.occurrences(cond)
        full = np.full(ctx.n, np.nan)
        full[rows] = values
        sides.append(full)
    a, b = sides
    both = ~np.isnan(a) & ~np.isnan(b)
    op = {"eq": operator.eq, "all_eq": operator.eq, "ne": operator.ne, "any_ne": operator.ne, **_ORDER}[c.op]
    with np.errstate(invalid="ignore"):
        return both & op(a, b)


def _test(c: Cond, ctx: Context) -> np.ndarray:
    if c.other is not None:
        return _two(c, ctx)
    occ = ctx.occurrences(c)
    columns = c.field.columns if c.field.source != "ppcb" and c.field.columns else ("",) * len(occ)
    seen = np.zeros(ctx.n, dtype=bool)
    for rows, _ in occ:
        seen[rows] = True
    if c.op is None:
        return seen
    # the comparison whose "any" is asked (ne and all_eq: the complement of an "any")
    base = {"ne": "eq", "all_eq": "eq", "any_ne": "eq"}.get(c.op, c.op)
    hit = np.zeros(ctx.n, dtype=bool)
    miss = np.zeros(ctx.n, dtype=bool)
    for (rows, values), column in zip(occ, columns):
        if not rows.size:
            continue
        ok = np.asarray(_pred(c, base, ctx, column)(values), dtype=bool)
        hit[rows[ok]] = True
        miss[rows[~ok]] = True
    if c.op == "ne":
        return seen & ~hit
    if c.op == "all_eq":
        return seen & ~miss
    if c.op == "any_ne":
        return miss
    return hit


def evaluate(node, ctx: Context) -> np.ndarray:
    """The checked tree ``node`` on ``ctx``'s frames: one bool per frame."""
    if isinstance(node, Binary):
        left = evaluate(node.left, ctx)
        return (left & evaluate(node.right, ctx)) if node.op == "and" else (left | evaluate(node.right, ctx))
    if isinstance(node, Not):
        return ~evaluate(node.operand, ctx)
    return _test(node, ctx)
