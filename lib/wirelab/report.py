"""Run a notebook headlessly and write it as an HTML report (what ``make demo`` does).

papermill injects the parameters after the cell tagged ``parameters``;
nbconvert turns the executed notebook, figures included, into one HTML file.
"""
from __future__ import annotations

from pathlib import Path

from .errors import UsageError, WirelabError

__all__ = ["execute_notebook", "write_report"]


def execute_notebook(notebook: str | Path, output: str | Path, *, quick: bool = True,
                     parameters: dict | None = None, timeout_s: float = 1200,
                     cwd: str | Path | None = None) -> Path:
    """Execute ``notebook`` with ``QUICK`` (and other parameters) into ``output``."""
    import papermill  # heavy: imported only when a notebook is run

    notebook, output = Path(notebook), Path(output)
    if not notebook.is_file():
        raise UsageError(f"no notebook at {notebook}", "give a path like notebooks/01-overhead-and-goodput.ipynb")
    output.parent.mkdir(parents=True, exist_ok=True)
    params = {"QUICK": quick, **(parameters or {})}
    try:
        papermill.execute_notebook(str(notebook), str(output), parameters=params,
                                   cwd=str(cwd or notebook.parent), kernel_name="python3",
                                   execution_timeout=timeout_s, progress_bar=False,
                                   request_save_on_cell_execute=False)
    except papermill.PapermillExecutionError as err:
        raise WirelabError(f"{notebook.name} failed in cell {err.exec_count}: {err.ename}: {err.evalue}",
                           f"open {output} to see the failing cell") from None
    return output


def write_report(notebook: str | Path, out_dir: str | Path = "reports", *, quick: bool = True,
                 parameters: dict | None = None) -> Path:
    """Execute ``notebook`` and write ``<out_dir>/<name>.html``; returns the HTML path."""
    import nbformat
    from nbconvert import HTMLExporter

    notebook, out_dir = Path(notebook), Path(out_dir)
    executed = execute_notebook(notebook, out_dir / notebook.name, quick=quick, parameters=parameters)
    html, _ = HTMLExporter().from_notebook_node(nbformat.read(str(executed), as_version=4))
    target = out_dir / (notebook.stem + ".html")
    target.write_text(html, encoding="utf-8")
    return target
