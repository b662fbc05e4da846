"""Wireshark's Statistics › TCP Stream Graphs of one connection, as DataFrames: tcptrace, throughput, RTT, window.

``StreamGraphs(frames, flags, stream)`` takes one ``tcp.stream`` and the direction that
carries the data (the one with more payload, or ``a_to_b``). Times are
``time_relative``; sequence numbers count from that direction's first segment
(modulo 2^32; Wireshark's relative sequence numbers, the SYN at 0).

* ``sequence_graph``: tcptrace's time-sequence graph (Shepard, tcptrace 6.6; Wireshark
  ui/qt/tcp_stream_dialog.cpp): a row per data segment (``kind`` "data", ``seq`` to
  ``end``, retransmissions marked) and per ACK of the other side (``kind`` "ack":
  ``seq`` = the ACK line, ``window`` = ack + the advertised window, the receive window
  line). SACK blocks are not read by the kit's reader yet.
* ``throughput``: per data segment, the bytes of the segments in the last ``window``
  seconds · 8 / window (Wireshark's moving average, 1 s by default), all and new only.
* ``rtt``: per data segment sent once, the time to the first ACK that covers its end
  (Karn's rule: a retransmitted segment gives no sample; RFC 6298 §3).
* ``window``: the receive window the other side advertised (its scale applied when both
  SYNs announced one, RFC 7323 §2.2) and the bytes in flight before each data segment
  (highest end sent − highest ACK seen): tshark's ``tcp.analysis.bytes_in_flight`` on a
  transfer without loss; after a loss Wireshark subtracts the bytes SACK blocks cover,
  which the kit's reader does not read yet (so here the number stays high until the hole
  is filled).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import UsageError

__all__ = ["StreamGraphs"]

_SYN = 0x02


class StreamGraphs:
    """One TCP stream's graphs (see the module docstring)."""

    def __init__(self, frames: pd.DataFrame, flags: pd.DataFrame, stream: int, *, a_to_b: bool | None = None):
        pick = (frames["proto"] == "tcp").to_numpy() & (frames["stream"] == stream).to_numpy() \
            & frames["tcp_seq"].notna().to_numpy()
        if not pick.any():
            raise UsageError(f"no TCP stream {stream} in this capture",
                             "see conversations('tcp')['stream'] for the streams there are")
        rows = frames[pick]
        self.stream = stream
        self.flags = flags[pick]
        ab = rows["a_to_b"].to_numpy(bool)
        payload = rows["payload_len"].fillna(0).to_numpy(np.int64)
        if a_to_b is None:
            a_to_b = bool(payload[ab].sum() >= payload[~ab].sum())
        self.a_to_b = a_to_b
        fwd = ab == a_to_b
        self._t = rows["time_relative"].to_numpy(np.float64)
        self._frame = rows["frame"].to_numpy(np.int64)
        seq = rows["tcp_seq"].to_numpy(np.int64, na_value=0)
        ack = rows["tcp_ack"].to_numpy(np.int64, na_value=0)
        bits = rows["tcp_flags"].to_numpy(np.int64, na_value=0)
        base = seq[fwd][0] if fwd.any() else 0
        self._seq = (seq - base + 2 ** 31) % 2 ** 32 - 2 ** 31
        self._ack = (ack - base + 2 ** 31) % 2 ** 32 - 2 ** 31
        self._len = payload + ((bits & _SYN) > 0) + ((bits & 0x01) > 0)
        self._fwd, self._has_ack = fwd, (bits & 0x10) > 0
        # a SYN's window is never scaled (RFC 7323 §2.2)
        self._win = rows["tcp_win"].to_numpy(np.int64, na_value=0) << np.where(
            (bits & _SYN) > 0, 0, self._scale(rows, fwd, bits))

    @staticmethod
    def _scale(rows, fwd, bits) -> int:
        """The receiver's window scale: its SYN's, when both SYNs carry one (RFC 7323 §2.2)."""
        shift = rows["tcp_wscale"].to_numpy(np.int64, na_value=-1)
        syn = (bits & _SYN) > 0
        mine, theirs = shift[syn & ~fwd], shift[syn & fwd]
        if mine.size and theirs.size and mine[0] >= 0 and theirs[0] >= 0:
            return int(mine[0])
        return 0

    def _data(self) -> np.ndarray:
        return self._fwd & (self._len > 0)

    def _acks(self) -> np.ndarray:
        return ~self._fwd & self._has_ack

    def sequence_graph(self) -> pd.DataFrame:
        """tcptrace: data segments (``seq``..``end``, ``retransmission``) and the other side's ACKs
        (``seq`` = ack, ``window`` = ack + receive window), in frame order."""
        d, a = self._data(), self._acks()
        kind = np.where(d, "data", "ack")
        pick = d | a
        out = pd.DataFrame({"time": self._t, "frame": self._frame, "kind": kind,
                            "seq": np.where(d, self._seq, self._ack),
                            "end": np.where(d, self._seq + self._len, np.nan),
                            "window": np.where(a, self._ack + self._win, np.nan),
                            "retransmission": self.flags["retransmission"].to_numpy(bool) & d})
        return out[pick].reset_index(drop=True)

    def throughput(self, window: float = 1.0) -> pd.DataFrame:
        """Per data segment: ``throughput_bps`` (every byte sent in the last ``window`` s) and
        ``goodput_bps`` (retransmissions left out)."""
        if not window > 0:
            raise UsageError(f"window must be positive, not {window}", "e.g. 1.0 (seconds)")
        d = self._data()
        t, size = self._t[d], self._len[d].astype(np.float64)
        new = np.where(self.flags["retransmission"].to_numpy(bool)[d], 0.0, size)
        since = np.searchsorted(t, t - window, side="right")       # first segment inside the window
        total, fresh = np.concatenate([[0], np.cumsum(size)]), np.concatenate([[0], np.cumsum(new)])
        at = np.arange(t.size) + 1
        return pd.DataFrame({"time": t, "frame": self._frame[d],
                             "throughput_bps": (total[at] - total[since]) * 8 / window,
                             "goodput_bps": (fresh[at] - fresh[since]) * 8 / window})

    def rtt(self) -> pd.DataFrame:
        """Per data segment sent once: ``rtt`` to the first ACK covering its end (``ack_frame``)."""
        d, a = self._data(), self._acks()
        once = d & ~self.flags["retransmission"].to_numpy(bool)
        order = np.arange(self._t.size)
        acked = np.maximum.accumulate(self._ack[a]) if a.any() else np.zeros(0, np.int64)
        ack_at = order[a]
        seg = order[once]
        end = self._seq[once] + self._len[once]
        # the first ACK after the segment whose running highest ack reaches its end
        k = np.maximum(np.searchsorted(acked, end, side="left"), np.searchsorted(ack_at, seg, side="right"))
        found = k < ack_at.size
        at = ack_at[np.minimum(k, max(ack_at.size - 1, 0))] if ack_at.size else seg
        return pd.DataFrame({"time": self._t[seg], "frame": self._frame[seg], "seq": self._seq[seg],
                             "ack_frame": self._frame[at], "rtt": self._t[at] - self._t[seg]})[found]\
            .reset_index(drop=True)

    def window(self) -> pd.DataFrame:
        """``kind`` "rwnd": the window the other side advertised (bytes, scaled) at each ACK;
        ``kind`` "in_flight": bytes sent and not yet acknowledged, at each data segment."""
        d, a = self._data(), self._acks()
        high = np.maximum.accumulate(np.where(self._fwd, self._seq + self._len, np.iinfo(np.int64).min))
        acked = np.maximum.accumulate(np.where(a, self._ack, np.iinfo(np.int64).min))
        in_flight = np.where(acked > np.iinfo(np.int64).min, high - acked, high)
        out = pd.DataFrame({"time": self._t, "frame": self._frame, "kind": np.where(d, "in_flight", "rwnd"),
                            "bytes": np.where(d, in_flight, self._win)})
        return out[d | a].reset_index(drop=True)

    def plot(self, graph: str = "sequence", ax=None, **kwargs):
        """Draw ``graph`` ("sequence", "throughput", "rtt" or "window") on ``ax``; returns the Axes.
        No more points than the Axes has pixels are drawn (``stream_plot``), every point with ``full=True``."""
        from . import stream_plot                       # start-up: matplotlib only to draw
        return stream_plot.draw(self, graph, ax, **kwargs)
