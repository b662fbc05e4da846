"""Where a loss happened relative to the capture point, per TCP retransmission; the handshake's round trip split there.

Wireshark flags a retransmission but does not say where its original went. From one
capture point the kit tells three places apart, per retransmitted segment (``where``):

* ``before``: the capture never saw the segment's first byte before the resend (it
  fell in a hole, "previous segment not captured"): the original was lost between
  the sender and the capture point (a capture at the receiver sees every loss so);
* ``after``: the original was captured, then sent again, and nothing shows it
  arrived: lost beyond the capture point (a capture at the sender sees every loss so);
* ``spurious``: the original was captured and it arrived: the other side had
  acknowledged all of it before the resend (Wireshark's spurious retransmission:
  the resend came though the original was ACKed), or the first ACK covering it came
  back sooner after the resend than the round trip from the capture point to the
  receiver and back, so it was the original's ACK (Eifel's reasoning, RFC 3522 §1,
  with the handshake's round trip in place of timestamps);
* ``unknown``: the bytes precede the first segment captured (sent before the capture
  began).

The original is the first captured segment holding the resend's first byte. Holes
are the gaps "previous segment not captured" opens in each direction's sequence
space; a byte below the highest sequence seen and in no hole was captured, and one in
a hole was captured once a segment overlapping that hole brought it. Given the file's
bytes, a D-SACK (RFC 2883; ``dsack``) after the resend holding its first byte also
makes it ``spurious``: the receiver got it twice, which a capture at the sender shows
even when the ACKs are late.

The handshake (``handshakes``): SYN → SYN-ACK is the round trip from the capture
point to the server and back (the far side, for a capture at the client), SYN-ACK →
ACK the one to the client and back (the near side); their sum is Wireshark's
``tcp.analysis.initial_rtt`` (packet-tcp.c: the ACK's time minus the latest SYN's;
tcptrace's and Wireshark's documentation name the split). The side with the
shorter round trip is the one the capture was taken nearer to.

Vectorised over every direction of every connection at once (numpy: sort by
direction, running maxima, binary searches); no loop over segments or flows.
"""
from __future__ import annotations

import numpy as np

from ..conversations import conversation_ids
from ..reader.frames import Frames
from ..tcp_sequence import ACK, FIN, SYN, _relative, tcp_flags_of
from .dsack import dsack_of

__all__ = ["PLACES", "REASONS", "loss_places", "handshakes", "loss_places_of", "handshakes_of", "where_summary"]

PLACES = ("before", "after", "spurious", "unknown")
REASONS = {
    "before": "never captured before the resend: lost before the capture point",
    "after": "captured, then resent, no sign it arrived: lost after the capture point",
    "spurious_acked": "its bytes were ACKed before the resend",
    "spurious_early": "the ACK covering it came back sooner than a round trip after the resend",
    "spurious_dsack": "a D-SACK after the resend says it arrived twice",
    "unknown": "sent before the capture began",
}
_SPAN = 2 ** 34           # one direction's block of combined keys (relative sequence numbers are ±2^31 + a segment)
_MID = 2 ** 33


