"""Which rows of data/reference/ a set of executed notebooks shows (tests/test_notebooks.py).

A reference row *appears* in a notebook when one table it displayed (the HTML of a
``display_data`` or ``execute_result`` output: a DataFrame or a Styler, read back with
``pandas.read_html``) is labelled as showing published numbers (a column named for the
document, "doc"/"document"/"paper", or one of the reference table's own result columns)
and has one row holding

- each of the row's identifying texts (``IDS``: protocol, scenario, task, ...), as a cell
  equal to it, case aside;
- each of its settings (``SETTINGS``: packet size, offered load, buffer sizes, ...) as it is,
  to the cell's shown precision;
- each of its published results (every other number column that is not empty) in the
  notebook's unit: the cell's number is the published one times a power of ten (873 MB of
  1000 shown as 87.3 %, 21.9e6 bit/s as 21.9 Mbit/s or "21,900,000") to the cell's shown
  precision (0.00171045 rounded by ``.round(3)`` is 0.002), showing at least two significant
  digits where the number has two (14 is not shown by a cell "1");

each number by a cell of its own (a text cell such as "20 ms ± 5 ms" gives each of its
numbers; a RangeIndex column is not a cell). Free text and constants of the setting that
no table restates (``SKIP``) are not sought; a row printed for two protocols (figures
27-28) appears when each protocol's half does (``SPLIT``).
"""
from __future__ import annotations

import functools
import io
import re
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "data" / "reference"

#: per table: the columns that name a row (matched as text); the rest that hold numbers are matched as numbers
IDS = {
    "seed000_offered_load": ["protocol"],
    "seed000_buffers": ["protocol"],
    "seed000_buffers_1s": [],
    "seed000_early_trials": ["trial"],
    "seed000_findings": ["finding"],
    "seed001_transfers": ["experiment", "protocol"],
    "seed002_goodput": ["scenario", "protocol", "direction"],
    "seed002_nttcp_runs": ["scenario", "test", "line"],
    "seed003_delay": [],
    "seed004_iperf": ["task"],          # its side "server_or_client" is shown as "both"
}
#: per table: the numbers that say which setting a row is (shown as they are: 1400 B, 0.1 MB/s); the
#: rest are the published results, shown in the notebook's unit (a power of ten apart)
SETTINGS = {
    "seed000_offered_load": ["packet_bytes", "offered_MBps"],
    "seed000_buffers": ["packet_bytes", "sndbuf_bytes", "rcvbuf_bytes"],
    "seed000_buffers_1s": ["packet_bytes", "sndbuf_bytes", "rcvbuf_bytes"],
    "seed000_early_trials": ["figure", "packet_bytes", "offered_bytes"],
    "seed000_findings": [],
    "seed001_transfers": ["rate_kbps", "loss_pct", "delay_ms", "packet_bytes", "file_bytes"],
    "seed002_goodput": ["payload_bytes", "capacity_mbps"],
    "seed002_nttcp_runs": ["run"],
    "seed003_delay": ["emulated_delay_ms", "jitter_ms"],
    "seed004_iperf": ["value"],
}
#: columns not matched: free text, or a constant of the setting no table restates
SKIP = {"note", "where", "unit", "side", "parameter", "method", "error_bar", "command", "sent_MB", "table", "messages",
        "message_bytes"}
#: a row of two protocols: each protocol's half, with the columns it shares
SPLIT = {"seed000_buffers_1s": {p: ["packet_bytes", "sndbuf_bytes", "rcvbuf_bytes", f"received_bytes_{p}",
                                   f"send_time_ms_{p}"] for p in ("tcp", "udp")}}
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?$")


def reference_rows() -> list[tuple[str, int, list[str], list[tuple[float, bool]]]]:
    """(table, row number in its CSV counting the header as row 1, texts, numbers) to find, one per
    part of a row (``SPLIT``)."""
    wanted = []
    for path in sorted(REFERENCE.glob("*.csv")):
        name = path.stem
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        for i, row in table.iterrows():
            parts = {"": [c for c in table.columns if c not in SKIP]} if name not in SPLIT else SPLIT[name]
            for label, columns in parts.items():
                texts = [row[c].lower() for c in IDS[name] if row[c]] + ([label] if label else [])
                numbers = [(float(row[c]), c not in SETTINGS[name]) for c in columns
                           if c not in IDS[name] and _NUMBER.match(row[c])]
                texts += [row[c].lower() for c in columns if c not in IDS[name] and row[c] and not _NUMBER.match(row[c])]
                wanted.append((name, i + 2, texts, numbers))
    return wanted


