"""Static reports show a widget's last state (controls, its Output's table and plot), offline."""
import base64

import nbformat

from wirelab.report import WIDGET_STATE, WIDGET_VIEW, static_widgets

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-a-real-image").decode()


def model(name, **state):
    return {"model_name": name, "model_module": "@jupyter-widgets/controls", "state": state}


def panel_notebook():
    """A cell showing a panel-shaped widget, with the state nbclient saves after a run."""
    state = {
        "box": model("VBoxModel", children=["IPY_MODEL_controls", "IPY_MODEL_bar", "IPY_MODEL_out"]),
        "controls": model("HBoxModel", children=["IPY_MODEL_proto", "IPY_MODEL_rate", "IPY_MODEL_reps"]),
        "proto": model("SelectMultipleModel", description="protocols", index=[0, 2],
                       _options_labels=["tcp", "udp", "udpr"]),
        "rate": model("TextModel", description="rate(s)", value="10mbit"),
        "reps": model("IntSliderModel", description="repetitions", value=2),
        "bar": model("HBoxModel", children=["IPY_MODEL_run", "IPY_MODEL_status"]),
        "run": model("ButtonModel", description="Run"),
        "status": model("HTMLModel", value="done: 8 runs"),
        "out": {"model_name": "OutputModel", "model_module": "@jupyter-widgets/output", "state": {"outputs": [
            {"output_type": "display_data", "metadata": {},
             "data": {"text/html": "<table><tr><td>tcp 9.3 Mbit/s</td></tr></table>", "text/plain": "tcp"}},
            {"output_type": "stream", "name": "stdout", "text": "backend: namespaces\n"},
            {"output_type": "display_data", "metadata": {}, "data": {"image/png": PNG, "text/plain": "<img>"}},
        ]}},
    }
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("experiment_panel()")
    cell.outputs = [nbformat.v4.new_output("execute_result", execution_count=1, data={
        WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "box"}, "text/plain": "VBox()"}),
        nbformat.v4.new_output("stream", name="stdout", text="after\n")]
    nb.cells = [cell, nbformat.v4.new_code_cell("lost_widget")]
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={
        WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "gone"}, "text/plain": "x"})]
    nb.metadata["widgets"] = {WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": state}}
    return nb


def test_a_widget_becomes_its_last_state_in_order():
    nb = panel_notebook()
    static = static_widgets(nb)
    outputs = static.cells[0].outputs
    assert all(WIDGET_VIEW not in o.get("data", {}) for o in outputs)
    controls, status, table, stream, image, after = outputs
    assert "protocols: tcp, udpr" in controls["data"]["text/plain"]
    assert "rate(s): 10mbit" in controls["data"]["text/plain"] and "repetitions: 2" in controls["data"]["text/plain"]
    assert "<table>" in controls["data"]["text/html"] and "Run" not in controls["data"]["text/plain"]
    assert status["data"]["text/html"] == "done: 8 runs"
    assert "9.3 Mbit/s" in table["data"]["text/html"] and stream["text"].startswith("backend")
    assert image["data"]["image/png"] == PNG and after["text"] == "after\n"
    assert "widgets" not in static.metadata and "widgets" in nb.metadata       # the input is left alone
    assert "run the notebook" in static.cells[1].outputs[0]["data"]["text/plain"] + \
        static.cells[1].outputs[0]["data"]["text/html"]


def test_the_html_report_needs_no_widget_renderer():
    from nbconvert import HTMLExporter
    html, _ = HTMLExporter().from_notebook_node(static_widgets(panel_notebook()))
    assert "embed-amd.js" not in html and WIDGET_VIEW not in html
    assert "9.3 Mbit/s" in html and f"data:image/png;base64,{PNG}" in html and "done: 8 runs" in html


def tiny_lab(path):
    """A lab shaped like ours: a parameters cell, a quick-mode cell, then what uses them."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('QUICK = False\nSIZE = "1MB"\nREPS = 3'),
                nbformat.v4.new_code_cell('if QUICK:\n    SIZE = "300KB"'),
                nbformat.v4.new_code_cell('print(f"size={SIZE} reps={REPS} quick={QUICK}")')]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.cells[1].metadata["tags"] = ["quick"]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def printed(path) -> str:
    nb = nbformat.read(str(path), as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_given_parameters_win_over_quick_mode_and_are_recorded(tmp_path):
    from wirelab.report import execute_notebook
    lab = tiny_lab(tmp_path / "lab.ipynb")             # quick mode alone would print size=300KB reps=3
    out = execute_notebook(lab, tmp_path / "p.ipynb", parameters={"SIZE": "100KB", "REPS": 1})
    assert printed(out) == "size=100KB reps=1 quick=True\n"
    full = execute_notebook(lab, tmp_path / "f.ipynb", quick=False, parameters={"SIZE": "2MB"})
    assert printed(full) == "size=2MB reps=3 quick=False\n"
    meta = nbformat.read(str(out), as_version=4).metadata.papermill
    assert meta["parameters"] == {"QUICK": True, "SIZE": "100KB", "REPS": 1} and meta["input_path"] == str(lab)


def test_a_parameter_the_notebook_does_not_have_is_a_clear_error(tmp_path):
    import pytest
    from wirelab.errors import UsageError
    from wirelab.report import execute_notebook
    lab = tiny_lab(tmp_path / "lab.ipynb")
    with pytest.raises(UsageError, match="no parameter SIZ ") as err:
        execute_notebook(lab, tmp_path / "x.ipynb", parameters={"SIZ": "1KB"})
    assert "SIZE, REPS" in err.value.fix and not (tmp_path / "x.ipynb").exists()
    with pytest.raises(UsageError, match="--full"):
        execute_notebook(lab, tmp_path / "x.ipynb", parameters={"QUICK": False})


def test_report_values_are_python_literals_else_text():
    from wirelab.cli.report import literal
    assert literal("5") == 5 and literal("0.5") == 0.5 and literal("True") is True
    assert literal('["10mbit", "20mbit"]') == ["10mbit", "20mbit"]
    assert literal("100KB") == "100KB" and literal("10ms") == "10ms" and literal("{[1]: 2}") == "{[1]: 2}"


def test_the_report_process_validates_notebooks_without_the_slow_iri_grammar():
    import subprocess
    import sys
    code = ("import sys, time; from wirelab.cli.report import without_iri_grammar; without_iri_grammar(); "
            "start = time.monotonic(); import nbformat, papermill; "
            "nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('x = 1')])); "
            "print('rfc3987_syntax' in sys.modules and sys.modules['rfc3987_syntax'] is not None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]           # jsonschema went on without it; the notebook validated


def test_a_notebook_showing_a_widget_runs_to_its_end(tmp_path):
    from wirelab.report import execute_notebook
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("QUICK = False", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import ipywidgets as w\nw.VBox([w.Button(description='Run'), w.Output()])"),
                nbformat.v4.new_code_cell("print('after the widget')")]
    nbformat.write(nb, tmp_path / "w.ipynb")
    out = execute_notebook(tmp_path / "w.ipynb", tmp_path / "out.ipynb", timeout_s=120)
    assert printed(out) == "after the widget\n"


def test_an_output_widgets_contents_are_kept_for_the_report_and_never_sent_to_the_kernel(tmp_path):
    """``wirelab report``'s engine (``report_engine``: nbclient's stand-in for an Output widget
    sent its state on the kernel's shell socket at every output, and a cell's reply could be
    missed: 160-278 s for 60 cells that take 2-5 s) keeps what the widget shows for the static
    report and sends nothing to the kernel."""
    from wirelab import report
    from wirelab.report_engine import KeptOutput

    class NoShell:
        def send(self, msg):
            raise AssertionError(f"sent to the kernel: {msg['msg_type']}")

    class Client:
        shell_channel = NoShell()

    widget = KeptOutput("c1", {"outputs": []}, Client(), executor=None)
    message = {"msg_type": "stream", "parent_header": {"msg_id": "m"}, "content": {"name": "stdout", "text": "a\n"},
               "header": {"msg_type": "stream"}}
    widget.output([], message, None, 0)
    widget.clear_output([], {"parent_header": {}, "content": {"wait": False}}, 0)
    widget.output([], message, None, 0)
    assert [o["text"] for o in widget.outputs] == ["a\n"]

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import ipywidgets as w\nfrom IPython.display import display\n"
                                          "out = w.Output()\ndisplay(out)"),
                *[nbformat.v4.new_code_cell(f"with out:\n    for i in range(20):\n        print({k}, i, flush=True)")
                  for k in range(5)]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "out.ipynb")
    done = nbformat.read(str(report.execute_notebook(tmp_path / "out.ipynb", tmp_path / "done.ipynb", timeout_s=120)),
                         as_version=4)
    state = done.metadata["widgets"][report.WIDGET_STATE]["state"]
    shown = [m for m in state.values() if m["model_name"] == "OutputModel"][0]["state"]["outputs"]
    text = "".join(o["text"] for o in shown)
    assert all(f"{k} {i}\n" in text for k in range(5) for i in range(20))
