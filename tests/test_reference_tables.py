"""The published tables of data/reference: each one registered, described where it came from,
and read by a lab that a notebook sets beside a measurement."""
import json
from pathlib import Path

from wirelab.reference import REFERENCE_TABLES, load_reference, reference_dir

ROOT = Path(__file__).resolve().parents[1]


def test_every_table_is_registered_described_and_read_by_a_lab():
    files = {p.stem for p in reference_dir().glob("*.csv")}
    assert files == set(REFERENCE_TABLES)
    readme = (reference_dir() / "README.md").read_text()
    labs = "\n".join(p.read_text() for p in (ROOT / "lib" / "wirelab" / "labs").glob("*.py"))
    notebooks = "\n".join("".join(c["source"]) for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")
                          for c in json.loads(p.read_text())["cells"])
    for name in REFERENCE_TABLES:
        assert f"{name}.csv" in readme, f"{name}: say in data/reference/README.md where it comes from"
        assert name in labs or name in notebooks, f"{name}: no lab or notebook reads it"
        table = load_reference(name)
        assert len(table) and not table.columns.str.startswith("Unnamed").any(), name


def test_no_docstring_or_readme_cites_a_file_outside_the_project():
    outside = "shared" + "/"          # the team's folder beside the project: users do not have it
    cited = []
    for folder in ("lib", "data/reference", "notebooks", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".md", ".ipynb", ".lua") and outside in path.read_text(errors="replace"):
                cited.append(str(path.relative_to(ROOT)))
    if outside in (ROOT / "README.md").read_text():
        cited.append("README.md")
    assert not cited, cited
