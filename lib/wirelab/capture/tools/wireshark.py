"""Wireshark's own eyes: tshark and pyshark for dissection details and TCP analysis flags.

Slow (thousands of packets per second), so for small captures or a few
selected frames; ``read_capture`` is the fast path. Everything here runs
tshark as a subprocess with a timeout; pyshark (``pyshark_jupyter``) runs in
a worker thread with its own event loop, so it works inside Jupyter. PPCB is
decoded by the kit's dissector (``ppcb_dissector``).
"""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd

from ...errors import CaptureError, MissingToolError

__all__ = ["tshark", "tshark_fields", "tshark_conversations", "parse_conversations",
           "tcp_analysis_flags", "packets_json", "TCP_FLAGS"]

#: tcp.analysis.* flags we compare with our own analysis
TCP_FLAGS = ["retransmission", "fast_retransmission", "spurious_retransmission", "out_of_order",
             "lost_segment", "duplicate_ack"]


def tshark() -> str:
    path = shutil.which("tshark")
    if not path:
        raise MissingToolError("tshark")
    return path


def _run(argv: list[str], timeout: float) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CaptureError(f"tshark took more than {timeout:g} s",
                           "use a smaller capture, a display filter, or read_capture()") from None
    if done.returncode != 0:
        err = done.stderr.strip().splitlines()
        raise CaptureError(f"tshark failed: {err[-1] if err else done.returncode}",
                           "check the file opens in Wireshark")
    return done.stdout


def tshark_fields(path, fields: list[str], *, display_filter: str | None = None,
                  options: tuple[str, ...] = (), timeout: float = 120) -> pd.DataFrame:
    """``tshark -T fields`` into a DataFrame (one row per frame shown), numbers converted."""
    argv = [tshark(), "-n", "-r", str(path), "-T", "fields", "-E", "separator=\t",
            "-E", "occurrence=f", *options]
    if display_filter:
        argv += ["-Y", display_filter]
    for f in fields:
        argv += ["-e", f]
    text = _run(argv, timeout)
    df = pd.read_csv(io.StringIO(text), sep="\t", header=None, names=fields, dtype=str,
                     keep_default_na=False, quoting=3)
    for f in fields:
        shown = df[f][df[f] != ""]
        if len(shown) and shown.str.startswith("0x").all():        # e.g. ip.id, tcp.flags
            df[f] = df[f].map(lambda v: int(v, 16) if v else np.nan)
            continue
        numeric = pd.to_numeric(df[f].replace("", np.nan), errors="coerce")
        if numeric.notna().sum() == (df[f] != "").sum():
            df[f] = numeric
    return df


_UNITS = {"bytes": 1, "kB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3}
_CONV = re.compile(r"^(\S+?):?(\d+)?\s+<->\s+(\S+?):?(\d+)?\s+"
                   r"(\d+)\s+([\d.]+ \w+)\s+(\d+)\s+([\d.]+ \w+)\s+(\d+)\s+([\d.]+ \w+)\s+([\d.]+)\s+([\d.]+)\s*$")


def _bytes(text: str) -> tuple[int, bool]:
    value, unit = text.split()
    return int(float(value) * _UNITS.get(unit, 1)), unit == "bytes"


def parse_conversations(text: str) -> pd.DataFrame:
    """The table of ``tshark -q -z conv,tcp`` (or udp/ip). tshark 4 rounds bytes to kB/MB,
    so ``bytes_exact`` says whether the byte counts of a row are exact."""
    rows = []
    for line in text.splitlines():
        m = _CONV.match(line.strip())
        if not m:
            continue
        a, ap, b, bp, f_ba, b_ba, f_ab, b_ab, f_t, b_t, start, dur = m.groups()
        (n_ba, e1), (n_ab, e2), (n_t, e3) = _bytes(b_ba), _bytes(b_ab), _bytes(b_t)
        rows.append({"a": a, "a_port": int(ap) if ap else None, "b": b, "b_port": int(bp) if bp else None,
                     "packets_b_to_a": int(f_ba), "bytes_b_to_a": n_ba, "packets_a_to_b": int(f_ab),
                     "bytes_a_to_b": n_ab, "packets": int(f_t), "bytes": n_t,
                     "bytes_exact": e1 and e2 and e3, "start": float(start), "duration": float(dur)})
    return pd.DataFrame(rows)


def tshark_conversations(path, proto: str = "tcp", *, timeout: float = 120) -> pd.DataFrame:
    """``tshark -z conv,PROTO`` as a DataFrame (IP reassembly off, as ``flows`` counts frames)."""
    text = _run([tshark(), "-n", "-r", str(path), "-o", "ip.defragment:FALSE",
                 "-o", "ipv6.defragment:FALSE", "-q", "-z", f"conv,{proto}"], timeout)
    return parse_conversations(text)


def tcp_analysis_flags(path, *, timeout: float = 120) -> pd.DataFrame:
    """Wireshark's tcp.analysis.* flags per frame (index = frame number − 1, booleans)."""
    fields = ["frame.number"] + [f"tcp.analysis.{f}" for f in TCP_FLAGS]
    argv = [tshark(), "-n", "-r", str(path), "-T", "fields", "-E", "separator=\t"]
    for f in fields:
        argv += ["-e", f]
    text = _run(argv, timeout)
    raw = pd.read_csv(io.StringIO(text), sep="\t", header=None, names=fields, dtype=str,
                      keep_default_na=False, quoting=3)
    out = pd.DataFrame({f: raw[f"tcp.analysis.{f}"] != "" for f in TCP_FLAGS})
    out.index = raw["frame.number"].astype(int) - 1
    return out


def packets_json(path, *, display_filter: str | None = None, frames: list[int] | None = None,
                 limit: int = 50, timeout: float = 60) -> list[dict]:
    """Full Wireshark dissection (``tshark -T json``) of a few packets: frame numbers
    (1-based, as Wireshark shows them) and/or a display filter; at most ``limit``."""
    parts = [display_filter] if display_filter else []
    if frames:
        parts.append(" || ".join(f"frame.number == {int(f)}" for f in frames[:limit]))
    argv = [tshark(), "-n", "-r", str(path), "-T", "json"]
    if frames:
        argv += ["-c", str(max(int(f) for f in frames[:limit]))]     # no need to read further
    if parts:
        argv += ["-Y", " and ".join(f"({p})" for p in parts)]
    text = _run(argv, timeout)
    packets = json.loads(text) if text.strip() else []
    return [p["_source"]["layers"] for p in packets[:limit]]

