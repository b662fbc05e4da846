"""tshark/pyshark helpers: recorded tshark output, and pyshark inside a running event loop (Jupyter)."""
from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from wirelab.capture.tools.pyshark_jupyter import pyshark_packets
from wirelab.capture.tools.wireshark import packets_json, parse_conversations

CAP = Path(__file__).resolve().parents[1] / "captures"
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed (apt-get install tshark)")

#: tshark 4.0.17 -q -z conv,tcp on captures/tcp-10mbit.pcapng (recorded)
CONV = """================================================================================
TCP Conversations
Filter:<No Filter>
                                                           |       <-      | |       ->      | |     Total     |    Relative    |   Duration   |
                                                           | Frames  Bytes | | Frames  Bytes | | Frames  Bytes |      Start     |              |
10.77.1.1:44450            <-> 10.77.2.2:5201                 932 62 kB        1418 2145 kB      2350 2207 kB       0.000000000         1.7159
10.77.1.1:44438            <-> 10.77.2.2:5201                   9 935 bytes       8 1106 bytes      17 2041 bytes     1.663371522         0.0530
================================================================================
"""


def test_parse_conversations():
    t = parse_conversations(CONV)
    assert list(t["packets"]) == [2350, 17]
    assert list(t["bytes_exact"]) == [False, True]
    assert t["bytes"].iloc[1] == 2041 and t["bytes"].iloc[0] == 2207000
    assert (t["a_port"].iloc[0], t["b_port"].iloc[0]) == (44450, 5201)
    assert t["duration"].iloc[0] == pytest.approx(1.7159)


@needs_tshark
def test_packets_json_for_selected_frames():
    layers = packets_json(CAP / "tcp-10mbit-loss2.pcapng", frames=[1, 2])
    assert len(layers) == 2 and "tcp" in layers[0]


@needs_tshark
def test_pyshark_runs_inside_a_running_event_loop():
    """Jupyter runs an event loop; pyshark called from it must not clash."""
    async def notebook_cell():
        return pyshark_packets(CAP / "tcp-10mbit-loss2.pcapng", display_filter="tcp.analysis.retransmission",
                               limit=3, fields={"seq": "tcp.seq", "retrans": "tcp.analysis_retransmission"})
    rows = asyncio.run(notebook_cell())
    assert len(rows) == 3 and rows["frame"].is_monotonic_increasing


def wireshark_children(parent: int | None = None) -> list[str]:
    """tshark/dumpcap processes (zombies too) whose parent is ``parent`` (default: this process)."""
    parent = parent or os.getpid()
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" (", 1)
        except OSError:
            continue
        name, fields = rest.rsplit(") ", 1)
        state, ppid = fields.split()[:2]
        if int(ppid) == parent and name in ("tshark", "dumpcap"):
            found.append(f"{pid} {name} {state}")
    return found


@needs_tshark
def test_pyshark_leaves_no_tshark_behind_even_when_stopping_early():
    async def notebook_cell():
        return pyshark_packets(CAP / "tcp-10mbit.pcapng", limit=2)        # 2 of 2350 packets
    assert len(asyncio.run(notebook_cell())) == 2
    assert wireshark_children() == []


@needs_tshark
def test_pyshark_errors_are_wirelab_errors_and_leave_nothing_behind():
    from wirelab import CaptureError
    with pytest.raises(CaptureError):
        pyshark_packets(CAP / "tcp-10mbit.pcapng", display_filter="tcp.nonsense ==")
    assert wireshark_children() == []


@needs_tshark
@pytest.mark.root
def test_pyshark_live_capture_inside_a_running_event_loop_reads_ppcb():
    from wirelab.capture.tools.pyshark_jupyter import PysharkLive
    from wirelab.transfer import run_pair

    async def notebook_cell():
        with PysharkLive("lo", bpf_filter="host 127.0.0.67", probe_host="127.0.0.67",
                         fields={"type": "ppcb.type", "no": "ppcb.packet_no"}) as live:
            during = wireshark_children()
            result = run_pair("udpr", 3000, chunk=1000, host="127.0.0.67")
        return live.packets, during, result
    rows, during, result = asyncio.run(notebook_cell())
    assert result.ok and len(during) == 2                     # dumpcap and tshark ran ...
    assert wireshark_children() == []                         # ... and are gone, reaped
    assert list(rows["highest_layer"]) == ["PPCB"] * 9        # every packet read, no probe among them
    assert list(rows["type"]) == ["1", "2", "4", "5", "4", "5", "4", "5", "7"]
    assert list(rows["no"].dropna()) == ["0", "0", "1", "1", "2", "2"]
