"""Run a notebook headlessly and write it as an HTML report (what ``make demo`` does).

papermill injects ``QUICK`` after the cell tagged ``parameters``; the parameters a
caller gives (``wirelab report -p SIZE 100KB``) are set after the cell tagged
``quick``, the notebook's quick-mode values, so they win in either mode;
nbconvert turns the executed notebook, figures included, into one HTML file.

Widgets: nbconvert would embed a script that fetches the widget renderer from
a CDN, so an offline report shows empty boxes. Instead ``static_widgets``
replaces each widget with its last state as plain output, read from the
widget state the kernel client saved: control values as a small table, the
contents of ``Output`` widgets (the panel's table and plot) as they were.
"""
from __future__ import annotations

import copy
import html as escape
import json
from pathlib import Path

from .errors import UsageError, WirelabError

__all__ = ["execute_notebook", "write_report", "static_widgets"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def execute_notebook(notebook: str | Path, output: str | Path, *, quick: bool = True,
                     parameters: dict | None = None, timeout_s: float = 1200,
                     cwd: str | Path | None = None) -> Path:
    """Execute ``notebook`` with ``QUICK`` into ``output``; ``parameters`` (names of its
    parameters cell) are set after its quick-mode cell, so they win over quick mode's values."""
    import papermill  # heavy: imported only when a notebook is run
    from .report_engine import register_engine      # (papermill's engine: heavy, as above)

    notebook, output = Path(notebook), Path(output)
    if not notebook.is_file():
        raise UsageError(f"no notebook at {notebook}", "give a path like notebooks/01-overhead-and-goodput.ipynb")
    nb = _parameterized(notebook, quick, dict(parameters or {}))
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        papermill.execute_notebook(nb, str(output), cwd=str(cwd or notebook.parent), kernel_name="python3",
                                   execution_timeout=timeout_s, progress_bar=False,
                                   request_save_on_cell_execute=False, engine_name=register_engine())
    except papermill.PapermillExecutionError as err:
        raise WirelabError(f"{notebook.name} failed in cell {err.exec_count}: {err.ename}: {err.evalue}",
                           f"open {output} to see the failing cell") from None
    finally:
        _record_input(output, notebook)
    return output


def _parameterized(notebook: Path, quick: bool, parameters: dict):
    """The notebook with ``QUICK`` after its parameters cell (as papermill injects it) and
    ``parameters`` in a cell of their own after the cell tagged ``quick`` (else after ``QUICK``)."""
    # start-up: nbformat, papermill only when _parameterized() runs
    import nbformat
    from papermill import inspect_notebook
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook
    from papermill.translators import translate_parameters

    known = inspect_notebook(str(notebook))
    unknown = sorted(set(parameters) - set(known) | ({"QUICK"} & set(parameters)))
    if unknown:
        raise UsageError(f"{notebook.name} has no parameter {', '.join(unknown)} to set"
                         + (" (QUICK is the mode: --full runs the whole lab)" if "QUICK" in unknown else ""),
                         f"its parameters cell names {', '.join(k for k in known if k != 'QUICK')}")
    nb = parameterize_notebook(load_notebook_node(str(notebook)), {"QUICK": quick}, kernel_name="python3",
                               language="python")
    if parameters:
        tags = [cell.metadata.get("tags", []) for cell in nb.cells]
        after = next((i for i, t in enumerate(tags) if "quick" in t),
                     next(i for i, t in enumerate(tags) if "injected-parameters" in t))
        given = nbformat.v4.new_code_cell(translate_parameters(
            "python3", "python", parameters, "Parameters given to wirelab report (after quick mode: they win)"))
        given.metadata["tags"] = ["injected-overrides"]
        nb.cells.insert(after + 1, given)
    nb.metadata.papermill["parameters"] = {"QUICK": quick, **parameters}
    return nb


def _record_input(output: Path, notebook: Path) -> None:
    """papermill records the notebook it was given, here an object: record the file instead."""

    if output.is_file():
        executed = json.loads(output.read_text(encoding="utf-8"))
        executed.get("metadata", {}).get("papermill", {})["input_path"] = str(notebook)
        output.write_text(json.dumps(executed, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write_report(notebook: str | Path, out_dir: str | Path = "reports", *, quick: bool = True,
                 parameters: dict | None = None) -> Path:
    """Execute ``notebook`` and write ``<out_dir>/<name>.html``; returns the HTML path."""
    # start-up: nbformat, nbconvert only when write_report() runs
    import nbformat
    from nbconvert import HTMLExporter

    notebook, out_dir = Path(notebook), Path(out_dir)
    executed = execute_notebook(notebook, out_dir / notebook.name, quick=quick, parameters=parameters)
    html, _ = HTMLExporter().from_notebook_node(static_widgets(nbformat.read(str(executed), as_version=4)))
    target = out_dir / (notebook.stem + ".html")
    target.write_text(html, encoding="utf-8")
    return target


def static_widgets(nb):
    """``nb`` with every widget output replaced by its last state as static outputs
    (and the widget state dropped, so no page fetches a widget renderer)."""

    nb = copy.deepcopy(nb)
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell["outputs"] = _static_outputs(cell.get("outputs", []), state)
    return nb


def _static_outputs(outputs: list, state: dict, depth: int = 0) -> list:
    out = []
    for output in outputs:
        view = output.get("data", {}).get(WIDGET_VIEW)
        if view is None:
            out.append(output)
            continue
        items = _widget_items(view.get("model_id"), state, depth)
        if not items:
            items = [_html("<p><i>(an interactive widget: run the notebook to use it)</i></p>",
                           "(an interactive widget)")]
        out += _join_controls(items)
    return out


def _html(html: str, text: str) -> dict:
    # start-up: nbformat only when _html() runs
    import nbformat
    return nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": text})


def _widget_items(model_id, state: dict, depth: int) -> list:
    """Static outputs (dicts) and control values (tuples) for one widget and its children."""

    model = state.get(model_id or "")
    if model is None or depth > 20:
        return []
    name, values = model.get("model_name", ""), model.get("state", {})
    if name == "OutputModel":
        return _static_outputs(values.get("outputs", []), state, depth + 1)
    if "children" in values:
        return [item for child in values["children"]
                for item in _widget_items(str(child).removeprefix("IPY_MODEL_"), state, depth + 1)]
    if name in ("HTMLModel", "HTMLMathModel", "LabelModel"):
        value = str(values.get("value", ""))
        return [_html(value if name != "LabelModel" else escape.escape(value), value)] if value.strip() else []
    if name in ("FloatProgressModel", "IntProgressModel"):
        value, top = values.get("value", 0), values.get("max", 100)
        return [_html(f'<progress value="{value}" max="{top}"></progress>', f"{value}/{top}")]
    if name == "ButtonModel" or "value" not in values and "index" not in values:
        return []
    labels = values.get("_options_labels")
    if labels is not None and "index" in values:
        index = values["index"]
        shown = [labels[i] for i in index] if isinstance(index, list) else \
            (labels[index] if index is not None else "")
        value = ", ".join(map(str, shown)) if isinstance(shown, list) else shown
    else:
        value = values.get("value")
    return [(str(values.get("description") or name.removesuffix("Model")), str(value))]


def _join_controls(items: list) -> list:
    """Runs of control values become one two-column table."""

    out, run = [], []
    for item in items + [None]:
        if isinstance(item, tuple):
            run.append(item)
            continue
        if run:
            rows = "".join(f"<tr><th style='text-align:left'>{escape.escape(k)}</th>"
                           f"<td style='text-align:left'>{escape.escape(v)}</td></tr>" for k, v in run)
            out.append(_html(f"<table>{rows}</table>", "\n".join(f"{k}: {v}" for k, v in run)))
            run = []
        if item is not None:
            out.append(item)
    return out
