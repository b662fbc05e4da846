"""The record walk of ``walk.py``, compiled (numba): the same offsets and kinds, faster.

Why a second walker? Finding where each record starts is a chain: the
length in record k's header says where record k+1 starts. ``walk.py``
follows many chains at once with numpy, because one record at a time in
Python costs ~0.4 µs. Compiled code can take one record at a time cheaply,
but then it waits for memory at every record (~110 ns: the next header is
in a cache line nobody has asked for yet). So this walker also follows
several chains at once, in one loop that steps each chain in turn: the
processor then fetches several headers at the same time.

1. ``_seed``: cut the window into ``chains`` stretches and find, near the
   start of each, a position where a record very probably starts (it and
   the next two records look right);
2. ``_chains``: walk every chain one record per turn until it reaches the
   next seed, cannot read a record, or fills its share of the table;
3. stitch (in ``walk``): from the true first record, follow the plain
   one-record-at-a-time walk, but where it lands on a position a chain
   visited, take that chain's records as they are (the step is
   deterministic: from the same position the same records follow).

So the result is exactly the plain walk's, whatever the seeds were: the
seeds only decide how much of it comes from the chains.
``tests/test_capture_jit.py`` compares both walkers on damaged files too.

The functions are plain Python here; ``jit.py`` compiles them (and falls
back to ``walk.py`` when numba is missing).
"""
from __future__ import annotations

import numpy as np

from .jit import PCAP, PCAPNG, njit

__all__ = ["walk", "PCAP", "PCAPNG"]

SHB = 0x0A0D0D0A
TEN_YEARS = 10 * 365 * 86400


@njit
def _u32(buf, p, big):
    """The unsigned 32-bit integer at byte ``p`` (the caller checked p + 4 ≤ len(buf))."""
    if big:
        return (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) \
            | np.int64(buf[p + 3])
    return np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16) \
        | (np.int64(buf[p + 3]) << 24)


@njit
def _step(buf, pos, fmt, big, rec_len, section, sections):
    """(next record's start, readable, kind) of the record at ``pos``: ``Layout.step1``."""
    if fmt == PCAP:
        return pos + rec_len + _u32(buf, pos + 8, big), True, np.int64(0)
    kind = _u32(buf, pos, big)
    length = _u32(buf, pos + 4, big)
    ok = length >= 12 and (length & 3) == 0 and (not sections or kind != SHB or pos == section)
    return pos + length, ok, kind


@njit
def _plausible(buf, p, fmt, big, ticks, biggest, first_ts):
    """True where a record very probably starts at ``p`` (pcap: sane header fields;
    pcapng: a usual block type and the length repeated at the block's end)."""
    n = buf.size
    if fmt == PCAP:
        if p + 16 > n or _u32(buf, p + 4, big) >= ticks:
            return False
        incl, orig = _u32(buf, p + 8, big), _u32(buf, p + 12, big)
        return incl <= orig and incl <= biggest and abs(_u32(buf, p, big) - first_ts) < TEN_YEARS
    if p + 8 > n or _u32(buf, p, big) - 2 > 4:
        return False
    length = _u32(buf, p + 4, big)
    return length >= 12 and length % 4 == 0 and p + length <= n and _u32(buf, p + length - 4, big) == length


@njit
def _seed(buf, lo, hi, fmt, big, rec_len, min_header, align, ticks, biggest, first_ts):
    """The first position in [lo, hi) where a record and the next two look right; -1 if none."""
    n = buf.size
    for p in range(lo, hi, align):
        q = p
        good = True
        for _ in range(3):
            if q + min_header > n or not _plausible(buf, q, fmt, big, ticks, biggest, first_ts):
                good = False
                break
            nxt, ok, kind = _step(buf, q, fmt, big, rec_len, -1, False)
            if not ok:
                good = False
                break
            q = nxt
        if good:
            return p
    return -1


@njit
def _chains(buf, seeds, limits, room, fmt, big, rec_len, min_header, section, sections):
    """Walk a chain from every seed, all in turn, each until its limit (the next seed), the end
    of the window, a record it cannot read, or ``room`` records. Returns the table of positions
    and kinds (chain j's in row j; pcap: no kinds), how many each found and where each stopped."""
    k = seeds.size
    pos_table = np.empty((k, room), dtype=np.int64)
    kind_table = np.empty((k, room if fmt == PCAPNG else 0), dtype=np.int64)
    count = np.zeros(k, dtype=np.int64)
    cur = seeds.copy()
    stop = np.minimum(limits, buf.size - min_header + 1)    # a chain at or past this stops
    live = k
    while live:
        live = 0
        for j in range(k):                  # one record of every chain: their reads overlap
            p = cur[j]
            if p >= stop[j]:
                continue
            c = count[j]
            nxt, ok, kind = _step(buf, p, fmt, big, rec_len, section, sections)
            if c == room or not ok:         # full (the stitch walks on from here) or unreadable
                stop[j] = p
                continue
            pos_table[j, c] = p
            if fmt == PCAPNG:
                kind_table[j, c] = kind
            count[j] = c + 1
            cur[j] = nxt
            live += 1
    return pos_table, kind_table, count, cur


