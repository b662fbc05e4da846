"""TCP analysis flags of a few conversations without analysing the whole capture.

Wireshark's ``tcp.analysis.*`` flags of a frame depend only on the frames of its own TCP
conversation (``tcp_sequence``: each conversation is analysed on its own), with one
exception: "reused ports" says that an *earlier* conversation had the same ports. So the
flags of the frames of some streams are those of ``tcp_analysis`` run on those streams'
frames alone, with "reused ports" and the conversation numbers (``conv``, ``a_to_b``)
taken from the whole capture. On a million packets the whole analysis takes seconds;
one conversation of it, what the explorer draws, takes a fraction of that
(``tests/test_capture_open.py`` checks the two give the same flags on every stream of
the committed and public captures).

The whole capture's part is the numbering the capture already holds (``Capture`` numbers
its conversations when opened, ``stats.numbered``): ``tcp_analysis`` numbers them as
``conversations_of(later_fragments=False)``, which is that numbering wherever no frame
is a later IP fragment (their ports are then given to no frame: the two ways are one).
A capture with later fragments is numbered again here, as ``tcp_analysis`` does. What
is kept per frame: the numbers and whether it is TCP (a TCP stream is one conversation
of the capture's numbering); and the frames "reused ports" marks, found among each
conversation's first frame (not the reader's columns: nothing is copied of them).

``StreamFlags.of(numbered or frames)`` keeps what it computed, per stream; ``at(positions,
index, frames_at)`` gives the flags of those rows of the capture, or None when their
streams hold so many frames that the whole analysis is as cheap (the caller runs it then,
once).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..conversations import conversations_of, reused_ports
from ..reader.frames import Frames
from ..tcp_sequence import EXPERT, FLAGS, tcp_analysis

__all__ = ["StreamFlags", "WHOLE_SHARE"]

#: ``tcp_analysis(expert=True)``'s columns, in its order
COLUMNS = [*FLAGS, *EXPERT, "dupack_num", "conv", "a_to_b"]
#: the streams asked for hold more than this share of the frames: analyse the whole capture
WHOLE_SHARE = 0.25


class StreamFlags:
    """The flags of the frames of some TCP streams of a capture, whose frames' keys (``keys``:
    ``Frames``, not kept) and conversation numbers are given (``begins``: each conversation's
    first frame, if known). A TCP stream is one conversation: streams are found by ``conv``."""

    def __init__(self, keys: Frames, conv: np.ndarray, a_to_b: np.ndarray, begins: np.ndarray | None = None):
        self._tcp, self._group = keys.protocol("tcp"), conv
        if (keys.frag_offset > 0).any():                     # (see the module docstring)
            conv, a_to_b, begins = *conversations_of(keys, later_fragments=False), None
        self._conv, self._a_to_b = conv, a_to_b
        self._reused = _reused_rows(keys, conv, self._tcp, begins)
        self._done: dict[int, tuple[np.ndarray, pd.DataFrame]] = {}     # conv → (rows, its flags)

    @classmethod
    def of(cls, source) -> "StreamFlags":
        """Of a ``Capture``'s frames' table (``read_capture``'s plus ``conv``, ``a_to_b``,
        ``stream``) or of its ``Numbered`` columns (the table not made)."""
        if isinstance(source, pd.DataFrame):
            return cls(Frames.of(source), source["conv"].to_numpy(np.int64), source["a_to_b"].to_numpy(bool))
        return cls(source.keys, source.conv, source.a_to_b, source.begins)

    def at(self, positions: np.ndarray, frames: pd.DataFrame,
           frames_at: Callable[[np.ndarray], pd.DataFrame]) -> pd.DataFrame | None:
        """The flags (``tcp_analysis(expert=True)``'s columns, index ``frames``') of the capture's
        rows ``positions`` (``frames``: their table), or None: analyse the whole capture.
        ``frames_at(rows)``: the table of other rows (a stream not yet analysed is analysed on
        its rows: ``frames`` when they are those, no copy)."""
        group, tcp = self._group, self._tcp
        wanted = np.unique(group[positions][tcp[positions]])
        wanted = wanted[wanted >= 0]
        missing = [int(s) for s in wanted if int(s) not in self._done]
        if missing:
            rows = np.flatnonzero(((group == missing[0]) if len(missing) == 1 else np.isin(group, missing)) & tcp)
            if rows.size > WHOLE_SHARE * group.size:
                return None
            self._analyse(rows, frames if np.array_equal(rows, positions) else frames_at(rows))
        return self._assemble(positions, wanted, frames.index)

    def _analyse(self, rows: np.ndarray, frames: pd.DataFrame) -> None:
        flags = tcp_analysis(frames, expert=True).reset_index(drop=True)
        flags["reused_ports"], flags["conv"], flags["a_to_b"] = np.isin(rows, self._reused), self._conv[rows], \
            self._a_to_b[rows]
        mine = self._group[rows]
        for s in np.unique(mine):
            keep = mine == s
            self._done[int(s)] = rows[keep], flags[keep]

    def _assemble(self, positions: np.ndarray, wanted: np.ndarray, index: pd.Index) -> pd.DataFrame:
        out = {name: np.zeros(positions.size, dtype=np.int64 if name == "dupack_num" else bool) for name in COLUMNS}
        out["conv"], out["a_to_b"] = self._conv[positions], self._a_to_b[positions]
        group = np.where(self._tcp[positions], self._group[positions], -1)
        for s in wanted:
            rows, flags = self._done[int(s)]
            here = np.flatnonzero(group == s)
            at = np.searchsorted(rows, positions[here])
            for name in COLUMNS[:-2]:
                out[name][here] = flags[name].to_numpy()[at]
        return pd.DataFrame(out, index=index)


def _reused_rows(keys: Frames, conv: np.ndarray, tcp: np.ndarray, begins: np.ndarray | None) -> np.ndarray:
    """The TCP frames ``reused_ports`` marks (the SYNs that began a conversation on ports an
    earlier one used), found among each conversation's first frame (``begins``) only. Unless
    given, where the numbering is in order of first frame (as ``conversations_of`` numbers),
    each first frame is where the running maximum of ``conv`` grows."""
    if begins is None:
        top = np.maximum.accumulate(conv)
        begins = np.flatnonzero(top[1:] > top[:-1]) + 1
        begins = np.concatenate([[0], begins]) if conv.size and conv[0] >= 0 else begins
    if not np.array_equal(conv[begins], np.arange(begins.size)) or begins.size != conv.max(initial=-1) + 1:
        return np.flatnonzero(reused_ports(keys, conv) & tcp)
    some = Frames(time=keys.time[begins], src=keys.src[begins], dst=keys.dst[begins], addresses=[],
                  proto=keys.proto[begins], protocols=keys.protocols, more_frags=keys.more_frags[begins],
                  l3=keys.l3[begins], ints={"sport": keys.sport[begins], "dport": keys.dport[begins]})
    return begins[reused_ports(some, np.arange(begins.size)) & tcp[begins]]
