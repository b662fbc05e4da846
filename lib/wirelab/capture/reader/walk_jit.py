"""The record walk of ``walk.py``, compiled (numba): the same offsets and kinds, faster.

Why a second walker? Finding where each record starts is a chain: the
length in record k's header says where record k+1 starts. ``walk.py``
follows many chains at once with numpy, because one record at a time in
Python costs ~0.4 µs. Compiled code takes one record at a time cheaply,
but then waits for memory at every record (~120 ns here: the next header
is in a cache line nobody has asked for yet). So this walker also follows
several chains at once, in one loop that steps each chain in turn: the
processor then fetches several headers at the same time (~25 ns a record).

1. seeds: cut the window into ``chains`` stretches and find, near the start
   of each, a position where a record very probably starts (``_seed``: it
   and the next two records look right);
2. ``_chains``: walk every chain one record per turn until it reaches the
   next seed, cannot read a record or fills its share of the table; when
   half of them are done, the others are split at new seeds (``_split``);
3. stitch (in ``walk``): from the true first record, follow the plain
   one-record-at-a-time walk, but where it lands on a position a chain
   visited, take that chain's records as they are (the step is
   deterministic: from the same position the same records follow).

So the result is exactly the plain walk's, whatever the seeds were: the
seeds only decide how much of it comes from the chains.
``tests/test_capture_jit.py`` compares both walkers, on damaged files too.
This module imports numba: only ``jit.kernels`` imports it.
"""
from __future__ import annotations

import numpy as np

from .formats import PCAP_RECORD, PCAPNG as PCAPNG_FORMAT
from .files import TEN_YEARS               # (a record this far in time from the first is none)
from .jit_build import PCAP, PCAPNG, njit, prefetch as _prefetch

__all__ = ["walk", "PCAP", "PCAPNG"]

# the tables of formats.py as numbers (numba reads a module's int constants, not its dicts)
SHB, MIN_BLOCK = PCAPNG_FORMAT["shb_type"], PCAPNG_FORMAT["min_block"]
_SEC, _FRAC, _INCL, _ORIG = (PCAP_RECORD[k] for k in ("ts_sec", "ts_frac", "incl_len", "orig_len"))
_LENGTH = 4                                # a pcapng block's total length, after its type


@njit
def _u32(buf, p, big):
    """The unsigned 32-bit integer at byte ``p`` (the caller checked p + 4 ≤ len(buf)). The
    index is unsigned: numba then adds no test for negative indices, and the compiler makes the
    four byte reads one (a walk step of fewer instructions overlaps more reads: ~2x faster)."""
    q = np.uint64(p)
    b0, b1 = np.int64(buf[q]), np.int64(buf[q + np.uint64(1)])
    b2, b3 = np.int64(buf[q + np.uint64(2)]), np.int64(buf[q + np.uint64(3)])
    if big:
        return (b0 << 24) | (b1 << 16) | (b2 << 8) | b3
    return b0 | (b1 << 8) | (b2 << 16) | (b3 << 24)


@njit
def _step(buf, pos, fmt, big, rec_len, section, sections):
    """(next record's start, readable, kind) of the record at ``pos``: ``Layout.step1``."""
    if fmt == PCAP:
        return pos + rec_len + _u32(buf, pos + _INCL, big), True, np.int64(0)
    kind = _u32(buf, pos, big)
    length = _u32(buf, pos + _LENGTH, big)
    ok = length >= MIN_BLOCK and (length & 3) == 0 and (not sections or kind != SHB or pos == section)
    return pos + length, ok, kind


