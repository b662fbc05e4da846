"""The source documents' published tables (``data/reference/*.csv``) as DataFrames.

These are the papers' numbers, never wirelab's measurements: label them so.
"""
from __future__ import annotations

from pathlib import Path

from .errors import UsageError

__all__ = ["reference_dir", "load_reference", "REFERENCE_TABLES"]

REFERENCE_TABLES = ("seed000_offered_load", "seed000_buffers", "seed000_buffers_1s", "seed000_early_trials",
                    "seed000_findings",
                    "seed001_transfers", "seed002_goodput", "seed002_nttcp_runs", "seed003_delay", "seed004_iperf")


def reference_dir() -> Path:
    """``data/reference`` of the project checkout this package runs from."""
    return Path(__file__).resolve().parents[2] / "data" / "reference"


def load_reference(name: str):
    """One reference table by name, e.g. ``load_reference("seed002_goodput")``."""
    # start-up: pandas only when load_reference() runs
    import pandas as pd

    name = name.removesuffix(".csv")
    if name not in REFERENCE_TABLES:
        raise UsageError(f"no reference table {name!r}", f"choose one of {', '.join(REFERENCE_TABLES)}")
    path = reference_dir() / f"{name}.csv"
    if not path.is_file():
        raise UsageError(f"reference table {path} is missing", "run from a full wirelab checkout")
    return pd.read_csv(path)