# the same loop for each format and byte order, as constants: the compiler drops the branches
# that do not apply, so a step is fewer instructions and more chains' reads overlap (~2x faster)
@njit
def _chains_pcap_le(buf, seeds, limits, room, rec_len, section, sections):
    return _chains(buf, seeds, limits, room, PCAP, False, rec_len, rec_len, section, sections)


@njit
def _chains_pcap_be(buf, seeds, limits, room, rec_len, section, sections):
    return _chains(buf, seeds, limits, room, PCAP, True, rec_len, rec_len, section, sections)


@njit
def _chains_pcapng_le(buf, seeds, limits, room, rec_len, section, sections):
    return _chains(buf, seeds, limits, room, PCAPNG, False, rec_len, 8, section, sections)


@njit
def _chains_pcapng_be(buf, seeds, limits, room, rec_len, section, sections):
    return _chains(buf, seeds, limits, room, PCAPNG, True, rec_len, 8, section, sections)


@njit
def walk(buf, start, fmt, big, rec_len, section, sections, ticks, biggest, first_ts, chains):
    """Offsets (int64) of every readable record from ``start`` to the window's end, and each
    record's kind: ``walk.walk`` with the reader's ``Layout`` (``section``/``sections``: pcapng's
    stop at another section header; ``ticks``, ``biggest``, ``first_ts``: pcap's plausibility)."""
    n = buf.size
    min_header = rec_len if fmt == PCAP else 8
    align = 1 if fmt == PCAP else 4
    # the first records one by one: their mean length spaces the seeds and sizes the table
    head = 32
    p = start
    found = 0
    while found < head and p + min_header <= n:
        nxt, ok, kind = _step(buf, p, fmt, big, rec_len, section, sections)
        if not ok:
            break
        found += 1
        p = nxt
    mean = max((p - start) / max(found, 1), 1.0)
    # seeds: the first of the stretches is the true start; a stretch without a seed joins the last
    seeds = np.full(chains, -1, dtype=np.int64)
    seeds[0] = start
    span = (n - start) // chains
    window = int(min(max(8 * mean, 256), 65536))
    if found == head and span > 64 * mean:
        for j in range(1, chains):
            lo = start + j * span
            lo -= (lo - start) % align
            seeds[j] = _seed(buf, lo, min(lo + window, n), fmt, big, rec_len, min_header, align,
                             ticks, biggest, first_ts)
    seeds = seeds[seeds >= 0]
    limits = np.empty(seeds.size, dtype=np.int64)
    limits[:-1] = seeds[1:]
    limits[-1] = n
    room = int(span / mean * 1.5) + 64 if seeds.size > 1 else 0
    args = (buf, seeds, limits, room, rec_len, section, sections)
    if fmt == PCAP:
        pos_table, kind_table, count, ends = _chains_pcap_be(*args) if big else _chains_pcap_le(*args)
    else:
        pos_table, kind_table, count, ends = _chains_pcapng_be(*args) if big else _chains_pcapng_le(*args)
    # stitch: the plain walk, taking a chain's records wherever it lands on one of them
    out = np.empty(max(int(count.sum()) + 64, 1024), dtype=np.int64)
    out_kind = np.empty(out.size, dtype=np.int64)
    k = 0
    j = 0                         # the chain whose stretch holds p
    i = 0                         # the first of its records not before p
    p = start
    while p + min_header <= n:
        while j + 1 < seeds.size and p >= seeds[j + 1]:
            j += 1
            i = 0
        while i < count[j] and pos_table[j, i] < p:
            i += 1
        if i < count[j] and pos_table[j, i] == p:
            take = count[j] - i
            if k + take > out.size:
                out, out_kind = _grow(out, out_kind, k + take)
            out[k:k + take] = pos_table[j, i:count[j]]
            if fmt == PCAPNG:
                out_kind[k:k + take] = kind_table[j, i:count[j]]
            else:
                out_kind[k:k + take] = 0
            k += take
            i = count[j]
            p = ends[j]
            continue
        nxt, ok, kind = _step(buf, p, fmt, big, rec_len, section, sections)
        if not ok:
            break
        if k == out.size:
            out, out_kind = _grow(out, out_kind, k + 1)
        out[k] = p
        out_kind[k] = kind
        k += 1
        p = nxt
    return out[:k].copy(), out_kind[:k].copy()


@njit
def _grow(out, out_kind, need):
    size = max(need, 2 * out.size)
    bigger = np.empty(size, dtype=np.int64)
    bigger_kind = np.empty(size, dtype=np.int64)
    bigger[:out.size] = out
    bigger_kind[:out.size] = out_kind
    return bigger, bigger_kind
