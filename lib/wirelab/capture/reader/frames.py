"""A capture as plain numpy columns: what the analyses compute on, with or without pandas.

``read_capture`` gives a DataFrame (categories, nullable integers); the
analyses (``conversations``, ``tcp_sequence``, ``overhead``) work on the same
columns as numpy arrays, so that ``wirelab analyze`` can read a capture and
answer without importing pandas (most of its start-up). ``Frames`` holds them:

* integer fields (ports, lengths, TCP fields, ...) as int64, -1 where missing
  (none of them can be negative);
* ``src``/``dst`` as codes into ``addresses`` (text), ``proto`` as codes into
  ``protocols`` ("tcp", "udp", ... as ``read_capture`` names them), -1 missing;
* ``more_frags`` as bool (False where missing), ``time`` as float (NaN missing);
* ``info``: the file's facts (``df.attrs["capture"]``).

``Frames.of(df)`` reads a DataFrame of ``read_capture``; ``Frames.of_part``
the decoder's columns directly (``loader.read_part``).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import numpy as np

from .formats import IP_PROTO

__all__ = ["Frames", "INTS"]

#: The integer fields, -1 where missing.
INTS = ("frame_len", "cap_len", "sport", "dport", "ip_len", "frag_offset", "ip_id", "tcp_seq", "tcp_ack",
        "tcp_flags", "tcp_win", "tcp_opts_len", "payload_len", "vlan", "tcp_mss", "tcp_wscale",
        "payload_offset", "file_offset", "iface", "linktype")


@dataclass
class Frames:
    """One capture's columns (see the module docstring)."""
    time: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    addresses: list[str]
    proto: np.ndarray
    protocols: list[str]
    more_frags: np.ndarray
    l3: np.ndarray                                   # codes of dissect.L3_NAMES
    ints: dict[str, np.ndarray]
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.time.size)

    def __getattr__(self, name: str) -> np.ndarray:
        ints = self.__dict__.get("ints", {})
        if name in ints:
            return ints[name]
        raise AttributeError(name)

    def protocol(self, name: str) -> np.ndarray:
        """Where ``proto`` is ``name`` ("tcp", "udp", ...)."""
        if name not in self.protocols:
            return np.zeros(len(self), dtype=bool)
        return self.proto == self.protocols.index(name)

    def take(self, rows: np.ndarray) -> "Frames":
        """The frames at ``rows`` (indices or a mask), same names."""
        return Frames(self.time[rows], self.src[rows], self.dst[rows], self.addresses, self.proto[rows],
                      self.protocols, self.more_frags[rows], self.l3[rows],
                      {k: v[rows] for k, v in self.ints.items()}, self.info)

    @classmethod
    def of(cls, df) -> "Frames":
        """The columns of a ``read_capture`` DataFrame (or of any DataFrame with some of its
        columns, categories or plain values: what is absent is missing)."""
        n = len(df)
        (src, dst), addresses = _categories(df, ["src", "dst"])
        (proto,), protocols = _categories(df, ["proto"])
        more = df["more_frags"].fillna(False).to_numpy(bool) if "more_frags" in df else np.zeros(n, dtype=bool)
        l3 = df["l3"].cat.codes.to_numpy(np.int8) if "l3" in df else np.zeros(n, dtype=np.int8)
        return cls(time=df["time"].to_numpy(np.float64), src=src, dst=dst, addresses=addresses, proto=proto,
                   protocols=protocols, more_frags=more, l3=l3, ints=_Columns(df),
                   info=df.attrs.get("capture", {}))

    @classmethod
    def of_part(cls, part: dict, info: dict) -> "Frames":
        """The decoder's columns (``part.Part``), without pandas."""
        ints = {}
        for name in INTS:
            values = part[name].astype(np.int64, copy=False)
            ok = part.get(name + "_ok")
            ints[name] = values if ok is None else np.where(ok, values, -1)
        src, dst, addresses = _addresses(part)
        proto, protocols = _protocols(part)
        return cls(time=part["time"], src=src, dst=dst, addresses=addresses, proto=proto, protocols=protocols,
                   more_frags=part["more_frags"] & part["more_frags_ok"], l3=part["l3"], ints=ints, info=info)


class LazyInts(dict):
    """The integer columns (``INTS``) as int64 arrays, -1 where missing, each made by
    ``__missing__`` when first asked for: most analyses need a few of the twenty (on 1M frames
    each costs a copy). Of a DataFrame here; of the reader's columns in stats/numbered.py."""

    def __contains__(self, name) -> bool:
        return name in INTS

    def __iter__(self):
        return iter(INTS)

    def items(self):
        return [(name, self[name]) for name in INTS]


class _Columns(LazyInts):
    """A DataFrame's integer columns."""

    def __init__(self, df):
        super().__init__()
        self._df = df

    def __missing__(self, name: str) -> np.ndarray:
        if name not in INTS:
            raise KeyError(name)
        df = self._df
        if name not in df:
            value = np.full(len(df), -1, dtype=np.int64)
        else:
            column = df[name]
            value = column.to_numpy(np.int64, na_value=-1) if column.hasnans else column.to_numpy(np.int64)
        self[name] = value
        return value


def _categories(df, names: list[str]) -> tuple[list[np.ndarray], list[str]]:
    """Columns of text as codes into one list of their values (-1: missing): a categorical's own
    codes when all share its categories, as ``read_capture`` gives them, else found here."""
    columns = [df[name] for name in names if name in df]
    if len(columns) < len(names):
        return [np.full(len(df), -1, dtype=np.int64) for _ in names], []
    if all(str(c.dtype) == "category" for c in columns) and all(
            c.cat.categories.equals(columns[0].cat.categories) for c in columns):
        return [c.cat.codes.to_numpy(np.int64) for c in columns], [str(v) for v in columns[0].cat.categories]
    values = [c.astype(object).where(c.notna(), None).to_list() for c in columns]
    distinct = sorted({str(v) for column in values for v in column if v is not None})
    index = {v: i for i, v in enumerate(distinct)}
    return [np.array([index[str(v)] if v is not None else -1 for v in column], dtype=np.int64)
            for column in values], distinct


def _codes(values: np.ndarray, ok: np.ndarray, codes: np.ndarray, offset: int) -> list:
    """Write into ``codes`` (where ``ok``) the index of each value among its distinct values
    (plus ``offset``); returns the distinct values."""
    distinct, inverse = np.unique(values[ok], return_inverse=True, axis=0 if values.ndim > 1 else None)
    codes[ok] = offset + inverse.reshape(-1)
    return list(distinct)


def _addresses(part: dict) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Source and destination as codes into one list of address strings."""
    n = part["time"].size
    ends = np.full(2 * n, -1, dtype=np.int64)
    four = np.concatenate([part["src4"], part["dst4"]])
    names = [str(ipaddress.IPv4Address(int(a)))
             for a in _codes(four, np.concatenate([part["src4_ok"], part["dst4_ok"]]), ends, 0)]
    if part.get("src6") is not None:
        six = np.concatenate([part["src6"], part["dst6"]])
        names += [str(ipaddress.IPv6Address(bytes(a))) for a in
                  _codes(six, np.concatenate([part["src6_ok"], part["dst6_ok"]]), ends, len(names))]
    return ends[:n], ends[n:], names


def _protocols(part: dict) -> tuple[np.ndarray, list[str]]:
    codes = np.full(part["time"].size, -1, dtype=np.int64)
    numbers = _codes(part["ip_proto"], part["ip_proto_ok"], codes, 0)
    return codes, [IP_PROTO.get(int(p), f"ip-proto-{int(p)}") for p in numbers]
