"""Capture and analysis: dumpcap in, a fast loader, Wireshark's TCP analysis, overhead from the wire.

Read in this order: ``loader`` (``read_capture``: pcap/pcapng → DataFrame; it
uses ``files`` for the record layout, ``walk`` to find records fast, ``fields``
and ``dissect`` to read headers with numpy, ``formats`` for the byte tables),
``flows`` (conversations, I/O graph), ``tcp_analysis`` (Wireshark's
retransmission/loss flags), ``udp_loss`` (sequence numbers in datagrams),
``overhead`` (what the wire carried → ``wirelab.model``), ``live`` (dumpcap),
``wireshark`` (tshark for the details), ``pyshark_jupyter`` (pyshark, file and
live, safe inside Jupyter), ``ppcb_dissector`` (PPCB in Wireshark: the kit's Lua
dissector ``ppcb.lua``), ``scapy_layout`` (a frame's fields, byte by byte, beside
the model's header count).
"""
from .flows import conversation_ids, flows, io_graph
from .live import LiveCapture, dumpcap_argv
from .loader import capture_info, read_capture
from .overhead import CaptureVerdict, WireOverhead, capture_warnings, predict_from_capture, read_overhead
from .tcp_analysis import retransmission_summary, tcp_analysis
from .udp_loss import SEQUENCE_FORMATS, udp_loss
from .ppcb_dissector import ppcb_packets, ppcb_summary
from .wireshark import (PysharkLive, packets_json, pyshark_packets, tcp_analysis_flags, tshark_conversations,
                        tshark_fields)

__all__ = ["read_capture", "capture_info", "flows", "conversation_ids", "io_graph", "tcp_analysis",
           "retransmission_summary", "udp_loss", "SEQUENCE_FORMATS", "read_overhead", "WireOverhead",
           "predict_from_capture", "CaptureVerdict", "capture_warnings", "LiveCapture", "dumpcap_argv",
           "tshark_fields", "tshark_conversations", "tcp_analysis_flags", "packets_json", "pyshark_packets",
           "PysharkLive", "ppcb_packets", "ppcb_summary"]
