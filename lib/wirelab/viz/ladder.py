"""The ladder of a PPCB exchange, for the capture explorer and the notebooks: ``wirelab.capture.ladder``'s drawing
(as text) and ``wirelab.capture.ladder.svg``'s picture of it, which live in the capture layer because the grader,
below ``viz``, draws them for every failed test too.

    >>> from wirelab.capture import exchange                                    # doctest: +SKIP
    >>> packets = exchange("run.pcapng", port=5000)                             # doctest: +SKIP
    >>> print("\\n".join(ladder_text(packets))); SVG(ladder_svg(packets))       # doctest: +SKIP
"""
from ..capture.ladder import ladder_text
from ..capture.ladder import ladder_svg

__all__ = ["ladder_text", "ladder_svg"]