def _blocks(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a sorted ``key``: each element's block start position, and where blocks start."""
    starts = np.r_[True, key[1:] != key[:-1]] if key.size else np.zeros(0, dtype=bool)
    first = np.flatnonzero(starts)
    return first[np.cumsum(starts) - 1], first


def loss_places_of(f: Frames, flags: dict, conv: np.ndarray, a_to_b: np.ndarray, *, buffer=None,
                   shakes: dict | None = None) -> dict[str, np.ndarray]:
    """Every retransmission (``flags["retransmission"]``, from ``tcp_flags_of`` on ``f``) with
    its place: ``row`` (index into ``f``), ``conv``, ``a_to_b``, ``seq``/``end`` (relative to the
    direction's first segment), ``where`` (``PLACES``), ``reason`` (a key of ``REASONS``),
    ``original`` and ``ack`` (rows of the original and of the first ACK covering the resend
    after it, -1: none). ``buffer``: the file's bytes, to read D-SACK blocks (none: not read);
    ``shakes``: ``handshakes_of`` when already made."""
    tcp = np.flatnonzero(f.protocol("tcp") & (f.tcp_seq >= 0) & (conv >= 0))
    side_all = conv[tcp] * 2 + a_to_b[tcp].astype(np.int64)
    order = np.lexsort((tcp, side_all))
    rows, side = tcp[order], side_all[order]                  # each direction, in frame order
    bits = np.maximum(f.tcp_flags[rows], 0)
    seglen = np.maximum(f.payload_len[rows], 0) + ((bits & SYN) > 0) + ((bits & FIN) > 0)
    head, first = _blocks(side)
    raw_seq = f.tcp_seq[rows]
    base_of = np.zeros(int(side.max()) + 2 if side.size else 1, dtype=np.int64)
    base_of[side[first]] = raw_seq[first]
    present = np.zeros(base_of.size, dtype=bool)
    present[side[first]] = True
    seq = _relative(raw_seq, base_of[side])
    data = seglen > 0
    end = seq + seglen
    # nextseq before each segment: a running maximum of combined (direction, end) keys
    top = np.maximum.accumulate(side * _SPAN + np.where(data, end, -_MID) + _MID)
    before = np.r_[np.int64(0), top[:-1]]
    nextseq = np.where(np.arange(rows.size) > head, before - side * _SPAN - _MID, -_MID)
    # holes: [nextseq, seq) where a segment jumped ahead (a direction's start opens none)
    hole = data & (nextseq > -_MID) & (seq > nextseq)
    h_side, h_start, h_end = side[hole], nextseq[hole], seq[hole]
    h_key = h_side * _SPAN + h_start + _MID

    def hole_of(p: np.ndarray) -> np.ndarray:
        k = np.searchsorted(h_key, side[p] * _SPAN + seq[p] + _MID, side="right") - 1
        kk = np.maximum(k, 0)
        inside = (k >= 0) & (h_side[kk] == side[p]) & (seq[p] < h_end[kk]) if h_key.size else np.zeros(p.size, bool)
        return np.where(inside, k, -1)

    resent = np.flatnonzero(np.asarray(flags["retransmission"])[rows] & data)
    behind = np.flatnonzero(data & (seq < nextseq) & (nextseq > -_MID))
    k_r = hole_of(resent)
    # each segment behind the highest sequence, once per hole it overlaps (holes are ordered)
    lo = np.searchsorted(h_side * _SPAN + h_end + _MID, side[behind] * _SPAN + seq[behind] + _MID, side="right")
    hi = np.searchsorted(h_key, side[behind] * _SPAN + end[behind] + _MID, side="left")
    count = np.maximum(hi - lo, 0)
    k_b = np.repeat(lo - np.cumsum(count) + count, count) + np.arange(count.sum())
    original = np.full(resent.size, -1, dtype=np.int64)
    # outside every hole: the first segment that took the direction past the first byte
    out = (k_r < 0) & (seq[resent] >= 0)
    original[out] = np.searchsorted(top, side[resent[out]] * _SPAN + seq[resent[out]] + _MID, side="right")
    # inside a hole: an earlier segment that filled it where the resend starts
    original[k_r >= 0] = _filled(resent[k_r >= 0], k_r[k_r >= 0], np.repeat(behind, count), k_b, seq, end)
    where = np.where(seq[resent] < 0, "unknown", np.where(original >= 0, "after", "before")).astype(object)
    reason = where.copy()
    ack, acked_before = _acks(rows, side, bits, f.tcp_ack, base_of, present, resent, end, len(f))
    t = f.time[rows]
    rt = _return_trip(shakes if shakes is not None else handshakes_of(f, conv, a_to_b), side[resent])
    captured = original >= 0
    early = captured & ~acked_before & (ack >= 0)
    early[early] = (t[np.maximum(ack[early], 0)] - t[resent[early]]) < rt[early]
    dsacked = _dsacked(f, buffer, rows, side, seq, base_of, bits, resent) & (seq[resent] >= 0)
    # (a D-SACK of a resend whose original the capture missed: it arrived all the same)
    reason[dsacked] = "spurious_dsack"
    reason[early] = "spurious_early"
    reason[captured & acked_before] = "spurious_acked"
    where[(captured & (acked_before | early)) | dsacked] = "spurious"
    return {"row": rows[resent], "conv": side[resent] // 2, "a_to_b": (side[resent] % 2).astype(bool),
            "seq": seq[resent], "end": end[resent], "where": where, "reason": reason,
            "original": np.where(captured, rows[np.maximum(original, 0)], -1),
            "ack": np.where(ack >= 0, rows[np.maximum(ack, 0)], -1)}


def _filled(r: np.ndarray, k_r: np.ndarray, b: np.ndarray, k_b: np.ndarray, seq, end) -> np.ndarray:
    """For resends ``r`` in holes ``k_r``: the earliest segment of ``b`` (segments behind the
    highest sequence, once per hole ``k_b`` they overlap) in the same hole, before it, holding
    its first byte (-1: none). Pairs are made within a hole only: a few segments each."""
    out = np.full(r.size, -1, dtype=np.int64)
    if not r.size or not b.size:
        return out
    order = np.lexsort((b, k_b))
    b, k_b = b[order], k_b[order]
    m = seq.size + 1
    lo = np.searchsorted(k_b, k_r, side="left")
    hi = np.searchsorted(k_b * m + b, k_r * m + r, side="left")      # (earlier in that hole)
    count = np.maximum(hi - lo, 0)
    who = np.repeat(np.arange(r.size), count)
    cand = b[np.repeat(lo, count) + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)]
    holds = (seq[cand] <= seq[r[who]]) & (seq[r[who]] < end[cand])
    best = np.full(r.size, np.iinfo(np.int64).max)
    np.minimum.at(best, who[holds], cand[holds])
    return np.where(best < np.iinfo(np.int64).max, best, -1)


