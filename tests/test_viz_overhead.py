"""Overhead figures, the calculator table, the exercises and the HTML report."""
import subprocess
import sys

import matplotlib
import pytest

matplotlib.use("Agg")

from wirelab.exercises import EXERCISES, check
from wirelab.errors import UsageError
from wirelab.model import HeaderStack
from wirelab.viz.calculator import overhead_calculator, prediction_table
from wirelab.viz.overhead import (efficiency_table, header_table, plot_delivery,
                                  plot_efficiency, plot_header_bytes)


def test_efficiency_table_steps_down_when_fragmenting():
    table = efficiency_table({"udp": HeaderStack("udp")}, [1472, 1473])
    assert list(table.packets) == [1, 2]
    assert table.efficiency.iloc[1] < table.efficiency.iloc[0]


def test_header_table_adds_up_to_the_wire_bytes():
    table = header_table({"tcp": HeaderStack("tcp", tcp_options=12)})
    assert table.bytes.sum() == 1538
    assert table.set_index("part").loc["payload", "bytes"] == 1448


def test_plots_return_their_axes():
    stacks = {"udp": HeaderStack("udp"), "tcp": HeaderStack("tcp")}
    ax = plot_efficiency(efficiency_table(stacks, range(100, 3000, 100)))
    assert ax.get_ylabel().startswith("efficiency") and ax.get_legend().get_title().get_text() == "predicted"
    bars = plot_header_bytes(stacks)
    assert len(bars.patches) > 0
    assert plot_delivery(range(100, 5000, 100), 0.01).lines


def test_calculator_table_and_widget():
    table = prediction_table(proto="tcp", rate_bps=10e6, timestamps=True)
    assert "9.415 Mbit/s" in set(table.predicted)
    assert overhead_calculator(rate="10mbit") is not None


@pytest.mark.parametrize("name", list(EXERCISES))
def test_exercises_accept_the_model_answer_and_reject_another(name):
    expected = EXERCISES[name].expected()
    assert "correct" in check(name, expected)
    assert "not quite" in check(name, expected * 1.5 + 1)
    assert "not answered" in check(name, None)


def test_unknown_exercise_is_a_usage_error():
    with pytest.raises(UsageError):
        check("nope", 1)


@pytest.mark.notebook
def test_report_command_writes_html_with_figures(tmp_path, project_root):
    proc = subprocess.run([sys.executable, "-m", "wirelab", "report",
                           str(project_root / "notebooks" / "01-overhead-and-goodput.ipynb"),
                           "--out", str(tmp_path), "-p", "MEASURE", "False"],      # the figures, not the runs
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "01-overhead-and-goodput.html").read_text()
    assert html.count("data:image/png;base64") >= 4
    # The calculator's last state is static output (its table and bar), not an empty widget box.
    assert "payload per write" in html and "MTU (B)" in html and "embed-amd.js" not in html


def test_report_of_a_missing_notebook_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "wirelab", "report", str(tmp_path / "nope.ipynb")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no notebook" in proc.stderr and "Traceback" not in proc.stderr
