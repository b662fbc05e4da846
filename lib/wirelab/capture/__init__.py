"""Capture and analysis: dumpcap in, a fast loader, Wireshark's TCP analysis, overhead from the wire.

Read in this order: ``loader`` (``read_capture``: pcap/pcapng → DataFrame; it
uses ``source`` for windows of the file, ``files``/``pcap``/``pcapng`` for the
record layouts, ``walk`` to find records fast, ``decode``, ``fields`` and
``dissect`` to read headers with numpy, ``formats`` for the byte tables),
``stream`` (``iter_capture``: any size, in chunks), ``flows`` (conversations,
I/O graph), ``tcp_analysis`` (Wireshark's retransmission/loss flags),
``udp_loss`` (sequence numbers in datagrams), ``overhead`` (what the wire
carried → ``wirelab.model``), ``dataset`` (a capture as parquet, queried with
DuckDB: ``sql_flows``, ``sql_tcp``, ``sql_overhead``; or with Dask), ``live``
(dumpcap), ``wireshark`` (tshark/pyshark for the details).
"""
from .dataset import CaptureDataset, convert, open_dataset
from .flows import conversation_ids, flows, io_graph
from .live import LiveCapture, dumpcap_argv
from .loader import capture_info, read_capture
from .overhead import CaptureVerdict, WireOverhead, capture_warnings, predict_from_capture, read_overhead
from .stream import iter_capture
from .tcp_analysis import retransmission_summary, tcp_analysis
from .udp_loss import SEQUENCE_FORMATS, udp_loss
from .wireshark import packets_json, pyshark_packets, tcp_analysis_flags, tshark_conversations, tshark_fields

__all__ = ["read_capture", "iter_capture", "convert", "open_dataset", "CaptureDataset", "capture_info",
           "flows", "conversation_ids", "io_graph", "tcp_analysis", "retransmission_summary", "udp_loss", "SEQUENCE_FORMATS", "read_overhead", "WireOverhead",
           "predict_from_capture", "CaptureVerdict", "capture_warnings", "LiveCapture", "dumpcap_argv",
           "tshark_fields", "tshark_conversations", "tcp_analysis_flags", "packets_json", "pyshark_packets"]
