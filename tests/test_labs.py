"""The labs: one module per source document, its sweeps as data; notebooks hold no deadline."""
import ast
import json
import re
from pathlib import Path

import pytest

from wirelab.errors import UsageError
from wirelab.labs import Lab, Sweep, bufferbloat, doc000, doc001, doc002, doc003, doc004

ROOT = Path(__file__).resolve().parents[1]
LABS = {"doc000": doc000, "doc001": doc001, "doc002": doc002, "doc003": doc003, "doc004": doc004}
#: every lab's sweeps, by the function the notebooks call
SWEEPS = [doc000.sweeps, doc001.sweeps, doc001.grid_sweeps, doc002.sweeps, doc003.sweeps, doc004.sweeps,
          doc004.link_sweeps, bufferbloat.sweeps]


def _sweeps(lab) -> dict:
    """A lab's sweeps by name, nested groups (task/side → Sweep) flattened."""
    out = {}
    for name, value in lab.items():
        out.update({f"{name}/{k}": v for k, v in value.items()} if isinstance(value, dict) else {name: value})
    return out


def test_every_document_has_its_lab_with_its_table_and_exercises():
    for name, module in LABS.items():
        assert module.reference().shape[0] > 0, name
        assert module.EXERCISES and all(e.expected() == e.expected() for e in module.EXERCISES.values()), name
        assert module.__doc__.startswith(f"Document {name[3:]}"), name


@pytest.mark.parametrize("make", SWEEPS, ids=lambda f: f"{f.__module__.rsplit('.', 1)[1]}.{f.__name__}")
def test_sweeps_are_data_quick_mode_is_smaller_and_what_you_give_wins(make):
    full, quick = make(), make(quick=True)
    assert isinstance(full, Lab) and all(isinstance(s, Sweep) for s in _sweeps(full).values())
    runs = {name: len(s.experiment.runs()) for name, s in _sweeps(full).items()}
    fewer = {name: len(s.experiment.runs()) for name, s in _sweeps(quick).items()}
    assert sum(fewer.values()) <= sum(runs.values())
    # no lab sets a deadline: every run's follows the plan's prediction
    assert all(s.experiment.timeout is None for s in _sweeps(full).values())
    key = next(iter(full.values))
    given = make(quick=True, **{key: full.values[key]})
    assert given.values[key] == full.values[key]
    with pytest.raises(UsageError, match="no value"):
        make(colour="red")


def test_no_notebook_computes_a_deadline_or_a_timeout():
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        code = "\n".join(line.split("#", 1)[0] for line in code.splitlines())      # comments aside
        # a run's timeout (Experiment's, run's, iperf3_run's) or deadline; not the model's timeout_s
        # (stop-and-wait's MAX_WAIT, a protocol constant) nor a socket's settimeout in a hands-on demo
        assert not re.search(r"\btimeout\s*=|deadline", code), path.name


def test_labs_import_the_runner_and_below_never_viz_grade_or_each_other():
    for path in sorted((ROOT / "lib" / "wirelab" / "labs").glob("*.py")):
        tree = ast.parse(path.read_text())
        names = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level} | \
                {f".{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level and not n.module
                 for a in n.names}
        assert not {m for m in names if m.split(".")[0] in ("viz", "grade", "cli")}, path.name
        if path.stem.startswith("doc"):
            assert not {m for m in names if m.startswith("doc")}, path.name


def test_the_readme_shows_where_a_lab_goes():
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1]
    assert "labs/" in layout and "experiment/" in layout
    import wirelab.labs
    assert "How to add a lab" in wirelab.labs.__doc__


def test_every_notebook_checks_at_least_one_exercise_and_each_exists():
    from wirelab.exercises import EXERCISES, seeded_exercises
    seeded = set(seeded_exercises("anyone"))
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        names = re.findall(r"""\bcheck\(\s*["']([A-Za-z0-9_]+)["']""", code)
        assert names, f"{path.name}: no self-checking exercise (check(...))"
        assert set(names) <= set(EXERCISES) | seeded, f"{path.name}: {set(names) - set(EXERCISES) - seeded}"
