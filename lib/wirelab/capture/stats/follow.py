"""Wireshark's Analyze › Follow › TCP Stream: both directions' bytes, put back in order (``tshark -z follow,tcp,raw,N``).

Each direction's segments are sorted by sequence number (relative to the direction's
first segment, modulo 2^32); a byte sent twice counts once, in the segment that brought
it first in sequence order (a retransmission adds nothing new). The bytes come from
the capture file: a segment the snaplen cut gives only what the file holds, and a
hole in the sequence space (a segment never captured) is skipped and counted in
``missing``. Done with numpy (a running maximum, one gather of every byte), not a loop
over segments. ``chunks`` says which frame brought which bytes, in frame order, as
Wireshark prints them: A → B from node 0 (the first frame's source), B → A from node 1.
A TCP segment in IP fragments is followed whole, as Wireshark does after reassembly: a
later fragment's bytes are the segment's from its offset on (``_fragment_seqs``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import UsageError

__all__ = ["Followed", "follow_tcp"]

#: tshark's ascii mode: printable ASCII and CR/LF as they are, every other byte "."
_ASCII = bytes(b if 0x20 <= b < 0x7F or b in (0x0A, 0x0D) else 0x2E for b in range(256))


@dataclass
class Followed:
    """A TCP stream's bytes: ``a_to_b`` and ``b_to_a``; ``chunks`` (frame, a_to_b, start, end
    into that direction's bytes); ``missing`` bytes per direction (holes: never captured)."""
    stream: int
    a: str
    b: str
    a_to_b: bytes
    b_to_a: bytes
    chunks: pd.DataFrame
    missing: dict

    def __repr__(self) -> str:
        return (f"<TCP stream {self.stream}: {self.a} → {self.b} {len(self.a_to_b)} B, "
                f"← {len(self.b_to_a)} B, {self.missing} B missing>")

    def text(self, mode: str = "ascii") -> str:
        """What ``tshark -q -z follow,tcp,MODE,N`` prints (``mode`` "ascii" or "raw"): a length
        and the bytes (ascii: unprintable ones as ".", CR and LF kept) or their hex (raw) per
        chunk, B → A's indented by a tab (Wireshark 4.0, ui/cli/tap-follow.c)."""
        if mode not in ("ascii", "raw"):
            raise UsageError(f"unknown follow mode {mode!r}", "use ascii or raw")
        rule = "=" * 67
        lines = ["", rule, f"Follow: tcp,{mode}", f"Filter: tcp.stream eq {self.stream}",
                 f"Node 0: {self.a}", f"Node 1: {self.b}"]
        data = {True: self.a_to_b, False: self.b_to_a}
        for ab, start, end in zip(self.chunks["a_to_b"], self.chunks["start"], self.chunks["end"]):
            piece, tab = data[bool(ab)][int(start):int(end)], "" if ab else "\t"
            if mode == "raw":
                lines.append(tab + piece.hex())
            else:
                lines += [f"{tab}{len(piece)}", piece.translate(_ASCII).decode("ascii")]
        return "\n".join(lines + [rule]) + "\n"


def _direction(u8: np.ndarray, seq, length, held, start_in_file, frame) -> tuple[bytes, pd.DataFrame, int]:
    """One direction: its bytes, its chunks and the bytes missing in holes."""
    rel = (seq - seq[0] + 2 ** 31) % 2 ** 32 - 2 ** 31          # (a direction under 2 GiB)
    order = np.lexsort((frame, rel))
    rel, length, held, start_in_file, frame = rel[order], length[order], held[order], start_in_file[order], frame[order]
    end = rel + length
    covered = np.maximum.accumulate(np.concatenate([[rel[0]], end]))[:-1]   # highest end before each
    new_start = np.maximum(rel, covered)
    new_len = np.clip(end - new_start, 0, None)
    missing = int(np.clip(rel - covered, 0, None).sum())
    # what the file holds of the new part (the snaplen may have cut the segment's tail)
    skip = new_start - rel
    take = np.clip(np.minimum(new_len, held - skip), 0, None)
    first = start_in_file + skip
    total = int(take.sum())
    offsets = np.cumsum(take) - take
    index = np.repeat(first - offsets, take) + np.arange(total)
    data = u8[index].tobytes()
    chunks = pd.DataFrame({"frame": frame, "start": offsets, "end": offsets + take})[take > 0]
    return data, chunks, missing