def _acks(rows, side, bits, raw_ack, base_of, present, resent, end, n) -> tuple[np.ndarray, np.ndarray]:
    """For each resend: the first ACK of the other direction after it covering its end
    (position, -1: none), and whether one before it already covered it."""
    has = np.flatnonzero((bits & ACK) > 0)
    target = side[has] ^ 1                                # the direction an ACK acknowledges
    keep = present[np.minimum(target, present.size - 1)] & (target < present.size)
    has, target = has[keep], target[keep]
    if not has.size:
        return np.full(resent.size, -1, dtype=np.int64), np.zeros(resent.size, dtype=bool)
    order = np.lexsort((rows[has], target))
    has, target = has[order], target[order]
    value = _relative(raw_ack[rows[has]], base_of[target])
    top = np.maximum.accumulate(target * _SPAN + value + _MID)
    when = target * (n + 1) + rows[has]                   # (direction acknowledged, frame) keys
    mine = side[resent]
    at = np.searchsorted(when, mine * (n + 1) + rows[resent], side="left")  # first ACK after the resend
    prior = at - 1
    need = mine * _SPAN + end[resent] + _MID
    ok = prior >= 0
    acked_before = np.zeros(resent.size, dtype=bool)
    acked_before[ok] = (target[prior[ok]] == mine[ok]) & (top[prior[ok]] >= need[ok])
    first = np.maximum(at, np.searchsorted(top, need, side="left"))
    found = first < has.size
    found[found] = target[first[found]] == mine[found]
    return np.where(found, has[np.minimum(first, max(has.size - 1, 0))], -1), acked_before


