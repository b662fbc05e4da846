"""The text ladder of a PPCB exchange, for the capture explorer: ``wirelab.capture.ladder``'s drawing, which
lives in the capture layer because the grader, below ``viz``, draws it for every failed test too.

    >>> from wirelab.capture import exchange                                    # doctest: +SKIP
    >>> print("\\n".join(ladder_text(exchange("run.pcapng", port=5000))))       # doctest: +SKIP
"""
from ..capture.ladder import ladder_text

__all__ = ["ladder_text"]
