"""``open_capture(path)``: one object for a capture, with Wireshark's Statistics and Analyze menus as data.

    cap = wirelab.open_capture("captures/tcp-10mbit-loss2.pcapng")
    cap.conversations("tcp")          # Statistics › Conversations (tshark -z conv,tcp)
    cap.endpoints("tcp")              # Statistics › Endpoints
    cap.protocols()                   # Statistics › Protocol Hierarchy (tshark -z io,phs)
    cap.io_graph(0.001, y="bits")     # Statistics › I/O Graph, any interval
    cap.expert()                      # Analyze › Expert Information (TCP)
    cap.follow(0).a_to_b              # Analyze › Follow › TCP Stream (tshark -z follow,tcp,raw,0)
    cap.stream(0).sequence_graph()    # Statistics › TCP Stream Graphs (tcptrace, throughput, rtt, window)
    cap.flow_graph()                  # a PPCB exchange as a ladder
    cap.losses()                      # where each retransmission's original was lost
    cap.handshakes()                  # each handshake's round trip, split at the capture point
    cap.filter("tcp.port == 5201")    # a display filter: the narrowed capture

``path`` is a pcap/pcapng file, a running or stopped ``LiveCapture`` (its file so far),
or a parquet dataset folder (``convert``; it is read into memory here, and has no bytes: ``follow``, ``eth`` conversations and
``flow_graph`` need the file). Conversation numbers (``stream``: Wireshark's
``tcp.stream``/``udp.stream``) and TCP analysis flags are those of the whole capture,
computed once: a filtered capture keeps them, as Wireshark's display filter does.
The statistics are this room's other modules, one each.
"""
from __future__ import annotations

import mmap
import os
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...errors import CaptureError, SetupError, UsageError
from ..conversations import conversation_ids
from ..reader.columns import first_time
from ..reader.decode import ReadState
from ..reader.loader import read_part
from ..reader.records import read_records
from ..reader.frames import Frames
from .conversations import conversation_table, endpoint_table, mac_text, pair_ids, shared_addresses, address_names
from .hierarchy import protocol_hierarchy, tcp_header_cut, transport_frames, unreassembled
# Here only what the first read needs (open_capture, conversations: issue 33's fresh process
# in <= 0.3 s); each other menu imports its module on first use, the DuckDB twins, PPCB
# decoding and dumpcap's module only for a folder, a flow graph or a live capture.
from .numbered import Early, Numbered

if TYPE_CHECKING:
    from .follow import Followed
    from .stream_flags import StreamFlags
    from .stream_graphs import StreamGraphs

__all__ = ["open_capture", "Capture", "FlowGraph", "KINDS"]

KINDS = ("tcp", "udp", "ip", "ipv6", "eth")
_READING = threading.Lock()
#: ``read_at``'s stretch of the file (what it keeps mapped at most)
READ_STRETCH = 64 << 20


def open_capture(path) -> "Capture":
    """A pcap/pcapng file (read when first used), a parquet dataset folder (``convert``) or a
    ``LiveCapture`` (its file as it stands now, running or stopped: open it again to see more)."""
    if not isinstance(path, (str, os.PathLike)):
        from ..tools.live import LiveCapture        # (start-up: dumpcap's module only for what may be one)
        if isinstance(path, LiveCapture):
            return Capture(None, Path(path.path), numbered=Capture.read(Path(path.path))._numbered)
    path = Path(path)
    if path.is_dir():
        from ..sql.dataset import INFO, open_dataset    # (start-up: the parquet room only for a folder)
        if not (path / INFO).is_file():
            raise CaptureError(f"{path} is a folder but not a capture dataset (no {INFO})",
                               "give a .pcap/.pcapng file, or a folder written by wirelab.capture.convert")
        with open_dataset(path) as ds:
            return Capture(ds.frame(), path, has_bytes=False)
    return Capture.read(path)


@dataclass
class FlowGraph:
    """A PPCB exchange: ``packets`` (``exchange``'s table) and ``lines`` (``ladder_text``)."""
    packets: pd.DataFrame
    lines: list[str]

    def __str__(self) -> str:
        return "\n".join(self.lines)


