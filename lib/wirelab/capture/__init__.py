"""Capture and analysis: dumpcap in, a fast loader, Wireshark's TCP analysis, overhead from the wire.

Read in this order: ``loader`` (``read_capture``: pcap/pcapng → DataFrame; it
uses ``source`` for windows of the file, ``files``/``pcap``/``pcapng`` for the
record layouts, ``walk`` to find records fast, ``decode``, ``fields`` and
``dissect`` to read headers with numpy (``fastpath`` for the usual Ethernet/IPv4/TCP
or UDP packet), ``formats`` for the byte tables, ``part`` and ``columns`` for the
arrays and the DataFrame; ``jit``, ``jit_build``, ``walk_jit`` and ``decode_jit``
for the compiled twins), ``stream`` (``iter_capture``: any size, in chunks),
``frames`` (the columns as numpy arrays: what the analyses compute on, without
pandas), ``conversations`` (``flows``, the I/O graph), ``tcp_sequence``
(``tcp_analysis``: Wireshark's retransmission/loss flags), ``udp_sequence``
(``udp_loss``: sequence numbers in datagrams), ``udp_ending`` (nttcp's end
markers), ``overhead`` (what the wire carried → ``wirelab.model``), ``dataset`` (a
capture as parquet, queried with DuckDB: ``sql_flows``, ``sql_tcp``,
``sql_io_graph``, ``sql_overhead``; or with Dask), ``live`` (dumpcap), ``wireshark``
(tshark for the details), ``pyshark_jupyter`` (pyshark, file and live, safe inside
Jupyter), ``ppcb_reader`` (PPCB packets of a capture, read by the kit, with
``tcp_stream`` putting a TCP direction back together), ``ppcb_exchange`` (``exchange``: what
two PPCB peers sent each other in a run's capture, with TCP's and ICMP's part),
``ppcb_dissector`` (PPCB in Wireshark: the kit's Lua dissector ``ppcb.lua``),
``ppcb_scapy`` (PPCB as a scapy layer, to build packets), ``scapy_layout`` (a
frame's fields, byte by byte, beside the model's header count).
"""
from .._exports import lazy

_EXPORTS = {
    "conversation_ids": "conversations", "flows": "conversations", "io_graph": "conversations", "LiveCapture": "tools.live",
    "dumpcap_argv": "tools.live", "capture_info": "reader.loader", "read_capture": "reader.loader",
    "CaptureVerdict": "overhead", "WireOverhead": "overhead", "capture_warnings": "overhead",
    "predict_from_capture": "overhead", "read_overhead": "overhead",
    "retransmission_summary": "tcp_sequence", "tcp_analysis": "tcp_sequence",
    "SEQUENCE_FORMATS": "udp_sequence", "udp_loss": "udp_sequence", "packets_json": "tools.wireshark",
    "pyshark_packets": "tools.pyshark_jupyter", "tcp_analysis_flags": "tools.wireshark",
    "tshark_conversations": "tools.wireshark", "tshark_fields": "tools.wireshark", "PysharkLive": "tools.pyshark_jupyter",
    "ppcb_packets": "ppcb_reader", "ppcb_summary": "ppcb_reader", "exchange": "ppcb_exchange",
    "collapse": "ppcb_exchange",
    "PPCB": "tools.ppcb_scapy", "bind_ppcb": "tools.ppcb_scapy", "build_frame": "tools.scapy_layout",
    "compare_with_stack": "tools.scapy_layout",
    "layout": "tools.scapy_layout", "iter_capture": "reader.stream", "convert": "sql.dataset", "open_dataset": "sql.dataset",
    "CaptureDataset": "sql.dataset", "FLAGS": "tcp_sequence",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
