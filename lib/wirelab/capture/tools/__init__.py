"""Other tools' eyes on a capture: dumpcap to make one, Wireshark (tshark, pyshark) and scapy to look.

``live`` (``LiveCapture``: dumpcap, started and stopped when the capture really
runs), ``wireshark`` (tshark for dissection details and its TCP analysis flags:
slow, for small captures or a few frames), ``pyshark_jupyter`` (pyshark, file
and live, safe inside Jupyter), ``ppcb_dissector`` (PPCB in Wireshark: the
kit's Lua dissector ``ppcb.lua``, shipped beside it), ``ppcb_scapy`` (PPCB as
a scapy layer, to build packets), ``scapy_layout`` (a frame's fields, byte by
byte, beside the model's header count). The kit's own reader is
``capture.reader``; nothing there needs these tools. Their public names are
exported by ``wirelab.capture``.
"""
