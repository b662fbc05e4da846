"""Wireshark's Analyze › Expert Information for TCP, from the kit's analysis flags (``tshark -q -z expert``).

One row per kind of note: ``severity`` (error, warning, note, chat), ``group``,
``protocol``, ``summary`` (Wireshark's own words), ``count`` and ``frames`` (the frame
numbers). The marks and their words are those of Wireshark 4.0's
epan/dissectors/packet-tcp.c (``ei_tcp_*``); the flags come from ``tcp_analysis(...,
expert=True)`` (read ``tcp_sequence``'s docstring for their rules). As in Wireshark, a
fast or spurious retransmission is also counted as a retransmission.

Duplicate ACKs are one row per "#n", as tshark's; each FIN says whether its side
initiates or undergoes the closing. "D-SACK Sequence" is made where the capture's bytes
are there (read by ``dsack``: a dataset holds none). Not made (named in the README):
zero-window probes and the notes of protocols other than TCP.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..tcp_sequence import FIN, RST, SYN, ACK

__all__ = ["MARKS", "expert_table", "expert_text"]

#: flag → (severity, group, summary), packet-tcp.c (4.0)
MARKS = {
    "lost_segment": ("warning", "Sequence", "Previous segment(s) not captured (common at capture start)"),
    "ack_unseen": ("warning", "Sequence", "ACKed segment that wasn't captured (common at capture start)"),
    "out_of_order": ("warning", "Sequence", "This frame is a (suspected) out-of-order segment"),
    "zero_window": ("warning", "Sequence", "TCP Zero Window segment"),
    "window_full": ("warning", "Sequence", "TCP window specified by the receiver is now completely full"),
    "retransmission": ("note", "Sequence", "This frame is a (suspected) retransmission"),
    "fast_retransmission": ("note", "Sequence", "This frame is a (suspected) fast retransmission"),
    "spurious_retransmission": ("note", "Sequence", "This frame is a (suspected) spurious retransmission"),
    "duplicate_ack": ("note", "Sequence", "Duplicate ACK"),
    "keep_alive": ("note", "Sequence", "TCP keep-alive segment"),
    "keep_alive_ack": ("note", "Sequence", "ACK to a TCP keep-alive segment"),
    "reused_ports": ("note", "Sequence",
                     "A new tcp session is started with the same ports as an earlier session in this trace"),
    "window_update": ("chat", "Sequence", "TCP window update"),
}
COLUMNS = ["severity", "group", "protocol", "summary", "count", "frames"]
_SEVERITY = ["error", "warning", "note", "chat"]


def expert_table(frames: pd.DataFrame, flags: pd.DataFrame, *, dsack: np.ndarray | None = None) -> pd.DataFrame:
    """The notes of the TCP frames in ``frames`` (a ``read_capture`` table, or rows of one);
    ``flags``: ``tcp_analysis(..., expert=True)`` of the same rows; ``dsack``: the rows whose
    first SACK block is a D-SACK (``dsack.dsack_of``), when the capture's bytes are there."""
    number = frames["frame"].to_numpy(np.int64)
    rows = []
    for name, (severity, group, summary) in MARKS.items():
        marked = flags[name].to_numpy(bool)
        if name == "duplicate_ack" and marked.any() and "dupack_num" in flags:
            found = flags["dupack_num"].to_numpy(np.int64)[marked]
            rows += [("note", "Sequence", "TCP", f"{summary} (#{int(k)})", number[marked][found == k])
                     for k in np.unique(found)]                  # (one row per #n, as tshark)
        elif name == "duplicate_ack" and marked.any():
            rows += _numbered(number, marked, frames, summary)
        elif marked.any():
            rows.append((severity, group, "TCP", summary, number[marked]))
    if dsack is not None and dsack.any():
        rows.append(("warning", "Sequence", "TCP", "D-SACK Sequence", number[dsack]))
    tcp = (frames["proto"] == "tcp").to_numpy() & frames["tcp_flags"].notna().to_numpy()
    bits = frames["tcp_flags"].fillna(0).to_numpy(np.int64)
    rows += _handshake(number, tcp & ((bits & (SYN | ACK)) == SYN), frames["dport"],
                       "Connection establish request (SYN): server port {}")
    rows += _handshake(number, tcp & ((bits & (SYN | ACK)) == SYN | ACK), frames["sport"],
                       "Connection establish acknowledge (SYN+ACK): server port {}")
    rows += _closing(number, tcp & ((bits & FIN) > 0), frames)
    for bit, severity, summary in ((FIN, "chat", "Connection finish (FIN)"),
                                   (RST, "warning", "Connection reset (RST)")):
        marked = tcp & ((bits & bit) > 0)
        if marked.any():
            rows.append((severity, "Sequence", "TCP", summary, number[marked]))
    out = pd.DataFrame([(s, g, p, text, int(f.size), f) for s, g, p, text, f in rows], columns=COLUMNS)
    out["severity"] = pd.Categorical(out["severity"], categories=_SEVERITY, ordered=True)
    return out.sort_values(["severity", "count"], ascending=[True, False], kind="stable").reset_index(drop=True)


