"""tshark's statistics as Python values, to compare ``open_capture`` with (tshark 4.0's text formats).

``statistics(path)`` runs tshark once per capture for conversations, endpoints, the protocol
hierarchy and the expert information; ``follow(path, stream)`` its raw Follow TCP Stream.
JXTA's heuristic dissector is turned off: it claims some payloads the snaplen cut and
turns them into ``_ws.short`` (the kit says ``data``, as tshark does without it).
"""
from __future__ import annotations

import re
import subprocess

_UNITS = {"bytes": 1, "kB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000}
_STATS = [arg for kind in ("tcp", "udp", "ip", "ipv6", "eth") for table in ("conv", "endpoints")
          for arg in ("-z", f"{table},{kind}")] + ["-z", "io,phs", "-z", "expert"]


def tshark(path, *args, quiet: bool = True) -> str:
    argv = ["tshark", "-n", "-r", str(path), *(["-q"] if quiet else []), "--disable-protocol", "jxta", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout


def _blocks(text: str) -> dict[str, list[str]]:
    """Each ``====``-framed block by its first line (``TCP Conversations``, ...)."""
    out = {}
    for piece in re.split(r"^={10,}$", text, flags=re.M):
        lines = piece.strip("\n").splitlines()
        if lines and lines[0].strip():
            out[lines[0].strip()] = lines[1:]
    return out


def _size(number: str, unit: str) -> tuple[int, int]:
    """A tshark size ("64", "kB") → (value, its rounding step)."""
    step = _UNITS[unit]
    return int(number) * step, step


def statistics(path) -> dict:
    """``conv``/``endpoints`` by kind, ``phs`` rows, ``expert`` counts and ``expert_frames``
    (summary → frame numbers), from one run of tshark."""
    text = tshark(path, "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message", "-E", "occurrence=a",
                  "-E", "aggregator=|", *_STATS, quiet=False)
    blocks = _blocks(text)
    out = {"expert": _expert(text), "expert_frames": _expert_frames(text), "phs": [], "conv": {}, "endpoints": {}}
    for title, lines in blocks.items():
        kind = {"ipv4": "ip", "ethernet": "eth"}.get(title.split()[0].lower(), title.split()[0].lower())
        if title.endswith("Conversations"):
            out["conv"][kind] = [_conversation(line) for line in lines if "<->" in line]
        elif title.endswith("Endpoints"):
            out["endpoints"][kind] = [_endpoint(line, kind) for line in lines[2:] if line.strip()]
        elif title.startswith("Protocol Hierarchy"):
            for line in lines[2:]:
                m = re.match(r"^(\s*)(\S+)\s+frames:(\d+) bytes:(\d+)", line)
                if m:
                    out["phs"].append((len(m[1]) // 2, m[2], int(m[3]), int(m[4])))
    return out


def _conversation(line: str) -> dict:
    a, _, rest = line.partition("<->")
    fields = rest.split()
    b = fields[0]
    n = fields[1:]
    # <- frames bytes unit, -> frames bytes unit, total frames bytes unit, start, duration
    return {"a": a.strip(), "b": b, "packets_b_to_a": int(n[0]), "bytes_b_to_a": _size(n[1], n[2]),
            "packets_a_to_b": int(n[3]), "bytes_a_to_b": _size(n[4], n[5]), "packets": int(n[6]),
            "bytes": _size(n[7], n[8]), "rel_start": float(n[9]), "duration": float(n[10])}


def _endpoint(line: str, kind: str) -> tuple:
    fields = line.split()
    ported = kind in ("tcp", "udp")
    key = (fields[0], int(fields[1])) if ported else (fields[0],)
    return key + tuple(int(v) for v in fields[2 if ported else 1:])


def _expert(text: str) -> dict[str, int]:
    """TCP summary → frequency."""
    out: dict[str, int] = {}
    for m in re.finditer(r"^\s+(\d+)\s+(\w+)\s+(\S+)\s+(.+?)\s*$", text, re.M):
        if m[3] != "TCP":
            continue
        summary = m[4]
        out[summary] = out.get(summary, 0) + int(m[1])
    return out


def _expert_frames(text: str) -> dict[str, list[int]]:
    """The per-frame lines (frame number, expert messages joined by "|") → summary → frames."""
    out: dict[str, list[int]] = {}
    for m in re.finditer(r"^(\d+)\t(.+)$", text, re.M):
        for message in m[2].split("|"):
            out.setdefault(message, []).append(int(m[1]))
    return out


def follow(path, stream: int) -> tuple[bytes, bytes]:
    """``-z follow,tcp,raw,N``: the bytes node 0 sent and the bytes node 1 sent."""
    lines = tshark(path, "-z", f"follow,tcp,raw,{stream}").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Node 1:")) + 1
    sent = {0: [], 1: []}
    for line in lines[start:]:
        if line.startswith("====="):
            break
        sent[1 if line.startswith("\t") else 0].append(bytes.fromhex(line.strip()))
    return b"".join(sent[0]), b"".join(sent[1])


def io_stat(path, interval: float, display_filter: str = "") -> list[tuple[int, int]]:
    """``-z io,stat,INTERVAL[,FILTER]``: (frames, bytes) per interval."""
    spec = f"io,stat,{interval}" + (f",{display_filter}" if display_filter else "")
    return [(int(m[1]), int(m[2])) for m in
            re.finditer(r"^\|\s*[\d.]+ <> [\d.Dur]+\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|$", tshark(path, "-z", spec), re.M)]
