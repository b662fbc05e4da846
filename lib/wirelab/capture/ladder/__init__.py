"""The ladder of a PPCB exchange (client and server as two lines, each packet an arrow): the drawing's
steps and its text (``drawing``), and its SVG picture (``svg``). The grader draws a failed test's exchange
with it; ``wirelab.viz`` re-exports it for the notebooks and the capture explorer."""
from .drawing import ladder, ladder_text
from .svg import ladder_svg

__all__ = ["ladder", "ladder_text", "ladder_svg"]
