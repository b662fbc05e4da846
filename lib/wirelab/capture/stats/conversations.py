"""Wireshark's Statistics › Conversations and Endpoints as DataFrames (``tshark -z conv,tcp``, ``-z endpoints,tcp``).

A conversation is a pair of endpoints in either order; "A" sent its first frame.
For ``tcp`` and ``udp`` its number is Wireshark's ``tcp.stream``/``udp.stream``
(``conversation_ids``, computed once on the whole capture: a filtered capture keeps
the numbers); for ``ip``/``ipv6`` an endpoint is an address, for ``eth`` a MAC
address (read from the frames' bytes: files only). ``rel_start`` is seconds since
the capture's first frame; ``bps_a_to_b`` = bytes A → B · 8 / duration, as
Wireshark's dialog (NaN for a conversation of zero duration: Wireshark shows "N/A").

Endpoints are the conversations seen from each end: an endpoint's packets are those
of its conversations; what it sent is its "tx", what it received its "rx".
All of it is numpy (``bincount``, ``ufunc.at``) and one pandas ``groupby`` over
conversations, never a loop over frames.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..conversations import first_seen_ids

__all__ = ["COLUMNS", "ENDPOINT_COLUMNS", "conversation_table", "conversation_sums", "pair_ids", "endpoint_table",
           "shared_addresses", "address_names", "mac_text"]

COLUMNS = ["stream", "address_a", "port_a", "address_b", "port_b", "packets", "bytes", "packets_a_to_b",
           "bytes_a_to_b", "packets_b_to_a", "bytes_b_to_a", "rel_start", "duration", "bps_a_to_b",
           "bps_b_to_a"]
ENDPOINT_COLUMNS = ["address", "port", "packets", "bytes", "tx_packets", "tx_bytes", "rx_packets", "rx_bytes"]


def pair_ids(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per frame (``src``, ``dst``: integer codes, all valid): its conversation (the unordered
    pair, numbered in order of first frame) and whether it goes from A (the first frame's
    source) to B."""
    forward = src <= dst
    ids, first = first_seen_ids(np.stack([np.minimum(src, dst), np.maximum(src, dst)], axis=1))
    return ids, forward == forward[first][ids] if first.size else forward


def conversation_sums(ids: np.ndarray, a_to_b: np.ndarray, frame_len: np.ndarray, time: np.ndarray,
                      pick: np.ndarray) -> tuple:
    """Per conversation number in ``ids`` of the frames ``pick`` selects: the numbers (sorted), the
    frame where each first appears (an index into the frames given), packets and bytes each way
    ([:, 0] A → B), first and last time (NaN left out): ``conversation_table``'s ``sums``."""
    ids = np.asarray(ids)
    sums = _compiled_sums(ids, a_to_b, frame_len, time, pick)
    if sums is None:                        # numpy: the frames counted, then their sums
        rows = np.flatnonzero(pick)
        numbers, first, *rest = _numpy_sums(ids[rows], a_to_b[rows], frame_len[rows], time[rows])
        sums = (numbers, rows[first], *rest)
    return sums


def conversation_table(ids: np.ndarray, a_to_b: np.ndarray, src, dst, sport, dport, frame_len: np.ndarray,
                       time_relative: np.ndarray, *, names=None, pick: np.ndarray | None = None,
                       sums: tuple | None = None) -> pd.DataFrame:
    """One row per conversation number in ``ids`` (per frame; the frames given are those counted,
    or those ``pick`` selects) in ``COLUMNS`` (``sport``/``dport`` None: no ports). ``src``/``dst``
    label each frame's ends, or are codes into ``names`` (text made for the table's rows only,
    not for every frame). ``sums``: ``conversation_sums`` of them, if at hand (``ids``,
    ``frame_len`` and ``time_relative`` are then not read)."""
    if sums is None:
        sums = conversation_sums(ids, a_to_b, frame_len, time_relative,
                                 np.ones(len(a_to_b), dtype=bool) if pick is None else pick)
    numbers, first, packets, sizes, start, end = sums
    if not numbers.size:
        return pd.DataFrame(columns=COLUMNS if sport is not None else [c for c in COLUMNS if "port" not in c])
    # "A" sent the first frame: its source, whichever way ``a_to_b`` was computed
    a_first = a_to_b[first]
    table = {"stream": numbers,
             "address_a": np.where(a_first, np.asarray(src)[first], np.asarray(dst)[first]),
             "port_a": None if sport is None else np.where(a_first, sport[first], dport[first]),
             "address_b": np.where(a_first, np.asarray(dst)[first], np.asarray(src)[first]),
             "port_b": None if sport is None else np.where(a_first, dport[first], sport[first]),
             "packets": packets[:, 0] + packets[:, 1], "bytes": sizes[:, 0] + sizes[:, 1],
             "packets_a_to_b": packets[:, 0], "bytes_a_to_b": sizes[:, 0],
             "packets_b_to_a": packets[:, 1], "bytes_b_to_a": sizes[:, 1],
             "rel_start": start, "duration": end - start}
    seconds = np.where(table["duration"] > 0, table["duration"], np.nan)
    table["bps_a_to_b"] = table["bytes_a_to_b"] * 8 / seconds
    table["bps_b_to_a"] = table["bytes_b_to_a"] * 8 / seconds
    if names is not None:
        names = np.asarray(names, dtype=object)
        table["address_a"], table["address_b"] = names[table["address_a"]], names[table["address_b"]]
    return pd.DataFrame({k: v for k, v in table.items() if v is not None})


