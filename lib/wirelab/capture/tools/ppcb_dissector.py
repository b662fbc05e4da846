"""PPCB in Wireshark: the kit's Lua dissector, for tshark, pyshark and the Wireshark GUI.

``ppcb.lua`` (beside this module, shipped with the package) decodes every PPCB
packet type over UDP (one packet a datagram) and TCP (a stream: segments are
reassembled into whole packets), with the fields of notebooks/ppcb-protocol.md:
``ppcb.type``, ``ppcb.session_id``, ``ppcb.protocol_id``, ``ppcb.total_length``,
``ppcb.packet_no``, ``ppcb.data_len``, ``ppcb.data``. It finds PPCB by content
(a datagram that is exactly one packet; a TCP stream whose first bytes are a CONN);
``ports`` adds ports to decode as PPCB whatever they carry.

    tshark -X lua_script:$(wirelab wireshark path) -r run.pcapng -Y ppcb
    wirelab wireshark install          # the GUI loads it from your Lua plugins folder
    tshark_ppcb_packets("run.pcapng", display_filter="ppcb.type == 6")   # Wireshark's reading

The kit reads PPCB from a capture itself, by the same rules and much faster
(``ppcb_reader.ppcb_packets``); tshark's reading is for display filters and
for checking the two agree.
"""
from __future__ import annotations

import filecmp
import io
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from ...errors import CaptureError, MissingToolError, SetupError
from ...wire.ppcb import CARRIES, TYPES
from .wireshark import tshark

__all__ = ["DISSECTOR", "FIELDS", "TYPE_NAMES", "tshark_options", "lua_plugin_folder", "install",
           "installed_copy", "tshark_ppcb_packets"]

#: The dissector shipped with wirelab.
DISSECTOR = Path(__file__).with_name("ppcb.lua")
#: The dissector's fields (notebooks/ppcb-protocol.md names), all under ``ppcb.``.
FIELDS = ["type", "session_id", "protocol_id", "total_length", "packet_no", "data_len", "data"]
TYPE_NAMES = TYPES
#: Which optional fields each packet type carries (in the order the dissector adds them).
_CARRIES = {name: CARRIES[name] for name in ("protocol_id", "total_length", "packet_no", "data_len")}


def tshark_options(*, udp_ports=(), tcp_ports=()) -> list[str]:
    """The tshark (and pyshark ``custom_parameters``) options that load the dissector;
    ``udp_ports``/``tcp_ports``: also decode these ports as PPCB."""
    if not DISSECTOR.is_file():
        raise SetupError(f"the PPCB dissector is missing ({DISSECTOR})", "reinstall wirelab: pip install -e .")
    options = ["-X", f"lua_script:{DISSECTOR}"]
    for name, ports in (("udp_ports", udp_ports), ("tcp_ports", tcp_ports)):
        if ports:
            options += ["-o", f"ppcb.{name}:{','.join(str(int(p)) for p in ports)}"]
    return options


def lua_plugin_folder() -> Path:
    """Wireshark's personal Lua plugins folder, as tshark reports it (``tshark -G folders``)."""
    exe = shutil.which("tshark")
    if not exe:
        raise MissingToolError("tshark")
    done = subprocess.run([exe, "-G", "folders"], capture_output=True, text=True, timeout=30)
    match = re.search(r"^Personal Lua Plugins:\s*(.+)$", done.stdout, re.MULTILINE)
    if not match:
        raise CaptureError("tshark did not name a personal Lua plugins folder",
                           "is this Wireshark built with Lua? (tshark -v says 'with Lua')")
    return Path(match.group(1).strip())


def installed_copy(folder: str | Path | None = None) -> Path | None:
    """Where the dissector is installed (None if it is not)."""
    path = Path(folder or lua_plugin_folder()) / DISSECTOR.name
    return path if path.is_file() else None


