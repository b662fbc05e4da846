"""One progress bar for every loop of runs: a sweep's runs (``runner``), a class's tests or
submissions (``grade.classroom``).

A widget in Jupyter, a text bar on a terminal (on stderr, beside the messages);
with ``enabled=False`` a bar that draws nothing, so a loop never asks.
"""
from __future__ import annotations

import sys

__all__ = ["progress_bar"]


def progress_bar(total: int, *, desc: str | None = None, unit: str = "run", enabled: bool = True):
    """A tqdm bar of ``total`` ``unit``s: ``.update()``, ``.set_description()``, ``.close()``."""
    from tqdm.auto import tqdm       # deferred: keeps start-up fast (tqdm.auto looks for Jupyter)
    return tqdm(total=total, desc=desc, unit=unit, leave=True, disable=not enabled, file=sys.stderr)
