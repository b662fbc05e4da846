"""Plain Python values and rows, asked by type rather than probed with ``hasattr``.

numpy and pandas are looked up only if something already imported them: a numpy
scalar cannot exist before numpy is loaded, so a module without them starts fast.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["is_numpy_scalar", "plain", "is_frame", "field", "is_file_object"]


def _loaded(module: str, name: str):
    """``module.name`` if ``module`` is imported already, else () (``isinstance(x, ())`` is False)."""
    found = sys.modules.get(module)
    return getattr(found, name) if found is not None else ()


def is_numpy_scalar(value) -> bool:
    """A numpy scalar (``np.float64(1.0)``, ``np.int64(3)``, ``np.bool_(True)``)."""
    return isinstance(value, _loaded("numpy", "generic"))


def plain(value):
    """A numpy scalar as the Python number it holds (JSON and parquet want those); anything else as it is."""
    return value.item() if is_numpy_scalar(value) else value


def is_frame(value) -> bool:
    """A pandas DataFrame."""
    return isinstance(value, _loaded("pandas", "DataFrame"))


def field(row, name: str, default=None):
    """``row[name]`` of a mapping or a pandas row (a Series); ``default`` when missing or for any other row."""
    if isinstance(row, (Mapping, _loaded("pandas", "Series"))):
        return row.get(name, default)
    return default


def is_file_object(source) -> bool:
    """A source to ``read()`` from: neither a path (str, ``os.PathLike``) nor bytes already in memory."""
    return not isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview))
