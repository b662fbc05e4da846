"""tshark/pyshark helpers: recorded tshark output, and pyshark inside a running event loop (Jupyter)."""
from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from wirelab.capture.wireshark import packets_json, parse_conversations, pyshark_packets

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
