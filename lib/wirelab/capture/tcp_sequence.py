"""TCP sequence analysis like Wireshark's ``tcp.analysis.*`` flags, vectorised per direction.

The rules (Wireshark 4.0, epan/dissectors/packet-tcp.c,
``tcp_analyze_sequence_number``), for each segment of one direction, where
*nextseq* is the highest seq + length seen so far in that direction and
*seglen* counts SYN and FIN as one byte:

* lost_segment: seq > nextseq ("previous segment not captured"), not RST.
* duplicate_ack: no data, no SYN/FIN/RST, window ≠ 0 and unchanged, seq =
  nextseq, ack = the previous ack of this direction; not when the other side's last
  segment was a keep-alive (then it is the keep-alive's ACK).
* a segment carrying data with seq < nextseq (not a keep-alive) is, in order:
  fast_retransmission if the other direction has sent ≥ 2 duplicate ACKs for
  exactly this seq, the last under 20 ms ago; spurious_retransmission if the
  other side had already acknowledged all of it; out_of_order if it came less
  than one handshake RTT (3 ms without a handshake; never if earlier) after the segment that
  set nextseq and does not end at nextseq; otherwise retransmission (tshark
  4.0.17 checks spurious before out-of-order: a resend of acknowledged bytes arriving
  within the RTT is spurious).
  Wireshark marks fast and spurious ones as retransmissions too.

Three more of Wireshark's expert notes, with ``expert=True`` (``EXPERT``):

* keep_alive: 0 or 1 byte starting one byte before nextseq, not SYN/FIN/RST;
* zero_window: a window of 0, not SYN/FIN/RST;
* window_update: no data, a window ≠ 0 and ≠ this direction's previous one, seq =
  nextseq, ack = the previous ack, not SYN/FIN/RST;
* window_full ("TCP window specified by the receiver is now completely full"): a segment
  with data that ends at the other side's last ACK plus its window, scaled by the shift its
  SYN announced (not made when that SYN is not in the capture);
* reused_ports ("A new tcp session is started with the same ports as an earlier session
  in this trace"): the SYN that begins it (``conversations``' docstring);
* keep_alive_ack ("ACK to a TCP keep-alive segment"): what would be a duplicate ACK
  when the other side's last segment was a keep-alive;
* dupack_num: a duplicate ACK's number, "Duplicate ACK (#n)" (0 on other frames);
* ack_unseen ("ACKed segment that wasn't captured"): an ACK beyond the other side's
  highest contiguous sequence number seen (then that mark moves up to its nextseq; a
  segment starting at the mark moves it to nextseq). This one follows both sides frame by
  frame (``_acked_unseen``, a loop: only with ``expert``).

(Wireshark skips these on a zero-window probe, 1 byte at nextseq while the other
side's window is 0; here they are not skipped.)

A TCP segment carried in IP fragments is analysed whole when its last fragment
arrives, as Wireshark does after reassembly: its length is all its fragments'
payload, its time the last fragment's (``_reassembled``); counting only the first
fragment's part made every next segment "previous segment not captured". Its flags
are on its first fragment's frame (the one with the TCP header, in its conversation;
Wireshark shows them on the last).

A segment whose header (options included) the snaplen cut is analysed (it moves the
state: a duplicate ACK is counted) but shows no flag: Wireshark's dissector runs the
analysis, then throws at the cut options before it adds the analysis to the tree.

Sequence numbers are made relative per direction (32-bit wrap handled for
flows under 2 GiB per direction). The work is done on numpy columns
(``tcp_flags_of``, on ``frames.Frames``); ``tcp_analysis`` takes a DataFrame.
"""
from __future__ import annotations

import numpy as np

from .conversations import conversations_of, first_seen_ids, reused_ports
from .reader.frames import Frames

