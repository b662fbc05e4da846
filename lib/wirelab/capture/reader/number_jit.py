"""Conversation numbers in one compiled pass over the frames (numba): the twin of ``conversations._conversations``.

numpy numbers conversations by sorting or hashing the five-tuples of all frames
(``first_seen_ids``), then splits those whose ports a new handshake reuses
(``_split_reused``), then finds which way each frame goes: several passes over
the frames. Here one loop visits
each frame once with a hash table of the five-tuples seen so far (open
addressing, linear probing, grown at half full), and decides all three as it
goes:

- a five-tuple not seen before begins a conversation, numbered in order of
  first frame, its first frame's direction "A to B";
- a TCP SYN without ACK of a known five-tuple begins a new conversation when
  its sequence number is not the one of its direction's first frame in the
  current conversation (that frame's sequence number if it is a SYN, else one
  less: Wireshark's ``TCP_A_REUSED_PORTS``; ``conversations`` says why);
- every other frame belongs to its five-tuple's current conversation.

``tally`` sums each conversation's frames for its table (``stats.conversations``) the same
way: one pass, where numpy makes a dozen. Both give exactly what the numpy path
gives (``tests/test_capture_jit.py`` compares them on every committed and public
capture and on crowded random ones); numpy is the reference, used when numba is
not (``jit.kernels``, ``jit.numbering``).
"""
from __future__ import annotations

import numpy as np

from .jit_build import njit
from .part import allocate

__all__ = ["number", "Numbering", "tally", "tapped", "warm_up_steps"]

_MIX1, _MIX2 = -7046029254386353131, 0x27D4EB2F165667C5     # odd 64-bit constants (Fibonacci, xxHash's)


@njit
def _slot(k1, k2, bits):
    # multiplicative (Fibonacci) hashing: the product's high bits depend on all of the key's
    # (int64 arithmetic wraps; the arithmetic shift's sign bits are masked off)
    h = (k1 * _MIX1 ^ k2) * _MIX2
    return (h >> (64 - bits)) & ((1 << bits) - 1)


def number(src, dst, proto, sport, dport, flags, seq, tcp):
    """Per frame: conversation (-1: none), whether it goes A → B; and each conversation's first
    frame. ``src``/``dst`` are address codes (< 2**32: a key packs two), ``proto`` protocol codes (``tcp`` is
    TCP's), ports 0 to 65535; any of them -1 (missing): the frame is in no conversation.
    ``Numbering`` fed every frame at once."""
    n, numbering = src.size, Numbering(tcp)
    conv, a_to_b = np.empty(n, np.int64), np.empty(n, np.bool_)
    oks = tuple(c >= 0 for c in (src, dst, proto, sport, dport, flags, seq))
    numbering.feed(src, dst, proto, sport, dport, flags, seq, oks, conv, a_to_b)
    return conv, a_to_b, numbering.first_frames()


class Numbering:
    """The numbering fed a stretch of frames at a time, in order (``feed``): the state its loop
    carries (the hash table, each group's conversation and base sequence numbers) kept between
    calls, so that a capture is numbered window by window while the reader reads the next one
    (``number`` feeds all frames at once: the same numbers)."""

    def __init__(self, tcp: int, bits: int = 10):
        self.tcp, self.bits, self.at, self.groups, self.convs = tcp, bits, 0, 0, 0
        self.keys1, self.keys2 = np.empty(1 << bits, np.int64), np.empty(1 << bits, np.int64)
        self.slots = np.full(1 << bits, -1, np.int64)
        self.g_conv = np.empty(1 << (bits - 1), np.int64)
        self.g_base, self.g_has = np.empty((1 << (bits - 1), 2), np.int64), np.zeros((1 << (bits - 1), 2), np.bool_)
        self.begins, self.c_fw = np.empty(1024, np.int64), np.empty(1024, np.bool_)

    def feed(self, src, dst, proto, sport, dport, flags, seq, oks, conv, a_to_b) -> None:
        """Number the frames from where the last call stopped to the end of these arrays (the
        capture's columns from its first frame on, as the reader has them: ``oks``, each one's
        ``_ok``; ``conv``/``a_to_b`` written there)."""
        n = src.size
        if self.begins.size < n:               # (room for a conversation per frame)
            self.begins, self.c_fw = _grow_to(self.begins, n), _grow_to(self.c_fw, n)
        while True:
            # (``_run`` loops until the table is half full: arrays that never change inside a
            # loop keep it fast, 3x as fast as growing them in it)
            self.at, self.groups, self.convs = _run(
                self.at, self.groups, self.convs, self.bits, src, dst, proto, sport, dport, flags, seq, oks, self.tcp,
                conv, a_to_b, self.begins, self.c_fw, self.keys1, self.keys2, self.slots, self.g_conv,
                self.g_base, self.g_has)
            if self.at >= n:
                return
            self.bits += 1
            self.keys1, self.keys2, self.slots = _rehash(self.keys1, self.keys2, self.slots, self.bits)
            self.g_conv, self.g_base, self.g_has = _grow(self.g_conv), _grow(self.g_base), _grow(self.g_has)
            self.g_has[self.groups:] = False

    def first_frames(self) -> np.ndarray:
        """Each conversation's first frame (``number``'s third answer)."""
        return self.begins[:self.convs].copy()


