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

``StreamFlags(frames)`` keeps what it computed, per stream; ``at(positions)`` gives the
flags of those rows of ``frames``, or None when their streams hold so many frames that
the whole analysis is as cheap (the caller runs it then, once).
"""
from __future__ import annotations

from functools import cached_property

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
    """The flags of the frames of some TCP streams of ``frames`` (a ``Capture``'s, with ``stream``)."""

    def __init__(self, frames: pd.DataFrame):
        self.frames = frames
        self._done: dict[int, tuple[np.ndarray, pd.DataFrame]] = {}     # stream → (rows, its flags)

    @cached_property
    def _tcp_stream(self) -> np.ndarray:
        """Per frame: its TCP stream, -1 for any other frame."""
        f = self.frames
        return np.where((f["proto"] == "tcp").to_numpy(), f["stream"].to_numpy(np.int64), -1)

    @cached_property
    def _whole(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What only the whole capture knows: ``tcp_analysis``' own conversation numbers and
        directions (later fragments left out) and the SYNs that reuse an earlier one's ports."""
        f = Frames.of(self.frames)
        conv, a_to_b = conversations_of(f, later_fragments=False)
        return conv, a_to_b, reused_ports(f, conv) & f.protocol("tcp")

    def at(self, positions: np.ndarray) -> pd.DataFrame | None:
        """The flags (``tcp_analysis(expert=True)``'s columns) of the rows ``positions`` of the
        frames, or None: analyse the whole capture."""
        stream = self._tcp_stream
        wanted = np.unique(stream[positions])
        wanted = wanted[wanted >= 0]
        missing = [int(s) for s in wanted if int(s) not in self._done]
        if missing:
            rows = np.flatnonzero(np.isin(stream, missing))
            if rows.size > WHOLE_SHARE * stream.size:
                return None
            self._analyse(rows)
        return self._assemble(positions, wanted)

    def _analyse(self, rows: np.ndarray) -> None:
        flags = tcp_analysis(self.frames.iloc[rows], expert=True).reset_index(drop=True)
        conv, a_to_b, reused = self._whole
        flags["reused_ports"], flags["conv"], flags["a_to_b"] = reused[rows], conv[rows], a_to_b[rows]
        mine = self._tcp_stream[rows]
        for s in np.unique(mine):
            keep = mine == s
            self._done[int(s)] = rows[keep], flags[keep]

    def _assemble(self, positions: np.ndarray, wanted: np.ndarray) -> pd.DataFrame:
        conv, a_to_b, _ = self._whole
        out = {name: np.zeros(positions.size, dtype=np.int64 if name == "dupack_num" else bool) for name in COLUMNS}
        out["conv"], out["a_to_b"] = conv[positions], a_to_b[positions]
        stream = self._tcp_stream[positions]
        for s in wanted:
            rows, flags = self._done[int(s)]
            here = np.flatnonzero(stream == s)
            at = np.searchsorted(rows, positions[here])
            for name in COLUMNS[:-2]:
                out[name][here] = flags[name].to_numpy()[at]
        return pd.DataFrame(out, index=self.frames.index[positions])
