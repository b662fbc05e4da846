"""Results on disk: ``data/<experiment>/``, appended atomically, resumable.

Layout of a results folder::

    results.parquet   every run, one row each (the file to reload)
    results.csv       the same table for spreadsheets and other tools
    meta.json         the format version, the experiment as written + one entry per session
                      (kernel, backend, qdiscs, offloads, sysctls, versions, git)
    runs/<run_id>.json   the full record of each run (nested fields, tool output) and its row
    runs/<run_id>.events.jsonl   what happened while it ran, as it happened (``events``)
    captures/<run_id>.pcapng   when the experiment captures

Every write goes to a temporary file in the same folder and is renamed over
the old one (``os.replace`` is atomic), so an interrupted sweep leaves either
the old table or the new one, never half a file. A lock file keeps two sweeps
from writing one folder at once.

Each run is saved the moment it ends as ``runs/<run_id>.json`` (its row
inside): that folder is the append-only log, one small file a run, and what
makes a run safe. The tables are rewritten when the sweep ends (Ctrl-C
included) and, during a long sweep, at most every ``FLUSH_S`` and never more
often than keeps the rewrites under ``FLUSH_SHARE`` of the time (a rewrite
costs ~0.1 s and grows with the table: after every 1.5 s run it was 7 % of a
sweep). A run whose JSON is newer than the tables (the sweep was killed
between two rewrites) is taken back into the table when the folder is next
read (``load``): nothing measured is lost.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from ..errors import ExperimentError
from ..transfer.measures import ALWAYS_MEASURED
from .._plain import is_numpy_scalar, plain

__all__ = ["ResultStore", "load", "atomic_write", "FORMAT", "folder_format"]

#: Version of the folder's layout, in meta.json's "format". 1: before settings carried a
#: LinkSpec (no "format" key); 2: axes loss_reverse, window, omit, and link_* columns from the
#: link's describe(). Every older folder still loads and resumes (setting ids are unchanged).
FORMAT = 2
#: Rewrite the tables at most this often during a sweep (seconds); always at its end.
FLUSH_S = 30.0
#: ... and only as often as keeps the rewrites under this share of the sweep's time.
FLUSH_SHARE = 0.02
RESULTS = "results.parquet"
CSV = "results.csv"
META = "meta.json"


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if is_numpy_scalar(value):
        return value.item()
    return str(value)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _column(values: list) -> pd.Series:
    """One column with one type, so parquet stores it and reloads it alike."""
    present = [v for v in values if not _missing(v)]
    complete = len(present) == len(values)
    if not present:
        return pd.Series([math.nan] * len(values), dtype="float64")
    if all(isinstance(v, bool) for v in present):
        return pd.Series([None if _missing(v) else v for v in values], dtype="boolean")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.Series([None if _missing(v) else v for v in values],
                         dtype="int64" if complete else "Int64")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.Series([math.nan if _missing(v) else float(v) for v in values], dtype="float64")
    return pd.Series([None if _missing(v) else v if isinstance(v, str) else str(v)
                      for v in values], dtype=object)


def _table(rows: list[dict]) -> pd.DataFrame:
    """Rows (dicts, maybe with different keys) → a typed table, known columns first."""
    names: dict = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    if rows:            # a sweep where every run was skipped still has the measured columns
        names.update(dict.fromkeys(ALWAYS_MEASURED))
    front = [c for c in COLUMN_ORDER if c in names]
    order = front + [c for c in names if c not in front]
    return pd.DataFrame({c: _column([r.get(c) for r in rows]) for c in order})


def _records(frame: pd.DataFrame) -> list[dict]:
    """A table back to plain Python rows (NaN and NA become None)."""
    return [{k: (None if _missing(v) else plain(v))
             for k, v in row.items()} for row in frame.to_dict("records")]


def folder_format(folder: str | Path) -> int:
    """The layout version of a results folder (1 when meta.json predates versions)."""
    try:
        return int(json.loads((Path(folder) / META).read_text()).get("format", 1))
    except (OSError, ValueError):
        return 1


def _orphans(folder: Path, known) -> list[dict]:
    """Rows saved in ``runs/*.json`` but not yet in the tables (a sweep stopped between rewrites)."""
    runs = folder / "runs"
    if not runs.is_dir():
        return []
    table = folder / RESULTS
    since = table.stat().st_mtime - 1.0 if table.is_file() else 0.0
    rows = []
    for path in runs.glob("*.json"):
        if path.stem in known or path.stat().st_mtime < since:
            continue
        try:
            saved = json.loads(path.read_text()).get("rows")
        except (OSError, ValueError):
            continue
        rows += [row for row in saved or [] if isinstance(row, dict) and row.get("run_id") == path.stem]
    return sorted(rows, key=lambda r: str(r.get("started_at")))



def load(path: str | Path) -> pd.DataFrame:
    """Reload a results folder (or its parquet/csv file) into the DataFrame it saved
    (with any run saved after the tables' last rewrite)."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    frame = None
    if (folder / RESULTS).is_file():
        frame = pd.read_parquet(folder / RESULTS)
    elif (folder / CSV).is_file():
        frame = _table(_records(pd.read_csv(folder / CSV)))
    known = set(frame["run_id"]) if frame is not None and "run_id" in frame else set()
    orphans = _orphans(folder, known)
    if orphans:
        frame = _table((_records(frame) if frame is not None else []) + orphans)
    if frame is not None:
        # a sweep where every run was skipped (e.g. needs root) still has the measured columns
        for column in ALWAYS_MEASURED:
            if column not in frame:
                frame[column] = math.nan
        return frame
    raise ExperimentError(f"no results in {folder}", "run the experiment first, or check the path "
                          "(it should contain results.parquet)")


class ResultStore:
    """One results folder. ``append(rows)`` saves at once; ``done()`` says what to skip."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._frame: pd.DataFrame | None = None
        self._rows: list[dict] | None = None
        self._pending: list[dict] = []
        self._flushed_at = time.monotonic()
        self._flush_cost = 0.0             # seconds the last rewrite took
        self.rewrites = 0                  # table rewrites so far (for tests and the bench)
        self._lock = None

    # -- locking ---------------------------------------------------------------
    def __enter__(self) -> "ResultStore":
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.folder / ".lock", "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise ExperimentError(f"another sweep is writing {self.folder}",
                                  "wait for it to finish or use another --out folder") from None
        table = self.folder / RESULTS
        known = set(pd.read_parquet(table, columns=["run_id"])["run_id"]) if table.is_file() else set()
        self._pending = _orphans(self.folder, known)     # runs a killed sweep saved: into the tables
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.flush()
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    # -- reading -----------------------------------------------------------------
    def frame(self) -> pd.DataFrame:
        if self._pending:
            self.flush()
        if self._frame is None:
            self._frame = self._load()
        return self._frame

    def _load(self) -> pd.DataFrame:
        try:
            return load(self.folder)
        except ExperimentError:
            return pd.DataFrame()

    def _tables(self) -> pd.DataFrame:
        """What the tables hold now (without runs still to be added to them)."""
        if (self.folder / RESULTS).is_file():
            return pd.read_parquet(self.folder / RESULTS)
        if (self.folder / CSV).is_file():
            return _table(_records(pd.read_csv(self.folder / CSV)))
        return pd.DataFrame()

    def done(self, statuses=("ok", "failed", "skipped"), *, again: tuple[str, ...] = ()) -> set[tuple[str, int]]:
        """(setting_id, rep) of the runs already recorded with one of ``statuses``, except those
        whose error begins with one of ``again`` (to be made again)."""
        frame = self.frame()
        if frame.empty:
            return set()
        kept = frame[frame["status"].isin(list(statuses))]
        if again and "error" in kept:
            errors = kept["error"].astype(object).fillna("").astype(str)     # all-NaN errors are a float column
            kept = kept[~errors.str.startswith(tuple(again))]
        return {(str(s), int(r)) for s, r in zip(kept["setting_id"], kept["rep"])}

    def meta(self) -> dict:
        try:
            return json.loads((self.folder / META).read_text())
        except FileNotFoundError:
            return {}
        except (OSError, json.JSONDecodeError) as err:
            raise ExperimentError(f"cannot read {self.folder / META}: {err}",
                                  "restore it from git or delete the folder and run again") from None

    # -- writing ----------------------------------------------------------------
    def write_meta(self, meta: dict) -> None:
        text = json.dumps(meta, indent=2, sort_keys=False, default=_json_default)
        atomic_write(self.folder / META, text.encode())

    def start_session(self, experiment: dict, session: dict) -> int:
        """Record the experiment and this session's machine metadata; returns the session number."""
        meta = self.meta()
        if int(meta.get("format", 1)) > FORMAT:
            raise ExperimentError(f"{self.folder} was written by a newer wirelab (format {meta['format']})",
                                  "upgrade wirelab, or use another --out folder")
        meta["format_written"] = sorted(set(meta.get("format_written", [meta.get("format", 1)] if meta else []))
                                        | {FORMAT})
        meta["format"] = FORMAT
        meta["experiment"] = experiment
        sessions = meta.setdefault("sessions", [])
        session = {"session": len(sessions), "experiment": experiment, **session}
        sessions.append(session)
        self.write_meta(meta)
        return session["session"]

    def run_path(self, run_id: str) -> Path:
        return self.folder / "runs" / f"{run_id}.json"

    def write_run(self, run_id: str, record: dict) -> Path:
        path = self.run_path(run_id)
        atomic_write(path, json.dumps(record, indent=1, default=_json_default).encode())
        return path

    def record(self, rows: dict | list[dict], raw: dict) -> Path:
        """Save one finished run now (its JSON, with its row or rows inside: a run of several
        flows has one per stream); the tables follow within ``FLUSH_S`` or when the store closes."""
        rows = [rows] if isinstance(rows, dict) else list(rows)
        self._pending.extend(rows)         # first: a Ctrl-C once the JSON is written still finds them
        try:
            path = self.write_run(rows[0]["run_id"], {**raw, "rows": rows})
        except BaseException:
            del self._pending[-len(rows):]
            raise
        if time.monotonic() - self._flushed_at >= max(FLUSH_S, self._flush_cost / FLUSH_SHARE):
            self.flush()
        return path

    def flush(self) -> None:
        """Rewrite the tables with every run recorded so far."""
        start = time.monotonic()
        if self._pending:
            rows, self._pending = self._pending, []
            self.append(rows)
            self._flush_cost = time.monotonic() - start
        self._flushed_at = time.monotonic()

    def append(self, rows: list[dict]) -> pd.DataFrame:
        """Add rows and rewrite parquet and csv atomically; returns the whole table."""
        if not rows:
            return self.frame()
        if self._rows is None:
            self._rows = _records(self._frame if self._frame is not None else self._tables())
        self._rows.extend(rows)
        table = _table(self._rows)
        atomic_write(self.folder / RESULTS, table.to_parquet(index=False))
        atomic_write(self.folder / CSV, table.to_csv(index=False).encode())
        self.rewrites += 1
        self._frame = None              # read back when asked: exactly what a reload gives
        return self.frame()


#: The first columns of a results table, in this order; the rest follow.
COLUMN_ORDER = ["experiment", "run_id", "setting_id", "rep", "status", "error", "engine",
                "backend", "workload", "proto", "size_bytes", "time_s", "offered_bps",
                "packet_bytes", "echo_count", "rate_bps", "delay_s", "jitter_s", "loss", "loss_reverse",
                "mtu", "queue_packets", "window_bytes", "sndbuf_bytes", "rcvbuf_bytes", "cc", "max_wait_s",
                "max_retransmits", "omit_s", "goodput_bps", "sender_goodput_bps", "pred_goodput_bps",
                "pred_binding"]