def shown_tables(notebook: dict) -> list[tuple[str, list[list[str]]]]:
    """Every HTML table a notebook's outputs display: its header (lower case) and its rows of cell texts
    (the index too)."""
    tables = []
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html")
            if not html:
                continue
            html = "".join(html) if isinstance(html, list) else html
            if "<table" not in html:
                continue
            try:
                frames = pd.read_html(io.StringIO(html), flavor="lxml", keep_default_na=False)
            except ValueError:          # a table with no rows
                continue
            for frame in frames:
                frame = frame.astype(str)
                if len(frame.columns) and frame.iloc[:, 0].tolist() == [str(i) for i in range(len(frame))]:
                    frame = frame.iloc[:, 1:]           # a RangeIndex: row numbers, not the document's
                header = " ".join(str(c) for c in frame.columns.to_flat_index()).lower()
                tables.append((header, [[str(c).strip() for c in row] for row in frame.itertuples(index=False)]))
    return tables


_TOKEN = re.compile(r"(?<![\w.])[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?(?![\w.])")


def _numbers_in(text: str) -> list[tuple[float, float, int]]:
    """The numbers a cell shows: the cell's number, or each number of a text such as "20 ms ± 5 ms"."""
    whole = _as_number(text)
    if whole is not None:
        return [whole]
    return [n for n in (_as_number(t) for t in _TOKEN.findall(text.replace(",", ""))) if n is not None]


def _as_number(text: str) -> tuple[float, float, int] | None:
    """The number a cell shows, half its last shown digit (its precision) and how many significant
    digits it shows, or None."""
    text = text.replace(",", "").replace("\u2212", "-").strip()
    if not _NUMBER.match(text):
        return None
    scale = 0.01 if text.endswith("%") else 1.0
    text = text.rstrip("%")
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    half = 0.5 * 10.0 ** (-decimals) * 10.0 ** int(exponent or 0) * scale
    digits = len(mantissa.lstrip("+-").replace(".", "").lstrip("0"))
    return float(text) * scale, half, digits


def _significant(value: float) -> int:
    return len(f"{abs(value):.6g}".partition("e")[0].replace(".", "").strip("0"))


def _shows(number: tuple[float, bool], cell: tuple[float, float, int]) -> bool:
    """Whether a cell shows a number: a setting as it is; a result in some unit, to at least two of its
    significant digits (fewer only if it has fewer: 14 is not shown by a cell "1")."""
    (value, scaled), (shown, half, digits) = number, cell
    if scaled and digits < min(2, _significant(value)):
        return False
    for k in range(-12, 13) if scaled else (0,):
        target = value * 10.0 ** k
        if abs(shown - target) <= half + 1e-9 * abs(target) and (shown != 0 or value == 0):
            return True
    return False


@functools.lru_cache(maxsize=None)
def _result_columns(table_name: str) -> tuple[str, ...]:
    columns = pd.read_csv(REFERENCE / f"{table_name}.csv", nrows=0).columns
    return tuple(c.lower() for c in columns if c not in SKIP and c not in IDS[table_name]
                 and c not in SETTINGS[table_name])


def labelled(header: str, table_name: str) -> bool:
    """Whether a table says it shows published numbers: a column named for the document ("doc",
    "document", "paper") or one of the reference table's own columns of results."""
    if any(word in header for word in ("doc", "paper")):
        return True
    return any(c in header for c in _result_columns(table_name))


def row_in(texts: list[str], numbers: list[tuple[float, bool]], table: list[list[str]]) -> bool:
    for row in table:
        lowered = [c.lower() for c in row]
        if not all(t in lowered for t in texts):
            continue
        cells = [n for c in row for n in _numbers_in(c)]
        if _each_its_own_cell(numbers, cells):
            return True
    return False


def _each_its_own_cell(numbers: list[tuple[float, bool]], cells: list[tuple[float, float, int]]) -> bool:
    """Whether every number is shown by a cell of its own (a matching: two zeros need two cells)."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set) -> bool:
        for j, cell in enumerate(cells):
            if j not in seen and _shows(numbers[i], cell):
                seen.add(j)
                if j not in owner or place(owner[j], seen):
                    owner[j] = i
                    return True
        return False
    return all(place(i, set()) for i in range(len(numbers)))


def coverage(notebooks: dict[str, dict]) -> tuple[dict[str, set], list[tuple[str, int]]]:
    """Which (table, row) each notebook shows, and the (table, row)s none shows."""
    tables = {name: shown_tables(nb) for name, nb in notebooks.items()}
    shown: dict[str, set] = {name: set() for name in notebooks}
    missing = []
    wanted = reference_rows()
    for table_name, row, texts, numbers in wanted:
        found = [name for name, ts in tables.items()
                 if any(labelled(header, table_name) and row_in(texts, numbers, rows) for header, rows in ts)]
        for name in found:
            shown[name].add((table_name, row))
        if not found:
            missing.append((table_name, row))
    missing = sorted(set(missing))            # a split row is missing when one of its parts is
    for name in shown:
        shown[name] = {r for r in shown[name] if r not in missing}
    return shown, missing
