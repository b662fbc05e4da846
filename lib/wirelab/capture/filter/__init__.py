"""Wireshark's display filters on a capture's frames (numpy) and on its dataset (DuckDB SQL).

``compile_filter(text)`` (``display``) reads a filter once: ``syntax`` (lexer and
parser → a tree), ``fields`` (Wireshark's field names → the reader's columns: the one
table), ``check`` (fields known, literals read as their field's kind), then ``frames``
(one bool per frame of ``read_capture``'s DataFrame) or ``sql`` (a WHERE clause over a
dataset's ``packets``). ``FilterError`` quotes the filter with a caret under the token
it cannot read.
"""
from ..._exports import lazy

_EXPORTS = {"compile_filter": "display", "DisplayFilter": "display", "FilterError": "syntax",
            "FIELDS": "fields"}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