def handshakes_of(f: Frames, conv: np.ndarray, a_to_b: np.ndarray) -> dict[str, np.ndarray]:
    """Each connection whose handshake was captured: ``conv``, ``client_a`` (the SYN went A → B),
    rows ``syn`` (the latest before the SYN-ACK), ``synack``, ``ack``, and in seconds
    ``server_side`` (SYN → SYN-ACK), ``client_side`` (SYN-ACK → ACK) and ``initial_rtt``."""
    tcp = f.protocol("tcp") & (f.tcp_seq >= 0) & (conv >= 0)
    hs = np.maximum(f.tcp_flags, 0) & (SYN | ACK)
    n = len(f) + 1
    sa = np.flatnonzero(tcp & (hs == SYN | ACK))
    convs, at = np.unique(conv[sa], return_index=True)
    synack = sa[at]                                            # each connection's first SYN-ACK
    syn = np.flatnonzero(tcp & (hs == SYN))
    s_key = conv[syn] * n + syn
    s_order = np.argsort(s_key, kind="stable")
    s_key, syn = s_key[s_order], syn[s_order]
    i = np.searchsorted(s_key, convs * n + synack) - 1
    got = (i >= 0) & (conv[syn[np.maximum(i, 0)]] == convs) if syn.size else np.zeros(convs.size, bool)
    syn_row = np.where(got, syn[np.maximum(i, 0)] if syn.size else 0, -1)
    client = np.where(got, a_to_b[np.maximum(syn_row, 0)], False)
    acks = np.flatnonzero(tcp & (hs == ACK))
    a_key = (conv[acks] * 2 + a_to_b[acks]) * n + acks
    a_order = np.argsort(a_key, kind="stable")
    a_key, acks = a_key[a_order], acks[a_order]
    j = np.searchsorted(a_key, (convs * 2 + client) * n + synack, side="right")
    jj = np.minimum(j, max(acks.size - 1, 0))
    got &= (j < acks.size)
    got[got] &= (conv[acks[jj[got]]] == convs[got]) & (a_to_b[acks[jj[got]]] == client[got])
    ack_row = np.where(got, acks[jj] if acks.size else 0, -1)
    t = f.time
    pick = got
    far = t[synack[pick]] - t[syn_row[pick]]
    near = t[ack_row[pick]] - t[synack[pick]]
    return {"conv": convs[pick], "client_a": client[pick].astype(bool), "syn": syn_row[pick], "synack": synack[pick],
            "ack": ack_row[pick], "server_side": far, "client_side": near, "initial_rtt": far + near}


def _dsacked(f: Frames, buffer, rows, side, seq, base_of, bits, resent) -> np.ndarray:
    """Which resends a later D-SACK of the other side holds the first byte of (``dsack``)."""
    out = np.zeros(resent.size, dtype=bool)
    if buffer is None or not resent.size:
        return out
    acks = np.flatnonzero(((bits & ACK) > 0) & (f.tcp_opts_len[rows] >= 10))
    d = dsack_of(f, buffer, rows[acks])
    if not d["row"].size:
        return out
    order = np.argsort(rows[acks], kind="stable")
    pos = acks[order][np.searchsorted(rows[acks][order], d["row"])]       # the D-SACKs' positions
    target = side[pos] ^ 1
    base = base_of[np.minimum(target, base_of.size - 1)]
    left, right = _relative(d["left"], base), _relative(d["right"], base)
    key = side[resent] * _SPAN + seq[resent] + _MID
    by = np.argsort(key, kind="stable")
    lo = np.searchsorted(key[by], target * _SPAN + left + _MID, side="left")
    hi = np.searchsorted(key[by], target * _SPAN + right + _MID, side="left")
    count = np.maximum(hi - lo, 0)
    which = by[np.repeat(lo - np.cumsum(count) + count, count) + np.arange(count.sum())]
    later = rows[resent[which]] < np.repeat(d["row"], count)
    out[which[later]] = True
    return out