@njit
def _plausible(buf, p, fmt, big, ticks, biggest, first_ts):
    """True where a record very probably starts at ``p`` (pcap: sane header fields;
    pcapng: a usual block type and the length repeated at the block's end)."""
    n = buf.size
    if fmt == PCAP:
        if p + 16 > n or _u32(buf, p + _FRAC, big) >= ticks:
            return False
        incl, orig = _u32(buf, p + _INCL, big), _u32(buf, p + _ORIG, big)
        # (a frame of no bytes is no record, as numpy's ``screen`` says: else zeros in a payload,
        # in a capture whose clock starts at 0, seed chains that walk nowhere 16 bytes a step)
        return 0 < orig and incl <= orig and incl <= biggest and abs(_u32(buf, p + _SEC, big) - first_ts) < TEN_YEARS
    if p + 8 > n or _u32(buf, p, big) - 2 > 4:      # (block types 2 to 6: packets, names, statistics)
        return False
    length = _u32(buf, p + _LENGTH, big)
    return length >= MIN_BLOCK and length % 4 == 0 and p + length <= n and _u32(buf, p + length - 4, big) == length


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
def _chains(buf, seeds, mean, fmt, big, rec_len, min_header, plausibility):
    """Walk a chain from every seed, all in turn, each until the next seed, the end of the
    window, a record it cannot read, a section header (the stitch steps over it by the reader's
    rule for sections) or the end of its share of the table. When half the chains are done,
    each chain still walking is split at a new seed halfway along what it has left (a stretch
    of small records takes more steps: the others would wait for it, one read at a time).
    Returns the table, and every chain's seed, first row in the table, number of positions
    (``table[first[j]:first[j] + count[j]]``) and where it stopped."""
    n = buf.size
    # ``_step`` as numbers, not branches (a step of fewer instructions overlaps more reads):
    # the length is at ``length_at`` (+ ``add``), at least ``least``, a multiple of ``mask`` + 1
    length_at, add, least, mask, stop_kind = (_INCL, rec_len, 0, 0, -1) if fmt == PCAP else \
        (_LENGTH, 0, MIN_BLOCK, 3, SHB)
    most = 4 * seeds.size                   # chains, splits included
    start = np.empty(most, dtype=np.int64)  # each chain's seed, limit, position, stop
    limit = np.empty(most, dtype=np.int64)
    start[:seeds.size] = seeds
    limit[:seeds.size - 1] = seeds[1:]
    limit[seeds.size - 1] = n
    cur = start.copy()
    stop = np.minimum(limit, n - min_header + 1)            # a chain at or past this stops
    # each chain's share of the table: its stretch's bytes / the mean record, and a margin
    first = np.empty(most + 1, dtype=np.int64)
    first[0] = 0
    for j in range(seeds.size):
        first[j + 1] = first[j] + int((limit[j] - start[j]) / mean * 1.5) + 64
    end = first[1:].copy()
    table = np.empty(first[seeds.size], dtype=np.int64)
    count = np.zeros(most, dtype=np.int64)
    chains = seeds.size
    level = chains                          # chains walking when the last splits were made
    live = chains
    while live:
        live = 0
        for j in range(chains):             # one record of every chain: their reads overlap
            p = cur[j]
            if p >= stop[j]:
                continue
            at = first[j] + count[j]
            length = _u32(buf, p + length_at, big) + add
            if at == end[j] or length < least or length & mask or _u32(buf, p, big) == stop_kind:
                stop[j] = p                 # full, unreadable, or a section header
                continue
            table[at] = p
            count[j] += 1
            cur[j] = p + length
            live += 1
        if 0 < live <= level // 2 and chains + live <= most:
            before = chains
            chains = _split(buf, chains, start, limit, cur, stop, first, end, count, mean, fmt, big, rec_len,
                            min_header, plausibility)
            level = live + chains - before
    return table, start[:chains], first[:chains], count[:chains], cur[:chains]


@njit
def _split(buf, chains, start, limit, cur, stop, first, end, count, mean, fmt, big, rec_len, min_header,
           plausibility):
    """Split every chain still walking at a new seed halfway along its rest, if one is found
    there (its table share split the same way). Returns how many chains there are now."""
    align = 1 if fmt == PCAP else 4
    ticks, biggest, first_ts = plausibility
    window = int(min(max(8 * mean, 256), 65536))
    for j in range(chains):
        rest = stop[j] - cur[j]
        if rest <= 0 or rest < 64 * mean:
            continue
        half = cur[j] + rest // 2
        half -= (half - cur[j]) % align
        s = _seed(buf, half, min(half + window, stop[j]), fmt, big, rec_len, min_header, align,
                  ticks, biggest, first_ts)
        if s < 0:
            continue
        m = chains
        chains += 1
        free = end[j] - (first[j] + count[j])
        start[m], cur[m], limit[m], stop[m] = s, s, limit[j], stop[j]
        first[m] = first[j] + count[j] + int(free * ((s - cur[j]) / rest))
        end[m], end[j] = end[j], first[m]
        limit[j] = stop[j] = s
    return chains


