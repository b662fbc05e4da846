"""Find where every record of a capture file starts, fast.

A capture file is a chain: each record header says how long the record is,
so record k+1 starts where record k ends. Following that chain one record at
a time in Python costs ~0.4 µs per packet, too slow for millions. So we
follow many chains at once with numpy:

1. seed: guess a record start every so many bytes (a position whose header
   looks right, checked on three consecutive records);
2. run all chains in lock-step, one vectorised step per record, each chain
   stopping where the next seed begins. Where records are small a chain has
   more of them to walk; when half the chains are done, the stretches still
   to walk are seeded again, so no chain walks much longer than the others;
3. stitch: starting from the file's true first record, follow the chains;
   when a chain ends exactly on the next seed, that seed was a real record
   start. When it does not (a wrong guess), step on one record at a time
   until we land on a position some chain visited.

Because the step is deterministic, the result is exactly what the plain
one-record-at-a-time walk gives; the seeds only make it fast.

A ``Layout`` tells the walker how to read one record format (classic pcap
record headers or pcapng blocks): see ``files.py``.

``walk_jit.py`` is the same walk compiled by numba, four to eight times as
fast; it is used instead when numba is there and the window is large
(``jit.py`` says when). This one is the reference: both give the same
offsets and kinds, on damaged files too (``tests/test_capture_jit.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Layout", "walk"]


@dataclass(frozen=True)
class Layout:
    """How to step over one kind of record.

    ``step(pos) -> (next_pos, ok, kind)``: vectorised over an int64 array of
    record starts (each ≤ data_len − min_header); ``ok`` (an array, or True for
    all) is False where the record is not readable (the walk stops there);
    ``kind`` is the record's type (pcapng block type), kept with each offset,
    or None when all records are of one kind (pcap: 0).
    ``plausible(pos)``: True where a record very probably starts (for seeds).
    ``align``: records start on multiples of this many bytes (pcapng: 4).
    ``min_header``: bytes a record needs before its length can be read.
    ``screen(starts, cols)``: a cheap first test of the candidates
    ``starts[r] + c*align`` (c < cols) → bool array (rows × cols).
    ``step1(pos) -> (next_pos, ok, kind)``: ``step`` for one position, in plain
    Python (a small file, or the stitching, walks one record at a time).
    ``compiled(start) -> (offsets, kinds)``: the same walk compiled (``walk_jit``),
    used instead when given.
    """
    step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
    plausible: Callable[[np.ndarray], np.ndarray]
    align: int
    min_header: int
    screen: Callable[[np.ndarray, int], np.ndarray]
    step1: Callable[[int], tuple[int, bool, int]]
    compiled: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None


def _scalar_walk(layout: Layout, start: int, end: int, limit: int):
    """Walk up to ``limit`` records one by one; returns (starts, kinds, next, stopped)."""
    starts: list[int] = []
    kinds: list[int] = []
    pos = start
    while len(starts) < limit:
        if pos + layout.min_header > end:
            return starts, kinds, pos, True
        nxt, ok, kind = layout.step1(pos)
        if not ok:
            return starts, kinds, pos, True
        starts.append(pos)
        kinds.append(kind)
        pos = nxt
    return starts, kinds, pos, False


def _seeds(layout: Layout, starts: np.ndarray, end: int, window: int) -> np.ndarray:
    """For each window ``[s, s + window)``, the first position where a record very probably
    starts (it and the next two records look right), or -1.

    The window is screened a quarter at a time, only where no seed was found yet: a window
    holds about four mean records, so its first record start is usually in the first quarter
    (the seeds only make the walk fast: its result is the same whatever they are)."""
    cols = max(window // layout.align, 1)
    out = np.full(starts.size, -1, dtype=np.int64)
    todo = np.arange(starts.size)
    part = max(cols // 4, 16)
    for first in range(0, cols, part):
        if todo.size == 0:
            break
        found = _first_seed(layout, starts[todo] + first * layout.align, end, min(part, cols - first))
        hit = found >= 0
        out[todo[hit]] = found[hit]
        todo = todo[~hit]
    return out


def _first_seed(layout: Layout, starts: np.ndarray, end: int, cols: int) -> np.ndarray:
    """``_seeds`` for windows of ``cols`` candidate positions."""
    out = np.full(starts.size, -1, dtype=np.int64)
    if starts.size == 0:
        return out
    rows, colidx = np.nonzero(layout.screen(starts, cols))
    cand = starts[rows] + colidx.astype(np.int64) * layout.align
    keep = cand + layout.min_header <= end
    rows, cand = rows[keep], cand[keep]
    good = layout.plausible(cand)
    pos = cand
    for _ in range(2):     # the next two records must look right too
        nxt, ok, _ = layout.step(pos)
        good &= ok & (nxt + layout.min_header <= end)
        good[good] = layout.plausible(nxt[good])
        pos = np.where(good, nxt, pos)
    rows, cand = rows[good], cand[good]
    first = np.unique(rows, return_index=True)[1]       # candidates come row by row, in order
    out[rows[first]] = cand[first]
    return out


def _window_starts(begin: np.ndarray, end: np.ndarray, spacing: np.ndarray, align: int):
    """Window starts ``begin + k·spacing`` (k ≥ 1) inside each stretch [begin, end), as
    (starts, index of the stretch each belongs to)."""
    spacing = np.maximum(spacing - spacing % align, align)
    count = np.maximum((end - begin - 1) // spacing, 0)
    owner = np.repeat(np.arange(begin.size), count)
    k = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count) + 1
    return begin[owner] + k * spacing[owner], owner


def _arrays(starts: list, kinds: list) -> tuple[np.ndarray, np.ndarray]:
    return np.array(starts, dtype=np.int64), np.array(kinds, dtype=np.int64)


def walk(layout: Layout, data_len: int, start: int, *,
         chain_records: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (int64, in order) of every readable record from ``start`` to ``data_len``,
    and each record's kind."""
    if layout.compiled is not None:
        return layout.compiled(start)
    head, head_kinds, pos, stopped = _scalar_walk(layout, start, data_len, 32)
    if stopped:
        return _arrays(head, head_kinds)
    mean = max((pos - start) / len(head), 1.0)
    records = max(data_len - pos, 0) / mean
    if chain_records is None:        # ~2·√records chains balance the cost of steps and of seeds
        chain_records = int(min(max(0.5 * records ** 0.5, 32), 4096))
    if records < 8192:                # a small file: the simple walk is fast enough (~0.4 µs a record)
        rest, rest_kinds, _, _ = _scalar_walk(layout, pos, data_len, data_len)
        return _arrays(head + rest, head_kinds + rest_kinds)
    # a window of a few mean records nearly always holds a record start: every seed then starts
    # a chain, chains are of even length and the walk takes fewer steps (the first records,
    # a handshake, are often smaller than the rest: the mean is an underestimate)
    window = int(min(max(4 * mean, 64), 16384))
    starts, _ = _window_starts(np.array([pos]), np.array([data_len - window]),
                               np.array([int(mean * chain_records)]), layout.align)
    seeds = _seeds(layout, starts, data_len, window)
    seeds = np.unique(np.concatenate([[pos], seeds[seeds >= 0]]))
    seeds, pos_all, kind_all, counts, ends = _lock_step(layout, seeds, data_len, window, chain_records)
    offset = np.cumsum(counts) - counts
    chain_stop = offset + counts

    pieces = [_arrays(head, head_kinds)]
    if np.array_equal(ends[:-1], seeds[1:]):    # every seed was a true record start
        pieces.append((pos_all, kind_all))
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
            pieces.append((pos_all[k:chain_stop[c]], kind_all[k:chain_stop[c]]))
            e = int(ends[c])
            continue
        one, one_kind, nxt, stopped = _scalar_walk(layout, e, data_len, 1)
        if stopped:
            break
        pieces.append(_arrays(one, one_kind))
        e = nxt
    return np.concatenate([p for p, _ in pieces]), np.concatenate([k for _, k in pieces])


