"""Capture and analysis: dumpcap in, a fast reader, Wireshark's statistics as data, overhead from the wire.

Five rooms below, the statistics on this floor:

- ``reader/``: a pcap/pcapng file into columns (``read_capture``, ``iter_capture``,
  ``read_part``; ``Frames``, the arrays the statistics compute on, without pandas);
- ``sql/``: a capture as a parquet dataset queried with DuckDB (``open_dataset``), one
  SQL twin per statistic below, giving the same answers out of core;
- ``tools/``: other tools' eyes (dumpcap's ``LiveCapture``, tshark, pyshark, scapy, the
  kit's Wireshark dissector for PPCB);
- ``stats/``: Wireshark's Statistics and Analyze menus as data (conversations, endpoints,
  protocol hierarchy, I/O graph, expert information, follow, TCP stream graphs), where
  each loss happened relative to the capture point (``loss_places``, ``handshakes``) and
  ``open_capture``, the one object that offers them for a file or a dataset;
- ``filter/``: Wireshark's display filters (``compile_filter``), on frames and in SQL.

Here: ``conversations`` (``flows``, the I/O graph), ``tcp_sequence`` (``tcp_analysis``:
Wireshark's retransmission/loss flags), ``tcp_stream`` (a TCP direction put back
together), ``udp_sequence`` (``udp_loss``: sequence numbers in datagrams),
``udp_ending`` (nttcp's end markers), ``overhead`` (what the wire carried →
``wirelab.model``), ``rfc6349`` (RFC 6349's metrics of a TCP transfer), ``ppcb_reader``
(PPCB packets of a capture, read by the kit), ``ppcb_exchange`` (``exchange``: what two
PPCB peers sent each other in a run's capture), and ``report`` (what ``wirelab analyze``
prints, as data and text: ``from wirelab.capture.report import report, render``).
Every public name is exported here, whichever room defines it.
"""
from .._exports import lazy

_EXPORTS = {
    "conversation_ids": "conversations", "flows": "conversations", "io_graph": "conversations", "LiveCapture": "tools.live",
    "dumpcap_argv": "tools.live", "capture_info": "reader.loader", "read_capture": "reader.loader",
    "CaptureVerdict": "overhead", "WireOverhead": "overhead", "capture_warnings": "overhead",
    "predict_from_capture": "overhead", "read_overhead": "overhead",
    "retransmission_summary": "tcp_sequence", "tcp_analysis": "tcp_sequence",
    "SEQUENCE_FORMATS": "udp_sequence", "udp_loss": "udp_sequence", "NotThatFormatWarning": "udp_sequence", "packets_json": "tools.wireshark",
    "pyshark_packets": "tools.pyshark_jupyter", "tcp_analysis_flags": "tools.wireshark",
    "tshark_conversations": "tools.wireshark", "tshark_fields": "tools.wireshark", "PysharkLive": "tools.pyshark_jupyter",
    "ppcb_packets": "ppcb_reader", "ppcb_summary": "ppcb_reader", "exchange": "ppcb_exchange",
    "collapse": "ppcb_exchange",
    "PPCB": "tools.ppcb_scapy", "bind_ppcb": "tools.ppcb_scapy", "build_frame": "tools.scapy_layout",
    "compare_with_stack": "tools.scapy_layout",
    "layout": "tools.scapy_layout", "iter_capture": "reader.stream", "convert": "sql.dataset", "open_dataset": "sql.dataset",
    "CaptureDataset": "sql.dataset", "FLAGS": "tcp_sequence", "compile_filter": "filter.display",
    "open_capture": "stats.opened", "Capture": "stats.opened", "loss_places": "stats.losses",
    "handshakes": "stats.losses",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
