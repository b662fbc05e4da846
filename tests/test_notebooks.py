"""Every lab runs headlessly in quick mode (papermill), as CI and `make demo` run it."""
import json
from pathlib import Path

import pytest

from reference_coverage import coverage, reference_rows
from wirelab.report import execute_notebook

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/NN-topic.ipynb expected"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_clean_and_parameterised(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "strip outputs"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1 and "QUICK" in "".join(tagged[0]["source"]), "one parameters cell with QUICK"
    # quick mode's values in a cell of their own, next: `wirelab report -p` sets its parameters after
    # it (so they win in either mode), before anything uses them
    after = code[code.index(tagged[0]) + 1]
    quick = "".join(after["source"])
    assert "quick" in after.get("metadata", {}).get("tags", []) and quick.startswith("if QUICK:"), \
        "the cell after the parameters cell is tagged quick and starts with `if QUICK:`"
    assert all(line.startswith((" ", "#")) or not line.strip() for line in quick.splitlines()[1:]), \
        "the quick cell holds only the `if QUICK:` block"


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(path, tmp_path, quick_outputs):
    out = _run_and_record(path, tmp_path, quick_outputs)
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    images = [o for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "a lab shows at least one figure"


@pytest.mark.notebook
def test_every_reference_row_appears_in_some_notebook_in_quick_mode(quick_outputs, tmp_path):
    """Every row of every table in data/reference/ is shown by some lab in quick mode, beside what the
    kit measured or predicted (tests/reference_coverage.py says what "shown" means). The labs this
    session ran (above, or in JupyterLab) are read, not run again; one not run yet is run here."""
    executed = quick_outputs.recorded()
    for path in NOTEBOOKS:
        if path.name not in executed:
            try:
                _run_and_record(path, tmp_path, quick_outputs)
            except Exception:               # its own test reports the failure; what it showed still counts
                pass
    executed = quick_outputs.recorded()
    shown, missing = coverage(executed)
    rows = {(table, row) for table, row, *_ in reference_rows()}
    print({name: len(found) for name, found in shown.items()})          # rows per lab, for the log
    assert not missing, (f"{len(missing)} of {len(rows)} reference rows appear in no notebook's quick-mode "
                         "output (file, row of the CSV counting its header as row 1):\n"
                         + "\n".join(f"data/reference/{table}.csv, row {row}" for table, row in missing))


def _run_and_record(path, tmp_path, quick_outputs):
    """Run a lab in quick mode and record its outputs for the reference coverage, even when a cell failed."""
    out = tmp_path / path.name
    try:
        return execute_notebook(path, out, quick=True)
    finally:
        if out.is_file():
            quick_outputs.record(path.name, json.loads(out.read_text()))