def _grow_to(a: np.ndarray, n: int) -> np.ndarray:
    out = np.empty(max(n, 2 * a.size), a.dtype)
    out[:a.size] = a
    return out


@njit
def _run(i, groups, convs, bits, src, dst, proto, sport, dport, flags, seq, oks, tcp, conv, a_to_b, begins, c_fw,
         keys1, keys2, slots, g_conv, g_base, g_has):
    """``number``'s loop from frame ``i`` to the end, or to the first new five-tuple that would
    fill the table more than half (``Numbering.feed`` grows it): (where it stopped, groups, conversations). ``oks``: where
    each of the seven columns has a value (the reader's narrow columns are read as they are,
    no int64 copy with -1 for missing: a sixth of the bytes)."""
    n, mask = src.size, (1 << bits) - 1
    s_ok, d_ok, p_ok, sp_ok, dp_ok, fl_ok, sq_ok = oks
    while i < n:
        if not (s_ok[i] and d_ok[i] and p_ok[i] and sp_ok[i] and dp_ok[i]):
            conv[i], a_to_b[i] = -1, False             # (in no conversation: ARP, ICMP, a later fragment)
            i += 1
            continue
        s, d, p, sp, dp = np.int64(src[i]), np.int64(dst[i]), np.int64(proto[i]), np.int64(sport[i]), np.int64(dport[i])
        fl = np.int64(flags[i]) if fl_ok[i] else np.int64(-1)
        sq = np.int64(seq[i]) if sq_ok[i] else np.int64(-1)
        fw = s < d or (s == d and sp <= dp)
        side = 0 if fw else 1
        if fw:
            k1, k2 = (p << 32) | (sp << 16) | dp, (s << 32) | d
        else:
            k1, k2 = (p << 32) | (dp << 16) | sp, (d << 32) | s
        at = _slot(k1, k2, bits)
        while slots[at] >= 0 and (keys1[at] != k1 or keys2[at] != k2):
            at = (at + 1) & mask
        g = slots[at]
        new = False
        if g < 0:                                      # a five-tuple not seen before
            if 2 * (groups + 1) > mask + 1:
                return i, groups, convs                # (``feed`` grows the table)
            g, groups, new = groups, groups + 1, True
            slots[at], keys1[at], keys2[at] = g, k1, k2
        elif p == tcp and fl >= 0 and (fl & 0x12) == 0x02 and g_has[g, side] \
                and sq != g_base[g, side]:             # a SYN reusing the ports: a new conversation
            new = True
            g_has[g, 0] = g_has[g, 1] = False
        if new:
            begins[convs], c_fw[convs], g_conv[g] = i, fw, convs
            convs += 1
        c = g_conv[g]
        if not g_has[g, side]:                         # this direction's first frame here
            g_has[g, side] = True
            g_base[g, side] = sq if (fl & 0x02) != 0 else (sq - 1) & 0xFFFFFFFF
        conv[i] = c
        a_to_b[i] = fw == c_fw[c]
        i += 1
    return i, groups, convs


@njit
def _grow(a):
    out = np.empty((2 * a.shape[0],) + a.shape[1:], a.dtype)
    out[:a.shape[0]] = a
    return out


