"""Wireshark's Statistics and Analyze menus on a frame table, one module each, and ``opened``
(``open_capture``: the Capture object that offers them).

``conversations`` (Conversations, Endpoints), ``hierarchy`` (Protocol Hierarchy),
``io`` (I/O graph), ``expert`` (Expert Information), ``follow`` (Follow TCP Stream),
``stream_graphs`` (TCP Stream Graphs: tcptrace, throughput, RTT, window) and
``stream_plot`` (their pictures).
"""
from ..._exports import lazy

_EXPORTS = {"conversation_table": "conversations", "endpoint_table": "conversations",
            "protocol_hierarchy": "hierarchy", "io_table": "io", "expert_table": "expert", "follow_tcp": "follow",
            "Followed": "follow", "StreamGraphs": "stream_graphs",
            "open_capture": "opened", "Capture": "opened", "FlowGraph": "opened"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