def _fragment_seqs(rows: pd.DataFrame) -> np.ndarray:
    """Each row's sequence number (-1: none): its own, or for a later IP fragment of a TCP
    segment, its first fragment's plus the fragment's offset less that TCP header (the latest
    first fragment before it with the same addresses and IP id, as ``tcp_sequence._reassembled``)."""
    seq = rows["tcp_seq"].to_numpy(np.int64, na_value=-1)
    later = (rows["frag_offset"].fillna(0).to_numpy(np.int64) > 0) & (seq < 0)
    if not later.any():
        return seq
    key = {"src": rows["src"].astype(str).to_numpy(), "dst": rows["dst"].astype(str).to_numpy(),
           "ip_id": rows["ip_id"].to_numpy(np.int64, na_value=-1), "frame": rows["frame"].to_numpy(np.int64)}
    table = pd.DataFrame({**key, "row": np.arange(len(rows)), "seq": seq,
                          "hdr": rows["tcp_hdr_len"].to_numpy(np.int64, na_value=0)})
    heads = table[rows["more_frags"].fillna(False).to_numpy(bool)
                  & (rows["frag_offset"].fillna(0).to_numpy(np.int64) == 0) & (seq >= 0)]
    found = pd.merge_asof(table[later], heads[["frame", "src", "dst", "ip_id", "seq", "hdr"]], on="frame",
                          by=["src", "dst", "ip_id"], suffixes=("", "_head"))
    offset = rows["frag_offset"].to_numpy(np.int64, na_value=0)[found["row"].to_numpy()]
    at = found["seq_head"].to_numpy(np.float64) + offset - found["hdr_head"].to_numpy(np.float64)
    seq = seq.copy()
    seq[found["row"].to_numpy()] = np.where(np.isnan(at), -1, np.mod(np.nan_to_num(at), 2 ** 32)).astype(np.int64)
    return seq


def follow_tcp(frames: pd.DataFrame, buffer, stream: int) -> Followed:
    """TCP stream ``stream`` (``tcp.stream``) of ``frames`` (a ``read_capture`` table with the
    ``stream``/``a_to_b`` columns of ``conversation_ids``), its bytes read from ``buffer``
    (the capture file's bytes)."""
    rows = frames[(frames["proto"] == "tcp").to_numpy() & (frames["stream"] == stream).to_numpy()]
    if not len(rows):
        raise UsageError(f"no TCP stream {stream} in this capture",
                         "see conversations('tcp')['stream'] for the streams there are")
    u8 = np.frombuffer(buffer, dtype=np.uint8)
    ab = rows["a_to_b"].to_numpy(bool)
    first = rows.iloc[0]
    a, b = f"{first['src']}:{first['sport']}", f"{first['dst']}:{first['dport']}"
    if not ab[0]:
        a, b = b, a
    payload = rows["payload_len"].fillna(0).to_numpy(np.int64)
    offset = rows["payload_offset"].fillna(-1).to_numpy(np.int64)
    held = np.clip(np.minimum(payload, rows["cap_len"].to_numpy(np.int64) - offset), 0, None)
    data = payload > 0
    seq = _fragment_seqs(rows)
    out, parts, missing = {}, [], {}
    for side, name in ((True, "a_to_b"), (False, "b_to_a")):      # (two directions, not frames)
        pick = data & (ab == side) & (seq >= 0)
        if not pick.any():
            out[name], missing[name] = b"", 0
            continue
        out[name], chunks, missing[name] = _direction(
            u8, seq[pick], payload[pick], held[pick],
            rows["file_offset"].to_numpy(np.int64)[pick] + offset[pick], rows["frame"].to_numpy(np.int64)[pick])
        chunks.insert(1, "a_to_b", side)
        parts.append(chunks)
    chunks = (pd.concat(parts).sort_values("frame", kind="stable").reset_index(drop=True) if parts
              else pd.DataFrame(columns=["frame", "a_to_b", "start", "end"]))
    return Followed(stream, a, b, out["a_to_b"], out["b_to_a"], chunks, missing)
