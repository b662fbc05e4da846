"""The wire's facts, once: the ground floor every other layer reads.

``ppcb`` (PPCB's packet table: type codes, header sizes, field offsets) and
``headers`` (Ethernet, IP, TCP and UDP header sizes; MTU − 28, MTU − 52, + 14).
Standard library only, no I/O, imports nothing of wirelab.
"""
from .._exports import lazy

_EXPORTS = {"ppcb": "ppcb:__module__", "headers": "headers:__module__"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
