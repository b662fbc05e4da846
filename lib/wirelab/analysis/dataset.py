"""Every results folder as one dataset: many sweeps, many students, one DuckDB query.

A sweep saves ``results.parquet`` and ``meta.json`` in its folder (``store``).
``results_dataset(roots)`` finds every such folder under the roots (a course:
one root per student, or one root holding them all) and gives a DuckDB
connection with three views:

    runs       every run of every folder (columns unioned by name; a column a
               folder lacks is NULL), plus ``root`` and ``folder`` (the results
               folder, relative to its root: its first part is often the student)
    sessions   one row per session of each folder (``meta.json``): when, on
               which host and kernel, congestion control, timestamps, wirelab
               version and git revision, engine, backend; the experiment's name
    runs_meta  runs joined with the session that made them (on root, folder, session)

    ds = results_dataset("class/")           # or ["alice/data/runs", "bob/data/runs"]
    ds.sql("SELECT split_part(folder, '/', 1) AS student, proto, avg(goodput_bps) "
           "FROM runs_meta WHERE status = 'ok' GROUP BY ALL")

A folder whose files cannot be read is left out and named in ``ds.problems``.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd

from ..errors import ExperimentError
from ..experiment.prediction import PRED_COLUMNS
from ..experiment.stats import parameter_columns

__all__ = ["results_dataset", "ResultsDataset", "SESSION_COLUMNS"]

RESULTS = "results.parquet"
META = "meta.json"
#: what each session row keeps from meta.json (name → how to get it from the session dict)
SESSION_COLUMNS = {
    "collected_at": lambda s: s.get("collected_at"),
    "host": lambda s: s.get("host"),
    "kernel": lambda s: s.get("kernel"),
    "cpus": lambda s: s.get("cpus"),
    "python": lambda s: s.get("python"),
    "wirelab_version": lambda s: s.get("wirelab_version"),
    "git_revision": lambda s: s.get("git_revision"),
    "root_user": lambda s: s.get("root"),
    "session_engine": lambda s: s.get("engine"),
    "default_cc": lambda s: (s.get("sysctls") or {}).get("net.ipv4.tcp_congestion_control"),
    "tcp_timestamps": lambda s: (s.get("sysctls") or {}).get("net.ipv4.tcp_timestamps"),
    "rmem_max": lambda s: (s.get("sysctls") or {}).get("net.core.rmem_max"),
    "wmem_max": lambda s: (s.get("sysctls") or {}).get("net.core.wmem_max"),
}

_TEXT = {"root", "folder", "experiment", "run_id", "setting_id", "status", "error", "engine", "backend",
         "workload", "proto", "cc", "direction", "pred_binding", "pred_wire", "pred_note", "pred_cc",
         "pred_steady_binding", "pred_transfer_binding", "pred_carriage"}
#: The columns of ``runs`` before any run is saved, so that a query written for real results
#: (a notebook's, a course's) runs on an empty folder too and gives no rows instead of an error.
_EMPTY_RUN = {name: ("VARCHAR" if name in _TEXT else "BIGINT" if name in ("session", "rep") else "DOUBLE")
              for name in ["root", "folder", "experiment", "run_id", "setting_id", "rep", "session", "status",
                           "error", *parameter_columns(), "goodput_bps", "sender_goodput_bps", "elapsed_s",
                           *PRED_COLUMNS]}


def _folders(roots) -> list[tuple[Path, Path]]:
    """(root, results folder) for every results.parquet under the roots, in a stable order."""
    out = []
    for root in roots:
        root = Path(root)
        if not root.exists():
            raise ExperimentError(f"no folder {root}", "give a folder that holds results (e.g. data/runs)")
        found = [root / RESULTS] if (root / RESULTS).is_file() else sorted(root.rglob(RESULTS))
        out += [(root, f.parent) for f in found]
    return out


def _sessions(root: Path, folder: Path) -> list[dict]:
    meta = json.loads((folder / META).read_text()) if (folder / META).is_file() else {}
    experiment = meta.get("experiment") or {}
    rows = []
    for i, s in enumerate(meta.get("sessions") or []):
        row = {"root": str(root), "folder": _relative(root, folder), "session": int(s.get("session", i)),
               "experiment_name": (s.get("experiment") or experiment).get("name"),
               "backend": (s.get("experiment") or experiment).get("backend")}
        row.update({name: get(s) for name, get in SESSION_COLUMNS.items()})
        rows.append(row)
    return rows


def _relative(root: Path, folder: Path) -> str:
    rel = folder.relative_to(root).as_posix()
    return rel if rel != "." else folder.name


def results_dataset(roots, *, con=None) -> "ResultsDataset":
    """The results folders under ``roots`` (a folder or a list of them) as one dataset."""
    return ResultsDataset([roots] if isinstance(roots, (str, Path)) else list(roots), con=con)


class ResultsDataset:
    """DuckDB views ``runs``, ``sessions`` and ``runs_meta`` over many results folders."""

    def __init__(self, roots: list, *, con=None):
        # start-up: duckdb, pyarrow only when one is made
        import duckdb
        import pyarrow.parquet as pq
        self.roots = [Path(r) for r in roots]
        self.problems: list[tuple[str, str]] = []
        files, sessions = [], []
        for root, folder in _folders(self.roots):
            try:
                pq.read_metadata(folder / RESULTS)
                rows = _sessions(root, folder)
            except (OSError, ValueError) as err:      # a damaged file: leave the folder out, say so
                self.problems.append((str(folder), f"{type(err).__name__}: {err}"))
                continue
            files.append({"file": str(folder / RESULTS), "root": str(root), "folder": _relative(root, folder)})
            sessions += rows
        self.folders = [f["folder"] for f in files]
        self._tmp = tempfile.TemporaryDirectory(prefix="wirelab-duckdb-")
        self.con = con if con is not None else duckdb.connect()
        self.con.execute(f"SET temp_directory = '{self._tmp.name}'")
        self.con.execute("SET enable_progress_bar = false")
        self.con.register("_files", pd.DataFrame(files, columns=["file", "root", "folder"]))
        self.con.register("_sessions", pd.DataFrame(sessions, columns=["root", "folder", "session",
                                                                       "experiment_name", "backend",
                                                                       *SESSION_COLUMNS]))
        self.con.execute("CREATE OR REPLACE VIEW sessions AS SELECT * FROM _sessions")
        if files:
            paths = ", ".join("'" + f["file"].replace("'", "''") + "'" for f in files)
            self.con.execute(f"""CREATE OR REPLACE VIEW runs AS
                SELECT f.root, f.folder, r.* EXCLUDE (filename)
                FROM read_parquet([{paths}], union_by_name = true, filename = true) r
                JOIN _files f ON r.filename = f.file""")
        else:                # no results yet: the columns every run has, and no rows
            columns = ", ".join(f'NULL::{kind} AS "{name}"' for name, kind in _EMPTY_RUN.items())
            self.con.execute(f"CREATE OR REPLACE VIEW runs AS SELECT {columns} WHERE false")
        self.con.execute("""CREATE OR REPLACE VIEW runs_meta AS
            SELECT r.*, s.* EXCLUDE (root, folder, session)
            FROM runs r LEFT JOIN sessions s
              ON r.root = s.root AND r.folder = s.folder AND r.session = s.session""")

    def __repr__(self) -> str:
        runs = self.sql("SELECT count(*) AS n FROM runs")["n"][0]
        out = f"ResultsDataset({len(self.folders)} folders, {runs} runs)"
        return out + "".join(f"\n  left out {folder}: {why}" for folder, why in self.problems)

    def sql(self, query: str, params=None) -> pd.DataFrame:
        """Run a query over ``runs``, ``sessions``, ``runs_meta``; the result as a DataFrame."""
        return self.con.execute(query, params or []).df()

    def frame(self) -> pd.DataFrame:
        """Every run with its session's metadata, as one DataFrame (when it fits in memory)."""
        return self.sql("SELECT * FROM runs_meta ORDER BY root, folder, session, run_id")

    def summary(self, by=("experiment", "proto", "rate_bps", "delay_s", "loss"),
                value: str = "goodput_bps") -> pd.DataFrame:
        """Per group of ``by`` over the runs that succeeded: folders, runs, mean, sd, min and
        max of ``value``, and the mean prediction beside it (``pred_`` + value)."""
        cols = set(self.sql("SELECT * FROM runs_meta LIMIT 0").columns)
        missing = [c for c in (*by, value) if c not in cols]
        if missing:
            raise ExperimentError(f"no column {missing[0]!r} in these results",
                                  f"choose among: {', '.join(sorted(cols))}")
        keys = ", ".join(f'"{c}"' for c in by)
        pred = f', avg("pred_{value}") AS "pred_{value}"' if f"pred_{value}" in cols else ""
        return self.sql(f"""
            SELECT {keys}, count(DISTINCT root || '/' || folder) AS folders, count(*) AS runs,
                   avg("{value}") AS mean, stddev_samp("{value}") AS sd, min("{value}") AS min,
                   max("{value}") AS max {pred}
            FROM runs_meta WHERE status = 'ok' GROUP BY {keys} ORDER BY {keys}""")

    def close(self) -> None:
        self.con.close()
        self._tmp.cleanup()

    def __enter__(self) -> "ResultsDataset":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