class Capture:
    """A capture's frames (``frames``: ``read_capture``'s table plus ``conv``, ``a_to_b``,
    ``stream``) and the statistics of them (see the module docstring)."""

    def __init__(self, frames: pd.DataFrame | None, source: Path, *, has_bytes: bool = True,
                 root: "Capture | None" = None, numbered: Numbered | None = None, unread: bool = False):
        if root is None and frames is not None:
            frames = pd.concat([shared_addresses(frames), conversation_ids(frames)], axis=1)
        if frames is not None:
            self.frames = frames
        # (the whole capture; None: this one. Not ``self``: a reference to itself would keep a
        # dropped capture's frames until the garbage collector's next full pass)
        self.source, self._has_bytes, self._whole, self._unread, self._numbered = source, has_bytes, root, unread, numbered

    @property
    def _root(self) -> "Capture":
        return self if self._whole is None else self._whole

    @classmethod
    def read(cls, path: Path) -> "Capture":
        """A capture file, read when first used (``CaptureError`` now if it is none), numbered on the
        reader's columns (``stats.numbered``); the I/O graph of all frames, first, reads the headers."""
        ReadState.open(path).close()        # (no capture, no file: the error now, not at first use)
        return cls(None, path, unread=True)

    @property
    def _numbered(self) -> Numbered | None:
        """The reader's columns, numbered, read on first use (None: the frames' table is made)."""
        if self._unread:
            with _READING:               # (a thread asking meanwhile waits: one read, never half a one)
                if self._unread:
                    early = Early()      # (numbering each window beside the walk of the next)
                    self._columns, self._unread = Numbered(*read_part(self.source, then=early), early=early), False
        return self._columns

    @_numbered.setter
    def _numbered(self, numbered: Numbered | None) -> None:
        self._columns = numbered

    @cached_property
    def _records(self) -> dict[str, np.ndarray]:
        """Every frame's ``time_relative`` and ``frame_len``, from the record headers alone."""
        records = read_records(self.source)
        t0 = np.nan if (first := first_time(records)) is None else first
        return {"time_relative": records["time"] - t0, "frame_len": records["frame_len"]}

    @cached_property
    def frames(self) -> pd.DataFrame:
        """``read_capture``'s table plus ``conv``, ``a_to_b``, ``stream`` (made when first used)."""
        frames, self._numbered = self._numbered.frame(), None       # (its columns now the table's)
        return frames

    def __len__(self) -> int:
        return len(self._numbered) if self._numbered is not None else len(self.frames)

    def __repr__(self) -> str:
        narrowed = "" if self._root is self else f" (of {len(self._root)})"
        return f"<Capture {self.source.name}: {len(self)} frames{narrowed}>"

    # -- the whole capture's, once ------------------------------------------------------------
    @cached_property
    def _all_flags(self) -> pd.DataFrame:
        from ..tcp_sequence import tcp_analysis     # (start-up: a menu's module on first use)
        return tcp_analysis(self.frames, expert=True)

    def flags(self) -> pd.DataFrame:
        """Wireshark's TCP analysis flags of these frames: those of the whole capture (for a
        filtered capture of a few conversations, only theirs are analysed: ``stream_flags``)."""
        root = self._root
        if "_all_flags" not in root.__dict__:
            # (rows made of the reader's columns, ``_conversation``: their index is their row numbers)
            at = self.frames.index.to_numpy(np.int64) if root._numbered is not None else \
                root.frames.index.get_indexer(self.frames.index)
            some = root._stream_flags.at(at, self.frames, root._frames_at)
            if some is not None:
                return some
        return root._all_flags.loc[self.frames.index]

    @cached_property
    def _stream_flags(self) -> StreamFlags:
        from .stream_flags import StreamFlags       # (start-up: a menu's module on first use)
        return StreamFlags.of(self._numbered if self._numbered is not None else self.frames)

    def _frames_at(self, rows: np.ndarray) -> pd.DataFrame:
        """The frames' table's rows ``rows`` (from the reader's columns while the table is not made)."""
        return self._numbered.rows(rows) if self._numbered is not None else self.frames.iloc[rows]

    def _conversation(self, kind: str, stream: int) -> "Capture":
        """``filter`` to ``kind``'s conversation ``stream`` (made of the reader's columns while
        the whole table is not: the explorer's view of one)."""
        positions = self._numbered.positions(kind, stream) if self._numbered is not None else None
        if positions is None:
            f = self.frames
            return self.filter((f["proto"] == kind).to_numpy() & (f["stream"] == stream).to_numpy())
        return Capture(self._numbered.rows(positions), self.source, has_bytes=self._has_bytes, root=self)

    def _last_time(self) -> float:          # (the latest ``time_relative`` of these frames; NaN: none)
        return self._numbered.last_time() if self._numbered is not None else float(self.frames["time_relative"].max())

    @cached_property
    def _buffer(self):
        if not self._has_bytes:
            raise UsageError(f"{self.source} is a dataset: it holds no packet bytes",
                             "open the pcap/pcapng file it was converted from")
        with open(self.source, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def _bytes(self):                   # (the file's map, the whole capture's)
        return self._root._buffer

    def read_at(self, offsets, width: int = 1) -> np.ndarray:
        """``width`` bytes of the file at each of ``offsets`` (file positions), an n × width array, read
        a ``READ_STRETCH`` of the map at a time, each one's pages let go once read (``MADV_DONTNEED``:
        else scattered bytes leave the whole file resident, 64 kB mapped around every page faulted)."""
        buffer = self._bytes()
        u8, offsets = np.frombuffer(buffer, dtype=np.uint8), np.asarray(offsets, dtype=np.int64)
        out = np.zeros((offsets.size, width), dtype=np.uint8)
        order = np.argsort(offsets, kind="stable")
        at = offsets[order]
        parts = np.split(np.arange(at.size), np.flatnonzero(np.diff(at // READ_STRETCH)) + 1) if at.size else []
        let_go = getattr(mmap, "MADV_DONTNEED", None)        # Linux's; elsewhere the pages stay
        for part in parts:
            out[order[part]] = u8[at[part][:, None] + np.arange(width)]
            if let_go is not None:
                low = int(at[part[0]]) - int(at[part[0]]) % mmap.PAGESIZE
                buffer.madvise(let_go, low, min(int(at[part[-1]]) + width, len(buffer)) - low)
        return out

    def close(self) -> None:
        """Let go of the file's bytes (mapped on first use by ``follow``, ``eth``, ``protocols``)."""
        buffer = self._root.__dict__.pop("_buffer", None)
        if buffer is not None:
            buffer.close()

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- Statistics ---------------------------------------------------------------------------
    def conversations(self, kind: str = "tcp") -> pd.DataFrame:
        """Statistics › Conversations of ``kind`` ("tcp", "udp", "ip", "ipv6", "eth")."""
        if self._numbered is not None and (table := self._numbered.conversations(kind)) is not None:
            return table
        f = self.frames
        time = f["time_relative"].to_numpy(np.float64)
        size = f["frame_len"].to_numpy(np.int64)
        if kind in ("tcp", "udp"):
            mine = (f["proto"] == kind).to_numpy() & (f["stream"] >= 0).to_numpy()
            pick = mine & transport_frames(f) & ~tcp_header_cut(f)      # (as Wireshark's tap)
            # column by column: ``f[pick]`` would copy every column of the frames (a third of the time)
            sport = f["sport"].to_numpy(np.int64, na_value=-1)
            dport = f["dport"].to_numpy(np.int64, na_value=-1)
            stream, ab = f["stream"].to_numpy(np.int64), f["a_to_b"].to_numpy(bool)
            src, dst = f["src"].cat.codes.to_numpy(), f["dst"].cat.codes.to_numpy()
            if not (pick & (sport < 0)).any():      # (the frames counted, picked as they are counted)
                return conversation_table(stream, ab, src, dst, sport, dport, size, time, names=address_names(f), pick=pick)
            sport, dport, stream, ab = sport[pick], dport[pick], stream[pick], ab[pick]
            lacking = sport < 0         # a last fragment: its datagram's ports, from the first fragment
            ported = f[mine & f["sport"].notna().to_numpy()].groupby(["stream", "a_to_b"])[["sport", "dport"]].first()
            found = ported.reindex(pd.MultiIndex.from_arrays([stream[lacking], ab[lacking]]))
            sport[lacking] = found["sport"].to_numpy(np.int64, na_value=-1)
            dport[lacking] = found["dport"].to_numpy(np.int64, na_value=-1)
            return conversation_table(stream, ab, src[pick], dst[pick],
                                      sport, dport, size[pick], time[pick], names=address_names(f))
        if kind in ("ip", "ipv6"):
            pick = (f["l3"] == ("ipv4" if kind == "ip" else "ipv6")).to_numpy() & f["src"].notna().to_numpy()
            if kind == "ipv6":          # (Wireshark's IPv6 tap leaves out what it cannot reassemble)
                pick &= ~unreassembled(f)
            src, dst = f["src"].cat.codes.to_numpy()[pick], f["dst"].cat.codes.to_numpy()[pick]
            ids, ab = pair_ids(src.astype(np.int64), dst.astype(np.int64))
            return conversation_table(ids, ab, src, dst, None, None, size[pick], time[pick], names=address_names(f))
        if kind == "eth":
            pick = (f["linktype"] == 1).to_numpy()
            src, dst = self._macs(pick)
            ids, ab = pair_ids(src, dst)
            return conversation_table(ids, ab, mac_text(src), mac_text(dst), None, None, size[pick], time[pick])
        raise UsageError(f"unknown conversation kind {kind!r}", f"use one of {', '.join(KINDS)}")

    def _macs(self, pick: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Source and destination MAC of the Ethernet frames ``pick``, as 48-bit integers."""
        u8 = np.frombuffer(self._bytes(), dtype=np.uint8)
        at = self.frames["file_offset"].to_numpy(np.int64)[pick]
        six = 1 << (8 * np.arange(5, -1, -1, dtype=np.int64))
        dst = u8[at[:, None] + np.arange(6)].astype(np.int64) @ six
        src = u8[at[:, None] + np.arange(6, 12)].astype(np.int64) @ six
        return src, dst

    def endpoints(self, kind: str = "tcp") -> pd.DataFrame:
        """Statistics › Endpoints of ``kind`` (as ``conversations``)."""
        return endpoint_table(self.conversations(kind))

    def protocols(self, *, ppcb: bool = False) -> pd.DataFrame:
        """Statistics › Protocol Hierarchy (``ppcb``: frames with a PPCB packet as ``ppcb``,
        read by the kit, for every port; else ``data`` as tshark without the kit's plugin)."""
        f = self.frames
        ether = None
        if self._has_bytes and (f["linktype"] == 1).any() and f["vlan"].notna().any():
            u8 = np.frombuffer(self._bytes(), dtype=np.uint8)
            at = np.minimum(f["file_offset"].to_numpy(np.int64) + 12, u8.size - 2)
            ether = (u8[at].astype(np.int64) << 8) | u8[at + 1]
        marked = None
        if ppcb:
            packets = self.flow_graph().packets
            real = packets[~packets["kind"].isin(["not PPCB", "SYN", "FIN", "RST"])]
            marked = f["frame"].isin(real["frame"]).to_numpy()
        flags = self.flags()
        resent = ((flags["retransmission"] & ~flags["fast_retransmission"] & ~flags["spurious_retransmission"])
                  | flags["out_of_order"]).to_numpy(bool)
        return protocol_hierarchy(f, outer_ethertype=ether, ppcb=marked, resent=resent)

    def io_graph(self, interval: float = 0.1, *, y: str = "packets", filter=None) -> pd.DataFrame:
        """Statistics › I/O Graph: ``y`` ("packets", "bytes", "bits") per ``interval`` seconds of the
        frames ``filter`` keeps (a display filter, a boolean mask, or None: all)."""
        from .io import io_table                    # (start-up: a menu's module on first use)
        if filter is None and self._unread:             # (all frames of a file not read: the record headers)
            return io_table(self._records, interval, y)
        if filter is None and self._numbered is not None:       # (all frames: two columns, no table made)
            return io_table(self._numbered.record_columns(), interval, y)
        mask = None if filter is None else self._mask(filter)
        return io_table(self.frames, interval, y, mask)

    # -- Analyze ------------------------------------------------------------------------------
    def expert(self) -> pd.DataFrame:
        """Analyze › Expert Information (TCP): severity, group, protocol, summary, count, frames
        ("D-SACK Sequence" too when the capture's bytes are there: a dataset holds none)."""
        # (start-up: a menu's module on first use)
        from .dsack import dsack_of
        from .expert import expert_table
        dsack = None
        if self._has_bytes:
            f = self.frames
            rows = np.flatnonzero(((f["proto"] == "tcp") & (f["tcp_opts_len"].fillna(0) > 0)).to_numpy())
            dsack = np.zeros(len(f), dtype=bool)
            dsack[dsack_of(Frames.of(f), self._bytes(), rows)["row"]] = True
        return expert_table(self.frames, self.flags(), dsack=dsack)

    def follow(self, stream: int) -> Followed:
        """Analyze › Follow › TCP Stream ``stream`` (``tcp.stream``): both directions' bytes."""
        from .follow import follow_tcp              # (start-up: a menu's module on first use)
        return follow_tcp(self.frames, self._bytes(), stream)

    def stream(self, i: int, *, a_to_b: bool | None = None) -> StreamGraphs:
        """TCP stream ``i``'s graphs (``sequence_graph``, ``throughput``, ``rtt``, ``window``,
        ``plot``) for the direction carrying more data (or ``a_to_b``)."""
        from .stream_graphs import StreamGraphs     # (start-up: a menu's module on first use)
        f = self.frames                   # (its frames only: their flags alone are analysed)
        mine = self.filter(((f["proto"] == "tcp") & (f["stream"] == i)).to_numpy())
        return StreamGraphs(mine.frames, mine.flags(), i, a_to_b=a_to_b)

    def flow_graph(self, *, port: int | None = None) -> FlowGraph:
        """The PPCB exchange (every UDP/TCP port, or ``port``) as ``exchange``'s table and a ladder."""
        # (start-up: PPCB decoding and the ladder only when drawn)
        from ..ladder import ladder_text
        from ..ppcb_exchange import exchange
        self._bytes()                                    # (a dataset has none: a clear error)
        packets = exchange(self.source, port=port)
        packets = packets[packets["frame"].isin(self.frames["frame"])].reset_index(drop=True)
        return FlowGraph(packets, ladder_text(packets))

    @cached_property
    def _all_losses(self) -> pd.DataFrame:
        from .losses import loss_places             # (start-up: a menu's module on first use)
        return loss_places(self.frames, self._all_flags, buffer=self._buffer if self._has_bytes else None)

    def losses(self) -> pd.DataFrame:
        """Each retransmission (of these frames) and where its original was lost: ``before`` the
        capture point, ``after`` it, ``spurious`` or ``unknown`` (``stats.losses``)."""
        every = self._root._all_losses
        return every[every["frame"].isin(self.frames["frame"])].reset_index(drop=True)

    def handshakes(self) -> pd.DataFrame:
        """Each TCP handshake (its SYN among these frames): SYN → SYN-ACK (the server's side of the
        capture point) and SYN-ACK → ACK (the client's side), summing to Wireshark's iRTT."""
        from .losses import handshakes              # (start-up: a menu's module on first use)
        every = handshakes(self._root.frames, self._root._all_flags)
        return every[every["syn"].isin(self.frames["frame"])].reset_index(drop=True)

    # -- narrowing ----------------------------------------------------------------------------
    def filter(self, expression) -> "Capture":
        """The frames a display filter keeps (``"tcp.port == 80 and frame.len > 100"``) or a
        boolean mask keeps, as a Capture with the same frame and stream numbers."""
        keep = self._mask(expression)
        return Capture(self.frames[keep], self.source, has_bytes=self._has_bytes, root=self._root)

    def _mask(self, expression) -> np.ndarray:
        if not isinstance(expression, str):
            mask = np.asarray(expression, dtype=bool)
            if mask.shape != (len(self),):
                raise UsageError(f"a mask of {mask.shape} for {len(self)} frames", "give one boolean per frame")
            return mask
        try:
            # deferred: the display-filter language is its own room (start-up)
            from ..filter import compile_filter
        except ImportError:
            raise SetupError("this wirelab has no display-filter language (wirelab.capture.filter)",
                             "update wirelab, or narrow with a boolean mask: cap.filter(cap.frames['sport'] == 80)") from None
        # on the whole capture's frames, then these rows: a field such as tcp.analysis.* or
        # tcp.stream means what it means in the whole capture (Wireshark's display filter)
        # (the capture's own flags and stream numbers are handed over: computed once)
        root, compiled = self._root.frames, compile_filter(expression)
        ppcb = None
        if "ppcb" in getattr(compiled, "sources", ()):
            from ..ppcb_reader import ppcb_packets       # (start-up: PPCB decoding only when filtered on)
            self._bytes()                                # (a dataset has none: a clear error)
            ppcb = ppcb_packets(self.source)
        mask = np.asarray(compiled.mask(root, self._root._all_flags, streams=root[["conv", "a_to_b", "stream"]],
                                        ppcb=ppcb), dtype=bool)
        return mask if root is self.frames else mask[root.index.get_indexer(self.frames.index)]