def install(folder: str | Path | None = None) -> Path:
    """Copy the dissector into the personal Lua plugins folder (or ``folder``); returns the copy.
    Wireshark and tshark then load it by themselves (restart Wireshark, or Analyze → Reload Lua Plugins)."""
    target_dir = Path(folder) if folder else lua_plugin_folder()
    target = target_dir / DISSECTOR.name
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        if not (target.is_file() and filecmp.cmp(DISSECTOR, target, shallow=False)):
            shutil.copyfile(DISSECTOR, target)
    except OSError as err:
        raise SetupError(f"cannot write {target}: {err.strerror}",
                         "give a folder you can write with --folder") from None
    return target


def tshark_ppcb_packets(path, *, display_filter: str | None = None, udp_ports=(), tcp_ports=(),
                        timeout: float = 120) -> pd.DataFrame:
    """One row per PPCB packet in a capture as tshark reads it with the kit's dissector (a TCP
    segment may carry several, or end one
    that earlier segments began: ``frame`` is where it ends). Columns: frame, time, src,
    sport, dst, dport, transport, type (CONN…RCVD), session_id (hex, as ``Result.metadata``
    keeps it), protocol_id, total_length, packet_no, data_len (missing where a type has none)."""

    if not Path(path).exists():
        raise CaptureError(f"no capture file at {path}", "check the path")
    base = ["frame.number", "frame.time_relative", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst",
            "udp.srcport", "udp.dstport", "tcp.srcport", "tcp.dstport"]
    fields = [f"ppcb.{f}" for f in FIELDS if f != "data"]
    argv = [tshark(), "-n", "-r", str(path), *tshark_options(udp_ports=udp_ports, tcp_ports=tcp_ports),
            "-Y", f"ppcb and ({display_filter})" if display_filter else "ppcb", "-T", "fields",
            "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=|"]
    for name in base + fields:
        argv += ["-e", name]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CaptureError(f"tshark took more than {timeout:g} s", "use a display filter") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise CaptureError(f"tshark failed: {lines[-1] if lines else done.returncode}",
                           "check the file opens in Wireshark")
    raw = pd.read_csv(io.StringIO(done.stdout), sep="\t", header=None, names=base + fields, dtype=str,
                      keep_default_na=False, quoting=3)
    table = pd.DataFrame([row for _, frame in raw.iterrows() for row in _packets_of(frame)],
                         columns=["frame", "time", "src", "sport", "dst", "dport", "transport", "type",
                                  "session_id", "protocol_id", "total_length", "packet_no", "data_len"])
    # u64 on the wire: nullable unsigned integers keep them exact where a type has none
    return table.astype({name: "UInt64" for name in _CARRIES})


def _packets_of(frame) -> list[dict]:
    """Split one frame's aggregated fields into its PPCB packets (tshark lists each field's
    occurrences in order; a field a type lacks is absent, so we walk the types)."""
    split = {name: [v for v in str(frame[f"ppcb.{name}"]).split("|") if v != ""]
             for name in ["type", "session_id", *_CARRIES]}
    transport = "tcp" if frame["tcp.srcport"] else "udp"
    common = {"frame": int(frame["frame.number"]), "time": float(frame["frame.time_relative"]),
              "src": frame["ip.src"] or frame["ipv6.src"], "dst": frame["ip.dst"] or frame["ipv6.dst"],
              "sport": int(frame[f"{transport}.srcport"]), "dport": int(frame[f"{transport}.dstport"]),
              "transport": transport}
    out, taken = [], {name: 0 for name in split}
    for i, code in enumerate(split["type"]):
        code = int(code)
        row = {**common, "type": TYPE_NAMES.get(code, f"type {code}")}
        sessions = split["session_id"]
        row["session_id"] = sessions[i].replace(":", "") if i < len(sessions) else None
        for name, kinds in _CARRIES.items():
            values = split[name]
            if code in kinds and taken[name] < len(values):
                row[name] = int(values[taken[name]])
                taken[name] += 1
            else:
                row[name] = None
        out.append(row)
    return out
