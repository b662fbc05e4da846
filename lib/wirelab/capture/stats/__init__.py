"""Wireshark's Statistics and Analyze menus on a frame table, one module each, and ``opened``
(``open_capture``: the Capture object that offers them).

``conversations`` (Conversations, Endpoints), ``hierarchy`` (Protocol Hierarchy),
``io`` (I/O graph), ``expert`` (Expert Information), ``follow`` (Follow TCP Stream),
``stream_graphs`` (TCP Stream Graphs: tcptrace, throughput, RTT, window),
``stream_plot`` (their pictures), ``pictures`` (a graph into a PNG file, for ``wirelab
analyze --graph``) and ``losses`` (where each retransmission's original was lost, relative
to the capture point, and the handshake's round trip split there).
"""
from ..._exports import lazy

_EXPORTS = {"conversation_table": "conversations", "endpoint_table": "conversations",
            "protocol_hierarchy": "hierarchy", "io_table": "io", "expert_table": "expert", "follow_tcp": "follow",
            "Followed": "follow", "StreamGraphs": "stream_graphs", "expert_text": "expert",
            "loss_places": "losses", "handshakes": "losses", "save_graph": "pictures",
            "open_capture": "opened", "Capture": "opened", "FlowGraph": "opened"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
