"""iperf3's interval reports while it runs, into a run's event stream.

iperf3 3.13 added ``--json-stream``: one JSON object a line, ``{"event": "interval",
"data": {"streams": [...], "sum": {...}}}`` as each interval ends. Debian 12 ships 3.12,
whose ``-J`` prints everything at the end; there the server reports each interval as a
text line the moment it ends with ``--forceflush``::

    [  5]   0.10-0.20   sec   115 KBytes  9.45 Mbits/sec                  (tcp)
    [  5]   0.10-0.20   sec   119 KBytes  9.74 Mbits/sec  0.056 ms  0/83 (0%)   (udp)
    [SUM]   0.10-0.20   sec   230 KBytes  18.9 Mbits/sec                  (-P 2)

The installed version is asked, never assumed (``installed_version``). The server (the
receiver, host b) reports: its intervals are what arrived, the figure to trust; the
client keeps ``-J`` for the run's final record. ``read_intervals`` turns the server's
output into ``interval`` events of source ``receiver`` as it comes; the same parsers
read a finished run's server output (``parse_server_output``).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from functools import lru_cache

__all__ = ["installed_version", "streams_json", "server_reporting", "parse_text_line", "parse_stream_line",
           "parse_server_output", "read_intervals"]

#: Seconds per interval report (-i): a live plot's pace.
INTERVAL_S = 0.1
_LINE = re.compile(r"\[\s*(?P<id>\d+|SUM)\]\s+(?P<start>[\d.]+)-(?P<end>[\d.]+)\s+sec\s+(?P<size>[\d.]+)\s+"
                   r"(?P<size_unit>[KMGT]?)Bytes\s+(?P<rate>[\d.]+)\s+(?P<rate_unit>[KMGT]?)bits/sec(?P<rest>.*)$")
#: iperf3's text units: bytes in powers of 1024 (its -f default 'a'), bits in powers of 1000.
_BYTES = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@lru_cache(maxsize=1)
def installed_version() -> tuple[int, ...] | None:
    """The installed iperf3's version (``iperf3 --version``: "iperf 3.12 (cJSON 1.7.15)"), or None."""
    if not shutil.which("iperf3"):
        return None
    try:
        text = subprocess.run(["iperf3", "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"iperf\s+(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(p) for p in found.groups() if p is not None) if found else None


def streams_json(version: tuple[int, ...] | None) -> bool:
    """Does this iperf3 have ``--json-stream`` (3.13 and later)?"""
    return version is not None and version >= (3, 13)


def server_reporting(version: tuple[int, ...] | None) -> list[str]:
    """The server's options for reports as they happen: JSON lines, else flushed text lines."""
    every = ["-i", str(INTERVAL_S)]
    return ["-J", "--json-stream", *every] if streams_json(version) else [*every, "--forceflush"]


def parse_text_line(line: str) -> dict | None:
    """One interval line of iperf3's text output → {stream, start_s, end_s, bytes, bps}; None for
    any other line (headers, and the end's summary lines, which say "sender"/"receiver")."""
    found = _LINE.search(line.strip())
    if not found or re.search(r"\b(sender|receiver)\s*$", found["rest"]):
        return None
    return {"stream": found["id"], "start_s": float(found["start"]), "end_s": float(found["end"]),
            "bytes": float(found["size"]) * _BYTES[found["size_unit"]],
            "bps": float(found["rate"]) * _BITS[found["rate_unit"]]}


def parse_stream_line(line: str) -> dict | None:
    """One ``--json-stream`` line → the interval's sum as ``parse_text_line`` gives it; None for
    other events (start, end) and for what is not JSON."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("event") != "interval":
        return None
    total = (event.get("data") or {}).get("sum") or {}
    if total.get("end") is None:
        return None
    return {"stream": "SUM", "start_s": total.get("start"), "end_s": total["end"], "bytes": total.get("bytes"),
            "bps": total.get("bits_per_second")}


def _totals(lines, parse) -> list[dict]:
    """The intervals of every stream summed (the SUM lines when several streams report)."""
    found = [i for i in map(parse, lines) if i is not None]
    sums = [i for i in found if i["stream"] == "SUM"]
    return sums if sums else found


def parse_server_output(text: str) -> list[dict]:
    """A finished server's output (either form): its intervals, summed over streams."""
    lines = text.splitlines()
    json_lines = [line for line in lines if line.lstrip().startswith("{")]
    return _totals(json_lines, parse_stream_line) if json_lines else _totals(lines, parse_text_line)


def read_intervals(stream, emit, *, streams: int = 1, tags: dict | None = None) -> threading.Thread:
    """A thread reading the server's output line by line as it is written, emitting each
    interval (of ``streams`` parallel streams: their SUM line) as an ``interval`` event of
    source ``receiver`` (``bytes``: received so far, ``bps``: the interval's rate). Ends with
    the output."""
    def loop():
        total = 0.0
        while True:
            try:
                raw = stream.readline()                 # blocks until iperf3 writes a line, or exits
            except (OSError, ValueError):               # its output was closed: the run is over
                return
            if not raw:
                return
            line = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            found = parse_stream_line(line) if line.lstrip().startswith("{") else parse_text_line(line)
            if found is None or (found["stream"] == "SUM") != (streams > 1 or line.lstrip().startswith("{")):
                continue
            total += found["bytes"] or 0.0
            emit({"event": "interval", "source": "receiver", "t": time.time(), "bytes": total, "bps": found["bps"],
                  "interval_end_s": found["end_s"], "tool": "iperf3", **(tags or {})})
    thread = threading.Thread(target=loop, name="wirelab-iperf3-intervals", daemon=True)
    thread.start()
    return thread
