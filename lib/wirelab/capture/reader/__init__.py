"""The capture reader: a pcap or pcapng file, of any size, into columns of numpy arrays.

Its face: ``read_capture`` (a file → DataFrame), ``iter_capture`` (any size, in
chunks), ``read_part`` (the columns as arrays, no pandas) and ``Frames`` (what
the statistics one floor up compute on). Read in this order: ``loader``
(``read_capture``, ``read_part``; the file mapped once), ``decode`` (the loop
over windows of the file: ``ReadState`` is what one window leaves to the next,
``Engine`` the one "compiled or numpy" decision of a window), ``source`` (the
windows), ``files``/``pcap``/``pcapng`` (the record layouts), ``walk`` (finding
records fast), ``fields``, ``dissect`` and ``fastpath`` (reading headers with
numpy; ``fastpath`` for the usual Ethernet/IPv4/TCP or UDP packet), ``formats``
(the byte tables), ``part`` and ``columns`` (the arrays and the DataFrame),
``stream`` (``iter_capture``), ``frames``; ``jit`` (when the compiled twins are
used, and why not), ``jit_build``, ``walk_jit`` and ``decode_jit`` (the twins,
numba), ``number_jit`` (the twin of the conversation numbering one floor up,
compiled with them). ``python -m wirelab.capture.reader.jit`` compiles them ahead.
"""
from ..._exports import lazy

_EXPORTS = {"read_capture": "loader", "read_part": "loader", "capture_info": "loader",
            "iter_capture": "stream", "Frames": "frames"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
