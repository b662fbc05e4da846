"""wirelab.explore (issue 33, part 3): the linked view driven from Python, as a click would drive it.

Each change (the conversation, the time brush, the filter box) must redraw: new picture bytes
that are not blank; what the browser gets stays small; a filter that cannot be read shows its
caret message in the view.
"""
import io
from pathlib import Path

import numpy as np
import pytest

import wirelab
from wirelab.viz import explore as explore_from_viz
from wirelab.viz.canvas import plot_conversation_bytes, plot_conversation_rate
from wirelab.viz.explorer import GRAPHS, Explorer

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
LOSSY = CAPTURES / "tcp-10mbit-loss2.pcapng"


def colours(png: bytes) -> int:
    """Distinct colours of a PNG, decoded by matplotlib (a blank picture has one)."""
    import matplotlib.image as mpimg
    pixels = mpimg.imread(io.BytesIO(png))
    return len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0))


def pictures(view: Explorer) -> dict[str, bytes]:
    return {g: view.images[g].value for g in GRAPHS}


@pytest.fixture(scope="module")
def lossy():
    return wirelab.open_capture(LOSSY)


def test_explore_is_exported_and_draws_the_largest_conversation_at_once(lossy):
    assert wirelab.explore is explore_from_viz
    view = wirelab.explore(lossy)
    assert view.selector.value == ("tcp", 1)                      # the bulk transfer: most bytes first
    assert view.redraws == 1
    shown = pictures(view)
    assert all(colours(png) > 20 for png in shown.values())       # four drawn graphs, none blank
    assert "Expert information" in view.expert.value and "Previous segment(s) not captured" in view.expert.value
    assert view.ladder.value == ""                                 # iperf3, not PPCB
    assert view.brush.value == (view.brush.min, view.brush.max)    # the brush spans the conversation


def test_every_retransmission_is_drawn_one_by_one(lossy):
    view = wirelab.explore(lossy)
    red = next(line for line in view.canvas.axes("sequence").get_lines() if line.get_label() == "retransmission")
    table = lossy.stream(1).sequence_graph()
    resent = table[table["retransmission"]]
    assert len(resent) > 0
    drawn = set(zip(red.get_xdata()[0::3], red.get_ydata()[0::3], red.get_ydata()[1::3]))
    assert drawn == set(zip(resent["time"], resent["seq"].astype(float), resent["end"]))


def test_a_redraw_reuses_each_figure_and_leaves_nothing_of_the_last_one(lossy):
    view = wirelab.explore(lossy)
    ax = view.canvas.axes("window")
    first = [(line.get_label(), line.get_color()) for line in ax.get_lines()]
    view.selector.value = ("tcp", 0)
    low, high = view.brush.min, view.brush.max
    view.brush.value = (low, (low + high) / 2)
    view.selector.value = ("tcp", 1)
    assert view.canvas.axes("window") is ax and view.redraws == 4
    assert [(line.get_label(), line.get_color()) for line in ax.get_lines()] == first    # colours from C0 again
    assert ax.get_xlim() == view.brush.value and ax.get_title() == "TCP stream 1: window"


def test_choosing_a_conversation_redraws_its_graphs(lossy):
    view = wirelab.explore(lossy)
    before = pictures(view)
    view.selector.value = ("tcp", 0)
    assert view.redraws == 2 and "tcp stream 0" in view.summary.value
    after = pictures(view)
    assert all(after[g] != before[g] and colours(after[g]) > 20 for g in GRAPHS)


def test_the_brush_zooms_every_graph_and_the_expert_table(lossy):
    view = wirelab.explore(lossy)
    before, notes = pictures(view), view.expert.value
    low, high = view.brush.min, view.brush.max
    view.brush.value = (low, low + (high - low) / 10)
    assert view.redraws == 2
    after = pictures(view)
    assert all(after[g] != before[g] and colours(after[g]) > 20 for g in GRAPHS)
    assert view.expert.value != notes                            # fewer notes in a tenth of the transfer


