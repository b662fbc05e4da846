"""A capture as the reader's columns with its conversations numbered: the frames' DataFrame made only when asked for.

``open_capture`` reads a file into numpy columns (``reader.part.Part``) and numbers its
conversations on them: window by window while the reader reads the next one (``Early``,
``number_jit.Numbering``), or once read (``conversation_numbers``). Statistics › Conversations of TCP
and UDP are then sums over those columns (``conversation_table``), with no DataFrame
between: on a 1M-frame capture, building the DataFrame (address texts, categories, nullable
integers) and reading its columns back into numpy cost more than reading the file.
``frame()`` builds the frames' table when a statistic needs it (every other one does): the
table ``read_capture`` gives plus ``conversation_ids``' columns, the same values.

The numbering's keys: an IPv4 address is its own key (no coding of two million addresses);
a capture with IPv6 codes its addresses as ``read_capture`` does; a protocol's key is its IP
protocol number (``PROTOCOLS`` names them). Any one-to-one keys give the same numbers
(``conversation_numbers``). IP fragments need the frames' table (``transport_frames``: their
datagrams are reassembled): ``conversations`` then answers None and the caller uses it.
tests/test_capture_numbered.py compares both ways on every committed and public capture.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from ..conversations import conversation_numbers, ranks_by_protocol
from ..reader.columns import first_time, frame_addresses, frame_from_part
from ..reader.formats import IP_PROTO
from ..reader.frames import INTS, Frames, LazyInts
from ..reader.jit import numbering
from ..reader.part import Part
from .conversations import conversation_sums, conversation_table

__all__ = ["Numbered", "Early", "PartKeys", "PROTOCOLS"]

#: a protocol key (its IP protocol number) → its name, as ``read_capture``'s ``proto``
PROTOCOLS = [IP_PROTO.get(p, f"ip-proto-{p}") for p in range(256)]
_NUMBER = {"tcp": PROTOCOLS.index("tcp"), "udp": PROTOCOLS.index("udp")}


class Numbered:
    """The reader's columns (``part``, ``info``) and per frame ``conv``, ``a_to_b``, ``stream``
    (``conversation_ids``' columns)."""

    def __init__(self, part: Part, info: dict, *, early: "Early | None" = None):
        self.part, self.info = part, info
        if early is not None and early.whole(part):          # numbered while the file was read
            self.keys, self._names = early.frames(part, info), None
            n = len(self)
            self.conv, self.a_to_b = early.columns["conv"][:n], early.columns["a_to_b"][:n]
            # (each conversation's first frame and stream number; per frame only when the
            # frames' table is made)
            self.begins = early.numbering.first_frames()
            self._streams = ranks_by_protocol(_at(self.keys, "proto", self.begins))
        else:
            self.keys, self._names = _keys(part, info)
            self.conv, self.a_to_b, self.stream = conversation_numbers(self.keys)
            self.begins = None

    def __len__(self) -> int:
        return int(self.part["time"].size)

    @cached_property
    def stream(self) -> np.ndarray:
        """Per frame: its conversation's number among those of its protocol (-1: none)."""
        return self._stream_at(slice(None))

    def _stream_at(self, rows) -> np.ndarray:
        """``stream`` of the frames ``rows`` (made of ``conv`` unless made for every frame)."""
        if "stream" in self.__dict__:
            return self.stream[rows]
        return np.append(self._streams, -1)[self.conv[rows]] if self._streams.size else self.conv[rows]

    def frame(self) -> pd.DataFrame:
        """``read_capture``'s table of the frames plus ``conv``, ``a_to_b``, ``stream``."""
        df = frame_from_part(self.part, self.info)
        ids = pd.DataFrame({"conv": self.conv, "a_to_b": self.a_to_b, "stream": self.stream}, index=df.index)
        return pd.concat([df, ids], axis=1)

    def rows(self, positions: np.ndarray) -> pd.DataFrame:
        """``frame()``'s rows ``positions`` (ascending), made of those rows of the columns only: the
        same values, index and frame numbers (the categories of ``src``, ``dst``, ``proto``: the
        values these rows hold). One conversation's table without the million rows' (``explore``)."""
        part = {name: None if values is None else values[positions] for name, values in self.part.items()}
        df = frame_from_part(part, self.info, start=first_time(self.part))
        df["frame"] = positions + 1
        df.index = pd.Index(positions)
        ids = {"conv": self.conv[positions], "a_to_b": self.a_to_b[positions], "stream": self._stream_at(positions)}
        return pd.concat([df, pd.DataFrame(ids, index=df.index)], axis=1)

    def positions(self, kind: str, stream: int) -> np.ndarray | None:
        """The rows of ``kind``'s ("tcp", "udp") conversation ``stream``; None for another kind."""
        if kind not in _NUMBER:
            return None
        if self.begins is not None:      # (its conversation's frames: no stream number per frame made)
            conv = np.flatnonzero((self._streams == stream) & (_at(self.keys, "proto", self.begins) == _NUMBER[kind]))
            return np.flatnonzero(self.conv == conv[0]) if conv.size else np.zeros(0, dtype=np.int64)
        return np.flatnonzero((self.keys.proto == _NUMBER[kind]) & (self.stream == stream))

    def last_time(self) -> float:
        """The frames' latest ``time_relative`` (NaN: none has a time), as the table's ``max()``
        (t - t0 rounds monotonically: max(t) - t0 == max(t - t0))."""
        t0 = first_time(self.part)
        return float(np.fmax.reduce(self.part["time"], initial=np.nan) - t0) if t0 is not None else np.nan

    def record_columns(self) -> dict[str, np.ndarray]:
        """``time_relative`` and ``frame_len`` of every frame, as ``frame()`` has them (the I/O
        graph of all frames needs no more)."""
        t0 = first_time(self.part)
        return {"time_relative": self.part["time"] - (np.nan if t0 is None else t0),
                "frame_len": self.part["frame_len"]}

    def conversations(self, kind: str) -> pd.DataFrame | None:
        """Statistics › Conversations of ``kind`` ("tcp", "udp"), as ``Capture.conversations``
        gives them from the frames' table; None when a frame is an IP fragment (see above)."""
        if self._sums is None or kind not in _NUMBER:
            return None
        f, (first, packets, sizes, start, end) = self.keys, self._sums
        mine = np.flatnonzero(_at(f, "proto", first) == _NUMBER[kind])
        rows = first[mine]                     # (in order of ``conv``: of ``stream`` too)
        numbers = self.stream[rows] if "stream" in self.__dict__ else self._streams[self.conv[rows]]
        # (the table's rows' ends only: ``sums``' first frames as positions in them)
        ends = [_at(f, name, rows) for name in ("src", "dst", "sport", "dport")]
        sums = numbers, np.arange(rows.size), packets[mine], sizes[mine], start[mine], end[mine]
        table = conversation_table(None, self.a_to_b[rows], *ends, None, None, sums=sums)
        if len(table):
            table["address_a"], table["address_b"] = self._text(table["address_a"]), self._text(table["address_b"])
        return table

    @cached_property
    def _sums(self) -> tuple | None:
        """Per conversation (``conv``) of the frames Wireshark's TCP and UDP taps count, both kinds
        in one pass: its first such frame, packets and bytes each way, first and last time since
        the capture's first frame; None when the frames' table must answer (see above)."""
        f, part = self.keys, self.part
        if (part["more_frags"] & part["more_frags_ok"]).any() or \
                ((part["frag_offset"] > 0) & part["frag_offset_ok"]).any():
            return None
        compiled = numbering(len(self))
        if compiled is not None:            # (the same in one pass each: reader/number_jit.py)
            pick, portless = compiled.tapped(self.conv, part["ip_proto"], part["payload_offset"],
                                             part["payload_offset_ok"], part["cap_len"], part["sport_ok"],
                                             _NUMBER["tcp"], _NUMBER["udp"])
            size = int(self.conv.max(initial=-1)) + 1
            first, packets, sizes, start, end = compiled.tally(self.conv, self.a_to_b, part["frame_len"],
                                                               part["time"], pick, size)
            counted = np.flatnonzero(first >= 0)
            first, packets, sizes, start, end = (a[counted] for a in (first, packets, sizes, start, end))
        else:
            tcp = f.proto == _NUMBER["tcp"]
            pick = (tcp | (f.proto == _NUMBER["udp"])) & (self.conv >= 0)
            pick &= ~(tcp & (f.payload_offset > f.cap_len))     # (the snaplen cut the header: not tapped)
            portless = (pick & (f.sport < 0)).any()
            _, first, packets, sizes, start, end = conversation_sums(self.conv, self.a_to_b, part["frame_len"],
                                                                     part["time"], pick)
        if portless:
            return None
        # (relative after the sums: t - t0 rounds monotonically, so min(t) - t0 == min(t - t0))
        t0 = first_time(self.part)
        t0 = np.nan if t0 is None else t0
        return first, packets, sizes, start - t0, end - t0

    def _text(self, keys: pd.Series) -> np.ndarray:
        """The address texts of these keys (made once per distinct address)."""
        keys = keys.to_numpy(np.int64)
        if self._names is not None:
            return np.asarray(self._names, dtype=object)[keys]
        distinct, inverse = np.unique(keys, return_inverse=True)
        # (dotted quads, as ``str(ipaddress.IPv4Address(k))`` writes them, 4x as fast)
        text = np.array([f"{k >> 24}.{(k >> 16) & 255}.{(k >> 8) & 255}.{k & 255}" for k in distinct.tolist()],
                        dtype=object)
        return text[inverse.reshape(-1)]


class Early:
    """Conversations numbered window by window as the reader decodes them (``read_part``'s
    ``then``, beside the walk of the next window): where the compiled numbering is loaded and
    the capture is IPv4 without later fragments (keys known window by window; else ``off``,
    and ``Numbered`` numbers the capture once read). The same keys and the same loop
    (``number_jit.Numbering``): the same numbers."""
    #: the key columns (``number``'s arguments) and the reader's column each is made of
    KEYS = {"src": "src4", "dst": "dst4", "proto": "ip_proto", "sport": "sport", "dport": "dport",
            "tcp_flags": "tcp_flags", "tcp_seq": "tcp_seq"}

    def __init__(self):
        self.columns: dict[str, np.ndarray] = {}
        self.numbering, self.off, self.stop = None, False, 0

    def __call__(self, part: Part, start: int, stop: int) -> None:
        if self.off:
            return
        window = slice(start, stop)
        compiled = numbering(part["time"].size)
        later = (part["frag_offset"][window] > 0) & part["frag_offset_ok"][window]
        six = part["src6"] is not None and bool(part["src6_ok"][window].any() or part["dst6_ok"][window].any())
        if compiled is None or start != self.stop or later.any() or six:
            self.off, self.columns, self.numbering = True, {}, None
            return
        self.numbering = self.numbering or compiled.Numbering(_NUMBER["tcp"])
        size = part["time"].size                # (room for the whole capture, as the reader has)
        for name in ("conv", "a_to_b"):
            have = self.columns.get(name)
            if have is None or have.size < size:
                self.columns[name] = np.empty(size, dtype=bool if name == "a_to_b" else np.int64)
                if have is not None:
                    self.columns[name][:start] = have[:start]
        # (the reader's columns as they are, with their ``_ok``: no int64 copy of any)
        keys = [part[source][:stop] for source in self.KEYS.values()]
        oks = tuple(part[source + "_ok"][:stop] for source in self.KEYS.values())
        self.numbering.feed(*keys, oks, self.columns["conv"][:stop], self.columns["a_to_b"][:stop])
        self.stop = stop

    def whole(self, part: Part) -> bool:
        """Every frame of ``part`` numbered here."""
        return not self.off and self.numbering is not None and self.stop == part["time"].size

    def frames(self, part: Part, info: dict) -> Frames:
        """The key columns as ``_keys`` gives them (IPv4 addresses as keys), each made when first
        asked for (``PartKeys``)."""
        return PartKeys(part, info)


class PartKeys(Frames):
    """``Frames`` of the reader's columns with ``_keys``' values (IPv4 addresses and IP protocol
    numbers as keys), each column made when first asked for: the conversation table reads a few
    rows of them (``at``), not a million-frame int64 copy of each."""
    SOURCES = {"src": "src4", "dst": "dst4", "proto": "ip_proto"}

    def __init__(self, part: Part, info: dict):
        # (not the dataclass's: ``src``, ``dst``, ``proto`` and ``more_frags`` come from ``__getattr__``)
        self.__dict__.update(time=part["time"], addresses=[], protocols=PROTOCOLS, l3=part["l3"],
                             ints=_Ints(part), info=info, _part=part)

    def __getattr__(self, name: str) -> np.ndarray:
        part = self.__dict__["_part"]
        if name in PartKeys.SOURCES:
            source = PartKeys.SOURCES[name]
            value = _missing(part[source].astype(np.int64), part[source + "_ok"])
        elif name == "more_frags":
            value = part["more_frags"] & part["more_frags_ok"]
        else:
            return super().__getattr__(name)
        self.__dict__[name] = value
        return value

    def at(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Column ``name`` (a key or an integer column) at ``rows``, int64 and -1 where missing,
        read from the reader's columns there."""
        source = PartKeys.SOURCES.get(name, name)
        part = self.__dict__["_part"]
        values, ok = part[source][rows].astype(np.int64), part.get(source + "_ok")
        return values if ok is None else np.where(ok[rows], values, -1)


def _at(f: Frames, name: str, rows: np.ndarray) -> np.ndarray:
    """``getattr(f, name)[rows]``, without making the column where ``f`` can read those rows alone."""
    return f.at(name, rows) if isinstance(f, PartKeys) else getattr(f, name)[rows]


def _keys(part: Part, info: dict) -> tuple[Frames, list[str] | None]:
    """The columns as ``Frames`` of keys (see the module docstring), and the address texts the
    address keys index (None: the keys are IPv4 addresses)."""
    six = part.get("src6") is not None and bool(part["src6_ok"].any() or part["dst6_ok"].any())
    if six:                               # (codes, as read_capture's categories)
        src, dst = frame_addresses(part)
        names = [str(v) for v in src.categories]
        src, dst = src.codes.astype(np.int64), dst.codes.astype(np.int64)
    else:
        names = None
        src, dst = (_missing(part[name].astype(np.int64), part[name + "_ok"]) for name in ("src4", "dst4"))
    proto = _missing(part["ip_proto"].astype(np.int64), part["ip_proto_ok"])
    return Frames(time=part["time"], src=src, dst=dst, addresses=[], proto=proto, protocols=PROTOCOLS,
                  more_frags=part["more_frags"] & part["more_frags_ok"], l3=part["l3"], ints=_Ints(part),
                  info=info), names


def _missing(values: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``values`` (int64, a copy of the reader's) with -1 where ``ok`` is not."""
    if not ok.all():
        values[~ok] = -1
    return values


class _Ints(LazyInts):
    """The reader's integer columns (``INTS``) as int64, -1 where missing, each made when first
    asked for (the numbering reads a few of the twenty)."""

    def __init__(self, part: Part):
        super().__init__()
        self._part = part

    def __missing__(self, name: str) -> np.ndarray:
        if name not in INTS:
            raise KeyError(name)
        values, ok = self._part[name].astype(np.int64, copy=False), self._part.get(name + "_ok")
        self[name] = value = values if ok is None or ok.all() else np.where(ok, values, -1)
        return value
