"""``compile_filter(text)``: a Wireshark display filter, once checked, for frames and for datasets.

    from wirelab.capture.filter import compile_filter
    f = compile_filter("tcp.port == 80 and frame.len > 100")
    f.mask(frames)        # read_capture's DataFrame → numpy bool per frame
    f.sql()               # the same filter as a DuckDB WHERE clause over a dataset's packets
    f.fields              # the field names it uses

Reading (``syntax``), checking (``check``, against the table of ``fields``) and
the two evaluations (``frames``, ``sql``) live beside this module.
"""
from __future__ import annotations

from .check import check, walk
from .frames import Context, evaluate
from .sql import ipv6_addresses, tables, where

__all__ = ["compile_filter", "DisplayFilter"]


class DisplayFilter:
    """A checked display filter (see the module docstring)."""

    def __init__(self, text: str):
        self.text = text
        self.tree = check(text)
        self.fields = tuple(dict.fromkeys(c.name for c in walk(self.tree)))

    def __repr__(self) -> str:
        return f"DisplayFilter({self.text!r})"

    @property
    def sources(self) -> set[str]:
        """Where its fields' values come from: "frames", "analysis", "streams", "ppcb"."""
        return {c.field.source for c in walk(self.tree)}

    def mask(self, frames, analysis=None, *, streams=None, ppcb=None):
        """One bool per row of ``frames`` (``read_capture``'s DataFrame, or ``dataset.frame()``).

        ``analysis``: ``tcp_analysis(frames, expert=True)`` if you have it (else computed when
        a ``tcp.analysis.*`` field needs it); ``streams``: ``conversation_ids(frames)`` (likewise,
        for ``tcp.stream``/``udp.stream``); ``ppcb``: ``ppcb_packets(path)``, needed by ``ppcb.*``."""
        return evaluate(self.tree, Context(frames, analysis=analysis, streams=streams, ppcb=ppcb))

    def sql(self, dataset=None) -> str:
        """A DuckDB WHERE clause over a dataset's ``packets`` view. Fields from the analyses read
        the dataset's tables ``tcp_flags``, ``filter_streams`` and ``filter_fragments``: given
        ``dataset`` (an ``open_dataset``), they are made there first (and IPv6 blocks listed)."""
        if dataset is None:
            return where(self.tree)
        tables(dataset, self.tree)
        return where(self.tree, ipv6_addresses(dataset, self.tree))


def compile_filter(text: str) -> DisplayFilter:
    """Display filter ``text`` checked and ready (``FilterError`` points at what it cannot read)."""
    return DisplayFilter(text)