__all__ = ["tcp_analysis", "tcp_flags_of", "retransmission_summary", "FLAGS", "EXPERT"]

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
FAST_RETRANSMIT_WINDOW = 0.020       # s, Wireshark's 20 ms
DEFAULT_OOO_THRESHOLD = 0.003        # s, without a handshake RTT
FLAGS = ["retransmission", "fast_retransmission", "spurious_retransmission", "out_of_order",
         "lost_segment", "duplicate_ack"]
#: Wireshark's expert notes beyond the six flags (``tcp_analysis(df, expert=True)``)
EXPERT = ["keep_alive", "zero_window", "window_update", "ack_unseen", "keep_alive_ack", "window_full",
          "reused_ports"]
_NONE = np.iinfo(np.int64).min


def _relative(x: np.ndarray, base: int) -> np.ndarray:
    """Signed distance from ``base`` modulo 2^32."""
    return ((x - base + 2 ** 31) % 2 ** 32) - 2 ** 31


def _before(values: np.ndarray, fill) -> np.ndarray:
    """Each element's predecessor (``fill`` for the first)."""
    return np.concatenate([np.array([fill], dtype=values.dtype), values[:-1]])


def _cummax_with_time(end: np.ndarray, t: np.ndarray):
    """Before each packet: the highest ``end`` so far and the time it was first reached."""
    best = np.maximum.accumulate(end)
    new = end > _before(best, _NONE)
    idx = np.maximum.accumulate(np.where(new, np.arange(end.size), 0))
    return _before(best, _NONE), _before(t[idx], np.nan)


def _direction(rows: np.ndarray, c: dict, base: int, rev_ack_base: int) -> dict:
    """Per-direction state (``rows``: its frames, in order): nextseq before each packet,
    duplicate ACKs and their running count, lost segments, segments behind nextseq."""
    seq = _relative(c["seq"][rows], base)
    ack = _relative(c["ack"][rows], rev_ack_base)
    flags, t, win, data = c["flags"][rows], c["time"][rows], c["win"][rows], c["len"][rows]
    seglen = data + ((flags & SYN) > 0) + ((flags & FIN) > 0)
    end = seq + seglen
    nextseq, nexttime = _cummax_with_time(end, t)
    first = np.arange(seq.size) == 0
    has_ack = (flags & ACK) > 0
    # the previous ack of this direction (Wireshark keeps the last seen)
    last = np.maximum.accumulate(np.where(has_ack, np.arange(seq.size), -1))
    prev = _before(last, -1)
    prev_ack = np.where(prev >= 0, ack[np.maximum(prev, 0)], _NONE)
    control = (flags & (SYN | FIN | RST)) > 0
    lost = ~first & (seq > nextseq) & ((flags & RST) == 0)
    dup = (~first & (seglen == 0) & (win != 0) & (win == _before(win, -1)) & (seq == nextseq)
           & (prev >= 0) & (ack == prev_ack) & ~control)
    counted = np.cumsum(dup)
    run_start = np.maximum.accumulate(np.where(~dup, np.arange(seq.size), 0))
    keepalive = (seglen <= 1) & (seq == nextseq - 1) & ~control
    behind = ~first & ((seglen > 0) | ((flags & (SYN | FIN)) > 0)) & (seq < nextseq) & ~keepalive
    update = (~first & (seglen == 0) & (win != 0) & (win != _before(win, -1)) & (seq == nextseq)
              & (prev >= 0) & (ack == prev_ack) & ~control)
    return {"rows": rows, "seq": seq, "end": end, "ack": ack, "has_ack": has_ack, "t": t, "win": win, "flags": flags,
            "nextseq": nextseq, "nexttime": nexttime, "lost_segment": lost, "duplicate_ack": dup,
            "dupnum": counted - counted[run_start], "behind": behind, "data": data,
            "keep_alive": keepalive, "zero_window": (win == 0) & ~control, "window_update": update}