def _numbered(number: np.ndarray, dup: np.ndarray, frames: pd.DataFrame, summary: str) -> list[tuple]:
    """"Duplicate ACK (#n)": n counts the duplicates in a row of one direction of a connection
    (any other TCP segment of that direction starts again at 1; packet-tcp.c's ``dupacknum``)."""
    tcp = (frames["proto"] == "tcp").to_numpy() & frames["stream"].ge(0).to_numpy()
    rows = np.flatnonzero(tcp)
    side = frames["stream"].to_numpy(np.int64)[rows] * 2 + frames["a_to_b"].to_numpy(bool)[rows]
    order = rows[np.argsort(side, kind="stable")]               # each direction, in frame order
    d = dup[order].astype(np.int64)
    key = np.sort(side, kind="stable")
    run = np.cumsum(d)
    # n = duplicates so far − duplicates before the last non-duplicate (or the direction's start)
    marker = (d == 0) | np.r_[True, key[1:] != key[:-1]]
    base = np.maximum.accumulate(np.where(marker, np.arange(d.size), 0))
    n = np.zeros(len(frames), dtype=np.int64)
    n[order] = run - (run - d)[base]
    found = n[dup]
    out = []
    for k in np.unique(found):                                   # (one row per #n, as tshark)
        out.append(("note", "Sequence", "TCP", f"{summary} (#{int(k)})", number[dup][found == k]))
    return out


def _closing(number: np.ndarray, fin: np.ndarray, frames: pd.DataFrame) -> list[tuple]:
    """Each FIN: "initiates the connection closing" from the side that sent the connection's
    first FIN, "undergoes" from the other (packet-tcp.c's ``closing_initiator``)."""
    if not fin.any():
        return []
    stream = frames["stream"].to_numpy(np.int64)[fin]
    ab = frames["a_to_b"].to_numpy(bool)[fin]
    streams, first = np.unique(stream, return_index=True)
    initiator = ab[first][np.searchsorted(streams, stream)]
    active = ab == initiator
    return [("note", "Sequence", "TCP", text, number[fin][pick])
            for text, pick in (("This frame initiates the connection closing", active),
                               ("This frame undergoes the connection closing", ~active)) if pick.any()]


def _handshake(number: np.ndarray, marked: np.ndarray, port: pd.Series, summary: str) -> list[tuple]:
    """One row per server port (Wireshark names the port in the summary)."""
    if not marked.any():
        return []
    ports = port.fillna(-1).to_numpy(np.int64)[marked]
    found = number[marked]
    values, inverse = np.unique(ports, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    groups = np.split(found[order], np.flatnonzero(np.diff(inverse[order])) + 1)
    return [("chat", "Sequence", "TCP", summary.format(int(p)), g) for p, g in zip(values, groups)]


_HEADINGS = {"error": "Errors", "warning": "Warns", "note": "Notes", "chat": "Chats"}


def expert_text(table: pd.DataFrame) -> str:
    """``expert_table``'s rows as ``tshark -q -z expert`` prints them: one block per severity,
    its rows in the order first seen (Wireshark 4.0, ui/cli/tap-expert.c's format)."""
    lines = []
    for severity in _SEVERITY:
        rows = table[table["severity"] == severity]
        if not len(rows):
            continue
        # (in one frame Wireshark notes a fast or spurious retransmission before the retransmission)
        plain = (rows["summary"] == MARKS["retransmission"][2]).to_numpy()
        rows = rows.iloc[np.lexsort((plain, [int(f[0]) for f in rows["frames"]]))]
        lines += ["", f"{_HEADINGS[severity]} ({int(rows['count'].sum())})", "=============",
                  "   Frequency      Group           Protocol  Summary"]
        lines += [f"{int(r.count):12d} {r.group:>10} {r.protocol:>18}  {r.summary}" for r in rows.itertuples()]
    return "\n".join(lines) + "\n"