def test_the_filter_narrows_the_conversations_and_redraws(lossy):
    view = wirelab.explore(lossy)
    assert len(view.selector.options) == 2
    view.filter_box.value = "tcp.stream == 0"
    assert [value for _, value in view.selector.options] == [("tcp", 0)]
    assert view.selector.value == ("tcp", 0) and view.redraws == 2
    assert "27 of 2353 frames" in view.message.value
    view.filter_box.value = "udp"                                  # nothing left: said, not drawn
    assert view.selector.options == () and "no conversation" in view.summary.value
    assert all(view.images[g].value == b"" for g in GRAPHS)
    view.filter_box.value = ""                                     # all of it again
    assert len(view.selector.options) == 2 and colours(view.images["sequence"].value) > 20


def test_a_bad_filter_shows_its_caret_message_and_keeps_the_view(lossy):
    view = wirelab.explore(lossy)
    shown = pictures(view)
    view.filter_box.value = "tcp.prot == 80"
    assert "unknown field" in view.message.value and "^^^^^^^^" in view.message.value
    assert "did you mean tcp.port" in view.message.value
    assert pictures(view) == shown and len(view.selector.options) == 2


def test_what_the_browser_gets_is_small(lossy):
    view = wirelab.explore(lossy)
    assert 10_000 < view.payload_bytes() <= 2_000_000
    view.selector.value = ("tcp", 0)
    assert view.payload_bytes() <= 2_000_000
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle     # it shows itself as the widget
    assert bundle["text/plain"].startswith("<explore tcp-10mbit-loss2.pcapng: 2 conversations")


def test_a_ppcb_conversation_shows_its_ladder_and_udp_its_bytes():
    view = wirelab.explore(CAPTURES / "ppcb.pcapng")
    assert view.selector.value[0] == "tcp" and "<svg" in view.ladder.value and "CONN" in view.ladder.value
    udp = next(value for _, value in view.selector.options if value[0] == "udp")
    view.selector.value = udp
    assert colours(view.images["sequence"].value) > 5 and colours(view.images["throughput"].value) > 5
    assert view.images["rtt"].layout.display == "none"             # UDP: no acknowledgements to time
    assert "<svg" in view.ladder.value                             # the udp/udpr transfers are PPCB too


def test_the_plot_helpers_take_an_axes_and_return_it(lossy):
    from matplotlib.figure import Figure
    rows = lossy.frames[lossy.frames["stream"] == 0]
    ax = Figure().subplots()
    assert plot_conversation_bytes(rows, ax) is ax and len(ax.lines) == 2
    ax = Figure().subplots()
    assert plot_conversation_rate(rows, 0.1, ax) is ax and len(ax.lines) == 2


def test_a_filter_that_keeps_the_conversation_keeps_the_brush(lossy):
    view = wirelab.explore(lossy)
    low, high = view.brush.min, view.brush.max
    view.brush.value = (low, (low + high) / 2)
    shown = pictures(view)
    view.filter_box.value = "tcp.stream == 1 and tcp.len > 0"       # the data segments alone
    assert view.selector.value == ("tcp", 1) and view.brush.value == (low, (low + high) / 2)
    assert view.redraws == 3 and pictures(view)["sequence"] != shown["sequence"]   # no ACK line now


def test_a_dataset_is_explored_without_its_bytes(tmp_path):
    from wirelab.capture import convert
    folder = convert(CAPTURES / "ppcb.pcapng", tmp_path / "ppcb.dataset", progress=False)
    view = wirelab.explore(folder)
    assert view.redraws == 1 and colours(view.images["sequence"].value) > 5
    assert view.ladder.value == ""                                 # no bytes to read PPCB from
    view.filter_box.value = "ppcb.type == 5"
    assert "holds no packet bytes" in view.message.value and "pcap/pcapng file" in view.message.value