def _lock_step(layout: Layout, seeds: np.ndarray, data_len: int, window: int, chain_records: int):
    """2. Run a chain from every seed in lock-step, each until the next seed or a record it
    cannot read. Returns the seeds (more are added on the way), every chain's positions
    chain after chain (and their kinds), how many per chain, and where each chain stopped."""
    last = data_len - layout.min_header        # a record starting after this cannot be read
    starts = seeds.copy()                      # every chain's first position (its id: the index)
    ends = np.zeros(seeds.size, dtype=np.int64)
    levels = []                                # (chain ids, chains × steps tables: positions or -1, kinds)
    ids = np.arange(seeds.size)
    cur = seeds.copy()
    # a chain stops at the next seed or where no header fits: one compare per step does both
    limit = np.minimum(np.append(seeds[1:], data_len), last + 1)
    budget = 16 * chain_records                # a wrong seed walking tiny steps gives up after this
    # the kind nearly every record has (pcapng: enhanced packet blocks): a step whose records
    # are all of it keeps no kinds (a table of kinds costs as much as the table of positions)
    common = None
    while ids.size and budget > 0:
        columns, kinds, began = [], [], cur
        live = cur < limit
        while budget > 0:                      # the hot loop: as few numpy calls per step as we can
            budget -= 1
            nxt, ok, kind = layout.step(np.minimum(cur, last))
            ok = live & ok
            columns.append(np.where(ok, cur, -1))
            if kind is not None:
                if common is None and ok.any():
                    common = int(kind[np.argmax(ok)])
                kinds.append(kind if common is not None and (ok & (kind != common)).any() else None)
            cur = np.where(ok, nxt, cur)
            live = ok & (cur < limit)
            if len(columns) % 8 == 0 and np.count_nonzero(live) * 2 <= ids.size:
                break
        table = np.stack(columns, axis=1)
        levels.append((ids, table, kinds))
        ends[ids] = cur
        rest = np.flatnonzero(live)
        if rest.size == 0 or budget <= 0:
            break
        # seed the stretches still to walk, at the density these chains have shown, so the
        # next level takes about half as many steps as this one
        ids, cur, limit = ids[rest], cur[rest], limit[rest]
        walked = np.maximum(np.count_nonzero(table[rest] >= 0, axis=1), 1)
        mean = (cur - began[rest]) / walked
        spacing = np.maximum(mean * max(len(columns) // 2, 16), window).astype(np.int64)
        win, owner = _window_starts(cur, limit - window, spacing, layout.align)
        new = _seeds(layout, win, data_len, window)
        found = new >= 0
        new, owner = new[found], owner[found]
        if new.size == 0:
            continue
        # in each stretch the old chain now runs to the first new seed, each new seed to the next
        first_new = np.full(ids.size, -1)
        first_new[owner[::-1]] = np.arange(new.size)[::-1]
        new_limit = np.append(new[1:], 0)
        last_of_stretch = np.append(owner[1:] != owner[:-1], True)
        new_limit[last_of_stretch] = limit[owner[last_of_stretch]]
        limit = np.concatenate([np.where(first_new >= 0, new[np.maximum(first_new, 0)], limit), new_limit])
        ids = np.concatenate([ids, np.arange(new.size) + starts.size])
        cur = np.concatenate([cur, new])
        starts = np.concatenate([starts, new])
        ends = np.concatenate([ends, new])
    # every chain's positions, chains in the order of their first position
    order = np.argsort(starts, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    counts = np.zeros(starts.size, dtype=np.int64)
    found_by_level = []
    one_kind = all(k is None for _, _, kinds in levels for k in kinds)
    for lvl_ids, table, kinds in levels:
        kept = table >= 0
        n = np.count_nonzero(kept, axis=1)
        kind_table = None
        if not one_kind:
            kind_table = np.stack([np.full(lvl_ids.size, common, dtype=np.int64) if k is None
                                   else k.astype(np.int64) for k in kinds], axis=1)
        found_by_level.append((lvl_ids, n, table[kept], None if kind_table is None else kind_table[kept]))
        counts[lvl_ids] += n
    counts_sorted = counts[order]
    begin = np.cumsum(counts_sorted) - counts_sorted
    filled = np.zeros(starts.size, dtype=np.int64)
    out = np.empty(int(counts.sum()), dtype=np.int64)
    out_kind = np.full(out.size, common or 0, dtype=np.int64) if one_kind else np.empty_like(out)
    for lvl_ids, n, found, found_kind in found_by_level:
        at = begin[rank[lvl_ids]] + filled[lvl_ids]
        dest = np.repeat(at, n) + np.arange(found.size) - np.repeat(np.cumsum(n) - n, n)
        out[dest] = found
        if found_kind is not None:
            out_kind[dest] = found_kind
        filled[lvl_ids] += n
    return starts[order], out, out_kind, counts_sorted, ends[order]