def _compiled_sums(ids, a_to_b, frame_len, time, pick):
    """``_numpy_sums`` of the frames ``pick`` selects (None: all) in one compiled pass
    (``reader/number_jit.tally``), or None where it is not loaded or the ids are not small
    conversation numbers."""
    from ..reader.jit import numbering          # (numba only when it pays: start-up)

    compiled = numbering(ids.size)
    if compiled is None or ids.dtype.kind not in "iu":
        return None
    pick = np.ones(ids.size, dtype=bool) if pick is None else np.ascontiguousarray(pick, dtype=bool)
    if not pick.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64), \
            np.zeros(0), np.zeros(0)
    low, high = int(ids.min(where=pick, initial=0)), int(ids.max(where=pick, initial=0))    # (no copy)
    if low < 0 or high >= 4 * ids.size + 1024:
        return None
    first, packets, sizes, start, end = compiled.tally(
        np.ascontiguousarray(ids, dtype=np.int64), np.ascontiguousarray(a_to_b, dtype=bool),
        np.ascontiguousarray(frame_len, dtype=np.int64), np.ascontiguousarray(time, dtype=np.float64), pick, high + 1)
    numbers = np.flatnonzero(first >= 0)
    return numbers, first[numbers], packets[numbers], sizes[numbers], start[numbers], end[numbers]


def _numpy_sums(ids, a_to_b, frame_len, time):
    """The distinct ``ids`` (sorted), the row where each first appears, packets and bytes each way
    ([:, 0] A → B), first and last time."""
    if not ids.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64), \
            np.zeros(0), np.zeros(0)
    numbers, first, inverse, start, end = _groups(ids, time)
    n = numbers.size

    def count(where, weights=None):
        return np.bincount(inverse[where], weights=None if weights is None else weights[where],
                           minlength=n).astype(np.int64)
    packets = np.stack([count(a_to_b), count(~a_to_b)], axis=1)
    sizes = np.stack([count(a_to_b, frame_len), count(~a_to_b, frame_len)], axis=1)
    return numbers, first, packets, sizes, start, end


def _groups(ids: np.ndarray, time: np.ndarray):
    """The distinct ``ids`` (sorted), the row where each first appears, each row's group, and
    each group's first and last time (NaN left out). Conversation numbers are small integers:
    counted (``bincount``) and gathered (``ufunc.at``) in one pass each, not sorted (a tenth
    of the time on a million frames); other ids are sorted (``np.unique``)."""
    ids = np.asarray(ids)
    if ids.dtype.kind in "iu" and ids.min() >= 0 and ids.max() < 4 * ids.size + 1024:
        present = np.bincount(ids) > 0
        numbers = np.flatnonzero(present)
        inverse = (np.cumsum(present) - 1)[ids]
        first = np.full(numbers.size, ids.size, dtype=np.int64)
        np.minimum.at(first, inverse, np.arange(ids.size))
    else:
        numbers, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    start, end = np.full(numbers.size, np.nan), np.full(numbers.size, np.nan)
    np.fmin.at(start, inverse, time)
    np.fmax.at(end, inverse, time)
    return numbers, first, inverse, start, end


def endpoint_table(conversations: pd.DataFrame) -> pd.DataFrame:
    """Each end of each conversation (``conversation_table``'s rows) gathered by endpoint
    (address, and port where there are ports), busiest first (``ENDPOINT_COLUMNS``)."""
    ported = "port_a" in conversations
    keys = ["address", "port"] if ported else ["address"]
    sides = []
    for me, other in (("a", "b"), ("b", "a")):
        side = pd.DataFrame({"address": conversations[f"address_{me}"], "packets": conversations["packets"],
                             "bytes": conversations["bytes"],
                             "tx_packets": conversations[f"packets_{me}_to_{other}"],
                             "tx_bytes": conversations[f"bytes_{me}_to_{other}"],
                             "rx_packets": conversations[f"packets_{other}_to_{me}"],
                             "rx_bytes": conversations[f"bytes_{other}_to_{me}"]})
        if ported:
            side.insert(1, "port", conversations[f"port_{me}"])
        sides.append(side)
    both = pd.concat(sides, ignore_index=True)
    out = both.groupby(keys, sort=False, dropna=False).sum().reset_index()
    return out.sort_values("bytes", ascending=False, kind="stable").reset_index(drop=True)[
        [c for c in ENDPOINT_COLUMNS if c in out]]


def shared_addresses(f: pd.DataFrame) -> pd.DataFrame:
    """``src`` and ``dst`` as categories of one set of addresses (as ``read_capture`` gives them;
    a dataset's parts may not), so codes compare across the two."""
    src, dst = f["src"], f["dst"]
    if isinstance(src.dtype, pd.CategoricalDtype) and isinstance(dst.dtype, pd.CategoricalDtype) and \
            src.cat.categories.equals(dst.cat.categories):
        return f
    both = pd.CategoricalDtype(pd.Index(pd.concat([src.astype(object), dst.astype(object)]).dropna().unique()))
    return f.assign(src=src.astype(object).astype(both), dst=dst.astype(object).astype(both))


def address_names(f: pd.DataFrame) -> np.ndarray:
    """The address texts ``src``/``dst``'s codes point into (``read_capture`` shares them)."""
    return np.asarray(f["src"].cat.categories.astype(str), dtype=object)


def mac_text(values: np.ndarray) -> np.ndarray:
    """48-bit integers as "aa:bb:cc:dd:ee:ff" (once per distinct address)."""
    distinct, inverse = np.unique(values, return_inverse=True)
    text = np.array([":".join(f"{(int(v) >> s) & 0xFF:02x}" for s in range(40, -8, -8)) for v in distinct], dtype=object)
    return text[inverse.reshape(-1)]