@njit
def walk(buf, start, fmt, big, rec_len, section, sections, ticks, biggest, first_ts, chains):
    """Offsets (int64) of every readable record from ``start`` to the window's end, and each
    record's kind: ``walk.walk`` with the reader's ``Layout`` (``section``/``sections``: pcapng's
    stop at another section header; ``ticks``, ``biggest``, ``first_ts``: pcap's plausibility)."""
    n = buf.size
    min_header = rec_len if fmt == PCAP else 8
    align = 1 if fmt == PCAP else 4
    # the first records one by one: their mean length spaces the seeds and sizes the table
    head = np.empty(32, dtype=np.int64)
    p = start
    found = 0
    while found < head.size and p + min_header <= n:
        nxt, ok, kind = _step(buf, p, fmt, big, rec_len, section, sections)
        if not ok:
            break
        head[found] = p
        found += 1
        p = nxt
    if found < head.size:                   # the walk ended there
        return head[:found].copy(), _kinds(buf, head[:found], fmt, big)
    mean = (p - start) / found
    # seeds: the first stretch's is a true record start; a stretch without a seed joins the last
    seeds = np.full(chains, -1, dtype=np.int64)
    seeds[0] = p
    span = (n - start) // chains
    window = int(min(max(8 * mean, 256), 65536))
    if span > 64 * mean:
        for j in range(1, chains):
            lo = start + j * span
            lo -= (lo - start) % align
            seeds[j] = _seed(buf, lo, min(lo + window, n), fmt, big, rec_len, min_header, align,
                             ticks, biggest, first_ts)
    seeds = seeds[seeds >= 0]
    plausibility = (ticks, biggest, first_ts)
    table, begin, first, count, ends = _chains(buf, seeds, mean, fmt, big, rec_len, min_header, plausibility)
    table_of = np.argsort(begin)            # (chains split later come last: put them in order)
    begin = begin[table_of]
    # stitch: the plain walk, taking a chain's records wherever it lands on one of them
    out = np.empty(int(count.sum()) + 1024, dtype=np.int64)
    out[:found] = head
    k = found
    j = 0                         # the chain whose stretch holds p (in order of their seeds)
    i = 0                         # the first of its records not before p
    while p + min_header <= n:
        while j + 1 < begin.size and p >= begin[j + 1]:
            j += 1
            i = 0
        c = table_of[j]
        have = count[c]
        while i < have and table[first[c] + i] < p:
            i += 1
        if i < have and table[first[c] + i] == p:
            out = _room_for(out, k + have - i)
            out[k:k + have - i] = table[first[c] + i:first[c] + have]
            k += have - i
            i = have
            p = ends[c]
            continue
        nxt, ok, kind = _step(buf, p, fmt, big, rec_len, section, sections)
        if not ok:
            break
        out = _room_for(out, k + 1)
        out[k] = p
        k += 1
        p = nxt
    return out[:k].copy(), _kinds(buf, out[:k], fmt, big)


@njit
def _room_for(out, need):
    """``out``, or a copy twice as big when it holds fewer than ``need``."""
    if need <= out.size:
        return out
    bigger = np.empty(max(need, 2 * out.size), dtype=np.int64)
    bigger[:out.size] = out
    return bigger


@njit
def _kinds(buf, offsets, fmt, big):
    """Every record's kind (pcapng: its block type; pcap: 0), read in one pass over the records
    (their headers prefetched a few records ahead: the reads overlap)."""
    kinds = np.zeros(offsets.size, dtype=np.int64)
    if fmt == PCAPNG:
        for i in range(offsets.size):
            if i + 16 < offsets.size:
                _prefetch(buf, offsets[i + 16])
            kinds[i] = _u32(buf, offsets[i], big)
    return kinds