def _return_trip(h: dict, direction: np.ndarray) -> np.ndarray:
    """For data directions ``direction`` (conv·2 + a_to_b): the handshake's round trip from the
    capture point to that direction's receiver and back (0 without a handshake; ``h``:
    ``handshakes_of``)."""
    out = np.zeros(direction.size)
    if not direction.size:
        return out
    i = np.searchsorted(h["conv"], direction // 2)
    ii = np.minimum(i, max(h["conv"].size - 1, 0))
    ok = (i < h["conv"].size) & (h["conv"][ii] == direction // 2) if h["conv"].size else np.zeros(direction.size, bool)
    from_client = (direction % 2).astype(bool) == h["client_a"][ii] if h["conv"].size else ok
    # data from the client goes to the server: its round trip is SYN → SYN-ACK
    out[ok] = np.where(from_client[ok], h["server_side"][ii[ok]], h["client_side"][ii[ok]])
    return out


def where_summary(where: np.ndarray) -> dict[str, int]:
    """How many retransmissions in each place (``PLACES``)."""
    return {place: int(np.count_nonzero(where == place)) for place in PLACES}


def _streams_and_numbers(df) -> tuple[np.ndarray, np.ndarray]:
    """``df``'s Wireshark stream numbers and frame numbers (``read_capture``'s table: found here)."""
    if "stream" in df:
        stream = df["stream"].to_numpy(np.int64)
    else:
        stream = conversation_ids(df)["stream"].to_numpy(np.int64)
    frame = df["frame"].to_numpy(np.int64) if "frame" in df else np.arange(1, len(df) + 1)
    return stream, frame


def _analysed(df, flags):
    f = Frames.of(df)
    if flags is None:
        marks, conv, ab = tcp_flags_of(f)
    else:
        marks = {"retransmission": flags["retransmission"].to_numpy(bool)}
        conv, ab = flags["conv"].to_numpy(np.int64), flags["a_to_b"].to_numpy(bool)
    return f, marks, conv, ab


def loss_places(df, flags=None, *, buffer=None):
    """Where each retransmission's original was lost (module docstring), as a DataFrame:
    ``frame``, ``stream`` (``tcp.stream``), ``a_to_b``, ``time`` (s since the first frame),
    ``seq``/``end`` (relative), ``where``, ``reason`` (in words), ``original_frame`` and
    ``ack_frame`` (<NA>: none). ``df``: ``read_capture``'s table (or ``Capture.frames``);
    ``flags``: its ``tcp_analysis`` when already made; ``buffer``: the file's bytes (for D-SACKs)."""
    import pandas as pd                                 # (start-up: analyze's report reads no DataFrame)

    f, marks, conv, ab = _analysed(df, flags)
    r = loss_places_of(f, marks, conv, ab, buffer=buffer)
    stream, frame = _streams_and_numbers(df)
    row, t0 = r["row"], (f.time[0] if len(f) else 0.0)

    def number(rows):                                   # (-1: none → <NA>)
        return pd.Series(frame[np.maximum(rows, 0)] if rows.size else rows, dtype="Int64").mask(rows < 0)
    return pd.DataFrame({"frame": frame[row], "stream": stream[row], "a_to_b": r["a_to_b"], "time": f.time[row] - t0,
                         "seq": r["seq"], "end": r["end"], "where": r["where"].astype(str),
                         "reason": [REASONS[k] for k in r["reason"]],
                         "original_frame": number(r["original"]), "ack_frame": number(r["ack"])})


def handshakes(df, flags=None):
    """Each captured handshake's round trip split at the capture point (module docstring):
    ``stream``, ``client`` and ``server`` (address:port), the frames ``syn``, ``synack``, ``ack``, and
    ``server_side``, ``client_side``, ``initial_rtt`` (s), ``nearer`` (the side with the shorter trip)."""
    # start-up: pandas only when handshakes() runs
    import pandas as pd

    f, _, conv, ab = _analysed(df, flags)
    h = handshakes_of(f, conv, ab)
    stream, frame = _streams_and_numbers(df)
    syn = h["syn"]
    names = np.asarray(f.addresses + ["?"], dtype=object)
    client = [f"{names[s]}:{p}" for s, p in zip(f.src[syn], f.sport[syn])]
    server = [f"{names[d]}:{p}" for d, p in zip(f.dst[syn], f.dport[syn])]
    return pd.DataFrame({"stream": stream[syn], "client": client, "server": server, "syn": frame[syn],
                         "synack": frame[h["synack"]], "ack": frame[h["ack"]], "server_side": h["server_side"],
                         "client_side": h["client_side"], "initial_rtt": h["initial_rtt"],
                         "nearer": np.where(h["client_side"] < h["server_side"], "client", "server")})