def tcp_flags_of(f: Frames, *, expert: bool = False) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Wireshark-style flags for every frame (False for non-TCP frames): ``FLAGS`` (and with
    ``expert``, ``EXPERT``) → bool arrays, and each frame's conversation and direction
    (``conversations_of``)."""
    conv, a_to_b = conversations_of(f, later_fragments=False)
    out = {name: np.zeros(len(f), dtype=bool) for name in FLAGS + (EXPERT if expert else [])}
    if expert:                                    # "Duplicate ACK (#n)": tcp.analysis.duplicate_ack_num
        out["dupack_num"] = np.zeros(len(f), dtype=np.int64)
        out["reused_ports"] = reused_ports(f, conv) & f.protocol("tcp")
    tcp = np.flatnonzero(f.protocol("tcp") & (f.tcp_seq >= 0) & (conv >= 0))
    if not tcp.size:
        return out, conv, a_to_b
    at, length = _reassembled(f, tcp)
    keep = np.argsort(at, kind="stable")          # segments in the order they are whole
    heads, tcp = tcp[keep], at[keep]              # (headers and flags: the first fragment's frame)
    c = {"seq": f.tcp_seq[heads], "ack": np.maximum(f.tcp_ack[heads], 0), "flags": np.maximum(f.tcp_flags[heads], 0),
         "win": np.maximum(f.tcp_win[heads], 0), "len": length[keep], "time": f.time[tcp],
         "wscale": f.tcp_wscale[heads]}
    ab_all = a_to_b[heads]
    order = np.argsort(conv[heads], kind="stable")
    bounds = np.flatnonzero(np.diff(conv[heads][order])) + 1
    for rows in np.split(order, bounds):                 # one conversation, in frame order
        ab = ab_all[rows]
        sides = {True: rows[ab], False: rows[~ab]}
        base = {side: int(c["seq"][r[0]]) if r.size else 0 for side, r in sides.items()}
        state = {side: _direction(r, c, base[side], base[not side]) for side, r in sides.items() if r.size}
        rtt = _handshake_rtt(rows, ab, c)
        for side, s in state.items():
            for name, values in _classify(s, state.get(not side), rtt).items():
                if name in out:
                    out[name][heads[s["rows"]]] = values
            for name in EXPERT[:3] if expert else ():
                out[name][heads[s["rows"]]] = s[name]
            if expert:
                out["dupack_num"][heads[s["rows"]]] = np.where(s["duplicate_ack"], s["dupnum"], 0)
        if expert:
            out["ack_unseen"][heads[rows]] = _acked_unseen(ab, state, rows)
            shift = _window_shifts(rows, ab, c)
            for side, s in state.items():
                if (not side) in state:
                    out["window_full"][heads[s["rows"]]] = _window_full(s, state[not side], shift[not side])
    cut = f.payload_offset > f.cap_len        # (see the module docstring: analysed, not shown)
    for values in out.values():
        values[cut] = 0
    return out, conv, a_to_b


def _window_shifts(rows: np.ndarray, ab: np.ndarray, c: dict) -> dict[bool, int | None]:
    """Each direction's window scale shift from its SYN (RFC 7323 §2.2): the option's, 0 if
    its SYN or the other's had none, None if its SYN is not in the capture (Wireshark's
    ``win_scale`` -1: unknown)."""
    out = {}
    for side in (True, False):
        syn = rows[(ab == side) & ((c["flags"][rows] & SYN) > 0)]
        out[side] = None if not syn.size else max(int(c["wscale"][syn[0]]), -1)
    both = all(v is not None and v >= 0 for v in out.values())
    return {side: None if v is None else (v if both else 0) for side, v in out.items()}


def _window_full(s: dict, rev: dict, shift: int | None) -> np.ndarray:
    """Wireshark's TCP_A_WINDOW_FULL: a segment with data (not SYN/FIN/RST) that ends where the
    other side's last segment's ACK plus its window (scaled) ends, packet-tcp.c (4.0)."""
    if shift is None:
        return np.zeros(s["seq"].size, dtype=bool)
    pos = np.searchsorted(rev["rows"], s["rows"]) - 1
    at = np.maximum(pos, 0)
    edge = rev["ack"][at] + (rev["win"][at] << shift)
    return ((pos >= 0) & rev["has_ack"][at] & (s["data"] > 0) & ((s["flags"] & (SYN | FIN | RST)) == 0)
            & (s["end"] == edge))


def _acked_unseen(ab: np.ndarray, state: dict, rows: np.ndarray) -> np.ndarray:
    """Wireshark's TCP_A_ACK_LOST_PACKET for one conversation's segments (``rows``, in order;
    ``ab``: their directions; ``state``: ``_direction``'s per side), epan/dissectors/packet-tcp.c
    (4.0): ``maxseqtobeacked`` per side, 0 while unset."""
    # (a loop frame by frame, over Python lists, each side's state in its own local: ~3x as
    # fast as numpy scalars or dicts. A side's ``rows`` are ``rows[ab]`` in order, so its
    # columns go back into frame order by ``ab``)
    columns = []
    for name in ("has_ack", "ack", "seq", "end"):
        values = np.zeros(rows.size, dtype=state[next(iter(state))][name].dtype)
        for side, s in state.items():
            values[ab == side] = s[name]
        columns.append(values.tolist())
    hits = []
    mark_a = mark_b = next_a = next_b = 0        # (A: the side ``ab`` True; B: the other)
    for n, (a_side, has_ack, ack, seq, end) in enumerate(zip(ab.tolist(), *columns)):
        if a_side:
            if has_ack and mark_b and ack > mark_b:
                hits.append(n)
                mark_b = next_b
            if end > next_a or not next_a:
                next_a = end
            if seq == mark_a or not mark_a:
                mark_a = next_a
        else:
            if has_ack and mark_a and ack > mark_a:
                hits.append(n)
                mark_a = next_a
            if end > next_b or not next_b:
                next_b = end
            if seq == mark_b or not mark_b:
                mark_b = next_b
    out = np.zeros(rows.size, dtype=bool)
    out[hits] = True
    return out


def _reassembled(f: Frames, tcp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the TCP segments whose headers are at frames ``tcp``: the frame where each is whole
    (its own, or the last fragment of its IP datagram) and its payload (all fragments').
    A later fragment belongs to the latest first fragment before it with the same addresses,
    protocol and IP id."""
    payload = np.maximum(f.payload_len, 0)
    at, length = tcp.copy(), payload[tcp].copy()
    heads = np.flatnonzero(f.more_frags[tcp] & (f.frag_offset[tcp] <= 0))
    later = np.flatnonzero(f.frag_offset > 0)
    if not heads.size or not later.size:
        return at, length
    rows = np.concatenate([tcp[heads], later])
    keys = np.stack([f.src[rows], f.dst[rows], f.proto[rows], f.ip_id[rows]], axis=1)
    ids, _ = first_seen_ids(keys)
    order = np.lexsort((rows, ids))              # by datagram key, then file order
    is_head = order < heads.size
    owner = np.maximum.accumulate(np.where(is_head, np.arange(order.size), -1))
    mine = ~is_head & (owner >= 0)
    mine[mine] &= ids[order][owner[mine]] == ids[order][mine]    # (the head of the same key)
    head_of = order[owner[mine]]                  # index into ``heads``
    fragment = rows[order[mine]]
    np.add.at(length, heads[head_of], payload[fragment])
    np.maximum.at(at, heads[head_of], fragment)
    return at, length


def tcp_analysis(df, *, expert: bool = False):
    """Wireshark-style flags for every frame of a ``read_capture`` DataFrame (False for non-TCP
    frames; with ``expert`` also keep-alives, zero windows and window updates), plus ``conv``
    (conversation) and ``a_to_b`` (direction); index = df's."""
    import pandas as pd                                 # (start-up: analyze reads no DataFrame)

    flags, conv, a_to_b = tcp_flags_of(Frames.of(df), expert=expert)
    return pd.DataFrame({**flags, "conv": conv, "a_to_b": a_to_b}, index=df.index)


def _handshake_rtt(rows: np.ndarray, ab: np.ndarray, c: dict) -> float | None:
    """Time from the SYN to the ACK that completes the handshake, as seen at the capture point:
    from the latest SYN before that ACK (a lost SYN's resend restarts it, as Wireshark's
    ``ts_mru_syn``, epan/dissectors/packet-tcp.c 4.0)."""
    handshake = c["flags"][rows] & (SYN | ACK)
    syn = np.flatnonzero(handshake == SYN)
    if not syn.size:
        return None
    after = np.flatnonzero((np.arange(rows.size) > syn[0]) & (ab == ab[syn[0]]) & (handshake == ACK))
    if not after.size:
        return None
    latest = syn[syn < after[0]][-1]
    return float(c["time"][rows[after[0]]] - c["time"][rows[latest]])


def _classify(s: dict, rev: dict | None, rtt: float | None) -> dict[str, np.ndarray]:
    """Split the segments that are behind nextseq into fast/out-of-order/spurious/plain."""
    n = s["seq"].size
    fast = np.zeros(n, dtype=bool)
    spurious = np.zeros(n, dtype=bool)
    behind = s["behind"]
    if rev is not None and behind.any():
        # the reverse direction's state just before each of our packets
        pos = np.searchsorted(rev["rows"], s["rows"]) - 1
        have = pos >= 0
        # Wireshark's lastack is the reverse direction's last segment's, ACK flag or not: after
        # an RST without one (ack 0) it is unset, and nothing is fast or spurious against it
        ap = np.maximum(pos, 0)
        ahave = have & rev["has_ack"][ap]
        last_ack = np.where(ahave, rev["ack"][ap], _NONE)
        last_ack_t = np.where(ahave, rev["t"][ap], np.nan)
        dupnum = np.where(have, rev["dupnum"][np.maximum(pos, 0)], 0)
        seq, t = s["seq"], s["t"]
        fast = behind & ahave & (dupnum >= 2) & (last_ack == seq) & (t - last_ack_t < FAST_RETRANSMIT_WINDOW)
        spurious = behind & ahave & (s["data"] > 0) & (seq + s["data"] <= last_ack)
    dup = s["duplicate_ack"]
    answer = np.zeros(n, dtype=bool)
    if rev is not None and dup.any():             # the answer to a keep-alive is no duplicate ACK
        last = np.searchsorted(rev["rows"], s["rows"]) - 1
        answer = dup & (last >= 0) & rev["keep_alive"][np.maximum(last, 0)]
        dup = dup & ~answer
    threshold = rtt if rtt else DEFAULT_OOO_THRESHOLD
    since = s["t"] - s["nexttime"]     # Wireshark's t is unsigned: negative = huge
    spurious &= ~fast                  # (exclusive anyway: a fast one starts at the last ACK)
    with np.errstate(invalid="ignore"):         # (a spurious one is no out-of-order one: 4.0.17 checks it first)
        ooo = behind & ~fast & ~spurious & (since >= 0) & (since < threshold) & (s["nextseq"] != s["end"])
    return {"retransmission": behind & ~ooo, "fast_retransmission": fast, "spurious_retransmission": spurious,
            "out_of_order": ooo, "lost_segment": s["lost_segment"], "duplicate_ack": dup,
            "keep_alive_ack": answer}


def retransmission_summary(df, flags=None):
    """Per conversation: segments with data, and how many carry each flag."""
    flags = tcp_analysis(df) if flags is None else flags
    data = (df["payload_len"].fillna(0) > 0).to_numpy() & (df["proto"] == "tcp").to_numpy()
    f = flags[flags["conv"] >= 0].copy()
    f["data_segments"] = data[flags["conv"].to_numpy() >= 0]
    out = f.groupby("conv")[["data_segments"] + FLAGS].sum()
    out["retransmitted_fraction"] = out["retransmission"] / out["data_segments"].where(out["data_segments"] > 0)
    return out
