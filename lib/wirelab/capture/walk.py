"""Find where every record of a capture file starts, fast.

A capture file is a chain: each record header says how long the record is,
so record k+1 starts where record k ends. Following that chain one record at
a time in Python costs ~0.4 µs per packet, too slow for millions. So we
follow many chains at once with numpy:

1. seed: guess a record start every few hundred records (a position whose
   header looks right, checked on three consecutive records);
2. run all chains in lock-step, one vectorised step per record, each chain
   stopping where the next seed begins;
3. stitch: starting from the file's true first record, follow the chains;
   when a chain ends exactly on the next seed, that seed was a real record
   start. When it does not (a wrong guess), step on one record at a time
   until we land on a position some chain visited.

Because the step is deterministic, the result is exactly what the plain
one-record-at-a-time walk gives; the seeds only make it fast.

A ``Layout`` tells the walker how to read one record format (classic pcap
record headers or pcapng blocks): see ``formats.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Layout", "walk"]


@dataclass(frozen=True)
class Layout:
    """How to step over one kind of record.

    ``step(pos) -> (next_pos, ok)``: vectorised over an int64 array of record
    starts; ``ok`` is False where the record is not readable (the walk stops).
    ``plausible(pos)``: True where a record very probably starts (for seeds).
    ``align``: records start on multiples of this many bytes (pcapng: 4).
    ``min_header``: bytes a record needs before its length can be read.
    ``screen(first, spacing, count, cols)``: optional cheap test of the
    candidate grid ``first + r*spacing + c*align`` → bool array (count × cols).
    """
    step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
    plausible: Callable[[np.ndarray], np.ndarray]
    align: int
    min_header: int
    screen: Callable[[int, int, int, int], np.ndarray] | None = None


def _scalar_walk(layout: Layout, start: int, end: int, limit: int) -> tuple[list[int], int, bool]:
    """Walk up to ``limit`` records one by one; returns (starts, next, stopped)."""
    starts: list[int] = []
    pos = start
    while len(starts) < limit:
        if pos + layout.min_header > end:
            return starts, pos, True
        nxt, ok = layout.step(np.array([pos], dtype=np.int64))
        if not ok[0]:
            return starts, pos, True
        starts.append(pos)
        pos = int(nxt[0])
    return starts, pos, False


def _seeds(layout: Layout, start: int, end: int, spacing: int, window: int) -> np.ndarray:
    """One plausible record start in each window of ``window`` bytes, every ``spacing`` bytes."""
    spacing -= spacing % layout.align
    first = start + spacing
    count = max((end - layout.min_header - first) // spacing, 0)
    cols = max(window // layout.align, 1)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    if layout.screen is not None:         # a cheap first test on a strided view, no index arrays
        rows, colidx = np.nonzero(layout.screen(first, spacing, count, cols))
        cand = first + rows.astype(np.int64) * spacing + colidx.astype(np.int64) * layout.align
    else:
        cand = (first + np.arange(count, dtype=np.int64)[:, None] * spacing
                + np.arange(cols, dtype=np.int64)[None, :] * layout.align).ravel()
    cand = cand[cand + layout.min_header <= end]
    good = layout.plausible(cand)
    pos = cand
    for _ in range(2):     # the next two records must look right too
        nxt, ok = layout.step(pos)
        good &= ok & (nxt + layout.min_header <= end)
        good[good] = layout.plausible(nxt[good])
        pos = np.where(good, nxt, pos)
    window_of = (cand - start) // spacing
    first_good = np.unique(window_of[good], return_index=True)[1]
    return cand[good][first_good]


def walk(layout: Layout, data_len: int, start: int, *, chain_records: int = 256) -> np.ndarray:
    """Offsets (int64, in order) of every readable record from ``start`` to ``data_len``."""
    head, pos, stopped = _scalar_walk(layout, start, data_len, 256)
    if stopped:
        return np.array(head, dtype=np.int64)
    mean = max((pos - start) / len(head), 1.0)
    spacing = int(mean * chain_records)
    if data_len - pos < 4 * spacing:   # small file: the simple walk is fast enough
        rest, _, _ = _scalar_walk(layout, pos, data_len, data_len)
        return np.array(head + rest, dtype=np.int64)
    window = int(min(max(2 * mean, 64), 16384))     # usually holds a record start; if not, a longer chain
    seeds = np.concatenate([[pos], _seeds(layout, pos, data_len, spacing, window)])
    seeds = np.unique(seeds)

    # 2. all chains in lock-step
    limits = np.append(seeds[1:], data_len)
    cur = seeds.copy()
    active = np.arange(seeds.size)
    rec_pos, rec_chain = [], []
    ends = np.full(seeds.size, -1, dtype=np.int64)   # where each chain stopped
    steps = 0
    while active.size:
        steps += 1
        if steps > 16 * chain_records:        # a wrong seed walking tiny steps: give up on it
            ends[active] = cur[active]
            break
        p = cur[active]
        inside = p + layout.min_header <= data_len
        nxt, ok = layout.step(np.where(inside, p, start))
        ok &= inside
        rec_pos.append(p[ok])
        rec_chain.append(active[ok])
        ends[active[~ok]] = p[~ok]
        cur[active[ok]] = nxt[ok]
        go = ok & (nxt < limits[active])
        done = ok & ~go
        ends[active[done]] = nxt[done]
        active = active[go]
    # positions by chain, then by step: a chain records its k-th position at step k, no sort needed
    counts = np.bincount(np.concatenate(rec_chain), minlength=seeds.size) if rec_chain else \
        np.zeros(seeds.size, dtype=np.int64)
    offset = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos_all = np.empty(int(counts.sum()), dtype=np.int64)
    for k, (p, a) in enumerate(zip(rec_pos, rec_chain)):
        pos_all[offset[a] + k] = p
    chain_stop = offset + counts

    pieces = [np.array(head, dtype=np.int64)]
    if np.array_equal(ends[:-1], seeds[1:]):    # every seed was a true record start
        pieces.append(pos_all)
        e = int(ends[-1])
        sorted_pos = np.zeros(0, dtype=np.int64)
    else:
        e = pos
        chain_all = np.repeat(np.arange(seeds.size), counts)
        by_pos = np.argsort(pos_all, kind="stable")
        sorted_pos = pos_all[by_pos]

    # 3. stitch from the true start (or from the end of the last chain)
    while e + layout.min_header <= data_len:
        i = np.searchsorted(sorted_pos, e)
        if i < sorted_pos.size and sorted_pos[i] == e:
            k = by_pos[i]
            c = chain_all[k]
            pieces.append(pos_all[k:chain_stop[c]])
            e = int(ends[c])
            continue
        one, nxt, stopped = _scalar_walk(layout, e, data_len, 1)
        if stopped:
            break
        pieces.append(np.array(one, dtype=np.int64))
        e = nxt
    return np.concatenate(pieces)