@njit
def _rehash(keys1, keys2, slots, bits):
    cap = 1 << bits
    new1, new2, new_slots = np.empty(cap, np.int64), np.empty(cap, np.int64), np.full(cap, -1, np.int64)
    mask = cap - 1
    for j in range(slots.size):
        if slots[j] >= 0:
            at = _slot(keys1[j], keys2[j], bits)
            while new_slots[at] >= 0:
                at = (at + 1) & mask
            new_slots[at], new1[at], new2[at] = slots[j], keys1[j], keys2[j]
    return new1, new2, new_slots


@njit
def tally(ids, a_to_b, frame_len, time, pick, size):
    """Per conversation number below ``size`` of the frames ``pick`` selects: its first frame
    (-1: none), packets and bytes each way ([:, 0] A → B), first and last time (NaN left out, as
    ``np.fmin``/``np.fmax``): ``stats.conversations``' sums in one pass, no copy of the frames."""
    first = np.full(size, -1, np.int64)
    packets, sizes = np.zeros((size, 2), np.int64), np.zeros((size, 2), np.int64)
    start, end = np.full(size, np.nan), np.full(size, np.nan)
    for i in range(ids.size):
        if not pick[i]:
            continue
        g = ids[i]
        if first[g] < 0:
            first[g] = i
        side = 0 if a_to_b[i] else 1
        packets[g, side] += 1
        sizes[g, side] += frame_len[i]
        t = time[i]
        if t == t:                                     # (not NaN)
            if not start[g] <= t:
                start[g] = t
            if not end[g] >= t:
                end[g] = t
    return first, packets, sizes, start, end


@njit
def tapped(conv, proto, payload_offset, payload_ok, cap_len, sport_ok, tcp, udp):
    """Per frame: counted by Wireshark's TCP or UDP conversation tap (in a conversation, TCP
    (``tcp``) or UDP (``udp``), and a TCP header the snaplen left whole: ``payload_offset`` ≤
    ``cap_len`` where it was read); and whether a counted frame has no ports. The reader's
    columns as they are (``proto`` has a value in every conversation's frame). One pass:
    ``stats.numbered``."""
    pick = np.empty(conv.size, np.bool_)
    portless = False
    for i in range(conv.size):
        p = np.int64(proto[i])
        cut = payload_ok[i] and np.int64(payload_offset[i]) > np.int64(cap_len[i])
        keep = conv[i] >= 0 and (p == udp or (p == tcp and not cut))
        pick[i] = keep
        portless |= keep and not sport_ok[i]
    return pick, portless


def warm_up_steps() -> list:
    """Calls with the argument types the callers give (``conversations``: int64 arrays, an int;
    ``stats.numbered``: the reader's columns, ``part.allocate``'s types), so that loading
    compiles them (or reads them from the cache) and no later call compiles them again."""
    def step():
        a = np.array([0, 1, 0, -1], dtype=np.int64)
        number(a, a[::-1].copy(), np.zeros(4, np.int64), a + 2, a + 3, np.full(4, 2, np.int64), a, 0)

    def fed():                                   # (600 five-tuples: the table grows once)
        part = allocate(600)
        names = ("src4", "dst4", "ip_proto", "sport", "dport", "tcp_flags", "tcp_seq")
        for name in names:                       # (600 sources: 600 five-tuples)
            part[name][:] = np.arange(600) if name == "src4" else np.arange(600) % 250
            part[name + "_ok"][:] = True
        numbering, conv, a_to_b = Numbering(0), np.empty(600, np.int64), np.empty(600, np.bool_)
        for stop in (300, 600):
            numbering.feed(*(part[name][:stop] for name in names),
                           tuple(part[name + "_ok"][:stop] for name in names), conv[:stop], a_to_b[:stop])
        return part, conv, a_to_b

    def sums():
        part, conv, a_to_b = fed()
        pick, _ = tapped(conv, part["ip_proto"], part["payload_offset"], part["payload_offset_ok"],
                         part["cap_len"], part["sport_ok"], 6, 17)
        tally(conv, a_to_b, part["frame_len"], part["time"], pick, int(conv.max()) + 1)
        tally(np.zeros(3, np.int64), np.ones(3, np.bool_), np.ones(3, np.int64), np.zeros(3), np.ones(3, np.bool_), 1)
    return [step, fed, sums]
