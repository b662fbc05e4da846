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
