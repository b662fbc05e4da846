"""``explore(capture)``: one linked view of a capture in JupyterLab (issue 33), computed in the kernel.

    import wirelab
    wirelab.explore("captures/tcp-10mbit-loss2.pcapng")        # in a notebook cell

The conversation list (TCP and UDP, ``open_capture``'s ``conversations``); choosing one
redraws its TCP Stream Graphs (tcptrace sequence graph, throughput, RTT, window: see
``capture.stats.stream_graphs``) and its Expert Information; the time slider is the
brush: every graph and the expert table show that range of the capture; the filter box
narrows all of it with a Wireshark display filter (``Capture.filter``; a filter that
cannot be read shows its message, the caret under the token, in the view). A UDP
conversation has no sequence numbers of its own: its bytes over time per direction and
its rate stand in the first two places. A conversation that carries PPCB shows its
ladder (``capture.ladder``'s SVG).

Why ipywidgets and pictures drawn here (README, "Explore a capture"): every redraw is
computed in the kernel and the browser gets PNGs and small HTML (a few tens of KB a view,
``payload_bytes``), never the packets; it needs no frontend build, so it works alike in
JupyterLab, VS Code and voila, and no ipympl. Figures are drawn off pyplot
(``offscreen`` says why: widget callbacks may run on a second thread), made once and redrawn
in place, with no more points than they have pixels (``canvas``). The module is
``explorer``, not ``explore``: a package front may not export a name that is one of its modules.
"""
from __future__ import annotations

from functools import cached_property
from html import escape

import numpy as np
import pandas as pd

from ..capture import Capture, open_capture
from ..capture.ladder import ladder_svg
from ..capture.stats.stream_plot import draw
from ..errors import WirelabError
from ..wire.ppcb import CODES, DATA_HEADER, HEADER_BY_CODE, OFFSETS
from .canvas import Canvas, plot_conversation_bytes, plot_conversation_rate

__all__ = ["explore", "Explorer"]

GRAPHS = ("sequence", "throughput", "rtt", "window")
MAX_CONVERSATIONS = 200            # the list's rows: the largest by bytes (the browser gets their labels)
_NOT_PPCB = ("not PPCB", "SYN", "FIN", "RST")
DATA = CODES["DATA"]


def explore(source, *, dpi: float = 72, figsize=(5.6, 2.8)) -> "Explorer":
    """The linked view of ``source`` (a capture file, a dataset folder, a ``LiveCapture`` or a
    ``Capture``, e.g. an already filtered one); the returned ``Explorer`` displays itself."""
    capture = source if isinstance(source, Capture) else open_capture(source)
    return Explorer(capture, dpi=dpi, figsize=figsize)


class _Range:
    """A ``StreamGraphs`` seen through the brush: its tables cut to ``[t0, t1]`` (computed on
    the whole stream first, so a moving average or an RTT is the stream's, not the cut's, and
    kept: a brush cuts them again, ``tables``)."""

    def __init__(self, graphs, t0: float, t1: float, tables: dict):
        self.graphs, self.stream, self.t0, self.t1, self._tables = graphs, graphs.stream, t0, t1, tables

    def _cut(self, name: str, **kwargs) -> pd.DataFrame:
        key = (name, *sorted(kwargs.items()))
        if key not in self._tables:
            self._tables[key] = getattr(self.graphs, name)(**kwargs)
        table = self._tables[key]
        t = table["time"].to_numpy()
        return table[(t >= self.t0) & (t <= self.t1)]

    def sequence_graph(self):
        return self._cut("sequence_graph")

    def throughput(self, **kwargs):
        return self._cut("throughput", **kwargs)

    def rtt(self):
        return self._cut("rtt")

    def window(self):
        return self._cut("window")


class Explorer:
    """The widgets (``filter_box``, ``selector``, ``brush``, ``images``, ``expert``, ``ladder``,
    ``message``) and what changing them redraws; ``widget`` is the whole view. Setting a
    widget's value from Python (a test, a script) redraws as a click does."""

    def __init__(self, capture: Capture, *, dpi: float = 72, figsize=(5.6, 2.8)):
        import ipywidgets as w                   # start-up: widgets only for the view

        wide = {"description_width": "90px"}
        self.capture, self.view, self.dpi, self.figsize = capture, capture, dpi, figsize
        self.canvas = Canvas(figsize=figsize, dpi=dpi)
        self.redraws = 0
        self._quiet = False
        end = capture._last_time() if len(capture) else 1.0      # (no table of every frame for it)
        self.filter_box = w.Text(description="filter", continuous_update=False, style=wide,
                                 placeholder="a display filter, e.g. tcp.analysis.retransmission (Enter)",
                                 layout=w.Layout(width="70%"))
        self.message = w.HTML()
        self.selector = w.Select(description="conversation", rows=6, style=wide, layout=w.Layout(width="98%"))
        end = max(end, 1e-6)
        self.brush = w.FloatRangeSlider(description="time (s)", min=0.0, max=end, value=(0.0, end), step=end / 1000,
                                        readout_format=".4f", continuous_update=False, style=wide,
                                        layout=w.Layout(width="98%"))
        self.summary = w.HTML()
        self.images = {g: w.Image(format="png", layout=w.Layout(width="49%")) for g in GRAPHS}
        self.expert = w.HTML()
        self.ladder = w.HTML()
        self.widget = w.VBox([self.filter_box, self.message, self.selector, self.brush, self.summary,
                              w.HBox([self.images["sequence"], self.images["throughput"]]),
                              w.HBox([self.images["rtt"], self.images["window"]]),
                              self.expert, self.ladder])
        self.filter_box.observe(self._on_filter, names="value")
        self.selector.observe(self._on_select, names="value")
        self.brush.observe(self._on_brush, names="value")
        self._fill_selector()

    def __repr__(self) -> str:
        return (f"<explore {self.capture.source.name}: {len(self.selector.options)} conversations"
                " (the view shows in JupyterLab, VS Code or voila)>")

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)        # where widgets are not drawn (a saved notebook, a terminal)
        return bundle

    # -- what the browser gets ---------------------------------------------------------------
    def payload_bytes(self) -> int:
        """The bytes of this view's pictures, HTML and list labels (what a redraw sends)."""
        html = sum(len(x.value.encode()) for x in (self.message, self.summary, self.expert, self.ladder))
        labels = sum(len(label.encode()) for label in self.selector._options_labels)
        return sum(len(image.value) for image in self.images.values()) + html + labels

    # -- the filter ---------------------------------------------------------------------------
    def _on_filter(self, change) -> None:
        text = change["new"].strip()
        try:
            view = self.capture.filter(text) if text else self.capture
        except WirelabError as err:              # a FilterError: its caret message, in the view
            self.message.value = f"<pre style='color:#b00020'>{escape(str(err))}</pre>"
            return
        self.view = view
        self.message.value = (f"<span>{len(view)} of {len(self.capture)} frames match "
                              f"<code>{escape(text)}</code></span>" if text else "")
        self._fill_selector()

    def _conversations(self) -> pd.DataFrame:
        tables = [self.view.conversations(kind).assign(kind=kind) for kind in ("tcp", "udp")]
        tables = [t for t in tables if len(t)]
        if not tables:
            return pd.DataFrame(columns=["kind", "stream", "bytes"])
        both = pd.concat(tables, ignore_index=True)
        return both.sort_values("bytes", ascending=False, kind="stable").head(MAX_CONVERSATIONS)

    def _fill_selector(self) -> None:
        table = self._conversations()
        options = [(self._label(row), (row.kind, int(row.stream))) for row in table.itertuples()]
        self._table = table
        keep = self.selector.value
        values = [value for _, value in options]
        self._quiet = True
        try:
            self.selector.options = options
            self.selector.value = keep if keep in values else (values[0] if values else None)
        finally:
            self._quiet = False
        if keep is not None and keep in values:
            self.redraw()                        # the same conversation, narrowed: the brush stays
        else:
            self._select()

    @staticmethod
    def _label(row) -> str:
        ends = f"{row.address_a}:{row.port_a} ↔ {row.address_b}:{row.port_b}"
        return f"{row.kind} {row.stream}  {ends}  {row.packets} frames, {row.bytes:,} B, {row.duration:.3f} s"

    # -- choosing a conversation, brushing a time range -------------------------------------------
    def _on_select(self, change) -> None:
        if not self._quiet:
            self._select()

    def _select(self) -> None:
        """The chosen conversation's span becomes the brush's range (all of it chosen), then redraw."""
        if self.selector.value is None:
            narrowed = self.view is not self.capture
            self._clear("no conversation in these frames" + (": try another filter" if narrowed else ""))
            return
        rows = self._frames()
        t = rows["time_relative"].to_numpy(np.float64)
        low, high = float(t.min()), float(t.max())
        high = high if high > low else low + 1e-3
        self._quiet = True
        try:                                     # (min ≤ value ≤ max at every step: widen first)
            self.brush.min, self.brush.max = min(self.brush.min, low), max(self.brush.max, high)
            self.brush.value = (low, high)
            self.brush.min, self.brush.max = low, high
            self.brush.step = (high - low) / 1000
        finally:
            self._quiet = False
        self.redraw()

    def _on_brush(self, change) -> None:
        if not self._quiet:
            self.redraw()

    def _frames(self) -> pd.DataFrame:
        """The chosen conversation's frames in the view."""
        return self._chosen().frames

    def _chosen(self) -> Capture:
        """The view narrowed to the chosen conversation, made once per choice: every redraw (a
        brush) works on its frames, not the capture's million (and its TCP flags are its own
        only, ``Capture.flags``)."""
        key = (self.view, self.selector.value)   # (the view itself, not its id: a freed view's id is reused)
        if getattr(self, "_chosen_key", None) != key:
            self._chosen_view = self.view._conversation(*self.selector.value)
            self._chosen_key, self._graphs = key, None
        return self._chosen_view

    def _stream_graphs(self) -> _Range:
        """The chosen TCP conversation's graphs over the brush's range (its tables made once a choice)."""
        chosen = self._chosen()
        if self._graphs is None:
            self._graphs = chosen.stream(self.selector.value[1]), {}
        graphs, tables = self._graphs
        t0, t1 = self.brush.value
        return _Range(graphs, t0, t1, tables)

    # -- drawing ------------------------------------------------------------------------------
    def redraw(self) -> None:
        """Draw the chosen conversation's graphs, expert information and ladder for the brush's range."""
        if self.selector.value is None:
            return
        kind, stream = self.selector.value
        t0, t1 = self.brush.value
        rows = self._frames()
        inside = rows[(rows["time_relative"] >= t0).to_numpy() & (rows["time_relative"] <= t1).to_numpy()]
        self.summary.value = (f"<b>{kind} stream {stream}</b>: {len(inside)} of its {len(rows)} frames, "
                              f"{int(inside['frame_len'].sum()):,} B between {t0:.4f} s and {t1:.4f} s")
        try:
            if kind == "tcp":
                cut = self._stream_graphs()
                for graph in GRAPHS:
                    self._picture(graph, lambda ax, px, g=graph: draw(cut, g, ax, pixels=px, xlim=(t0, t1)))
            else:
                interval = max((t1 - t0) / 100, 1e-6)
                self._picture("sequence", lambda ax, px: plot_conversation_bytes(inside, ax, pixels=px,
                                                                                 xlim=(t0, t1)))
                self._picture("throughput", lambda ax, px: plot_conversation_rate(inside, interval, ax))
                for graph in ("rtt", "window"):     # UDP has no acknowledgements, no window
                    self._hide(graph)
        except WirelabError as err:
            self._clear(str(err))
            return
        self.expert.value = self._expert_html(inside)
        self.ladder.value = self._ladder_html(inside)
        self.redraws += 1

    def _picture(self, graph: str, paint) -> None:
        """``paint(ax, pixels)`` as the graph's picture, over the brush's range."""
        image = self.images[graph]
        image.value = self.canvas.png(graph, paint, self.brush.value)
        image.layout.display = None

    def _hide(self, graph: str) -> None:
        self.images[graph].value = b""
        self.images[graph].layout.display = "none"

    def _clear(self, why: str) -> None:
        for graph in GRAPHS:
            self._hide(graph)
        self.summary.value = f"<i>{escape(why)}</i>"
        self.expert.value = self.ladder.value = ""

    def _expert_html(self, inside: pd.DataFrame) -> str:
        """Expert Information of the frames in range: one row per note, the first frames named."""
        chosen = self._chosen()
        notes = chosen.filter(chosen.frames.index.isin(inside.index)).expert()
        if not len(notes):
            return "<p><b>Expert information</b>: none in this range</p>"
        rows = "".join(
            f"<tr><td>{escape(str(n.severity))}</td><td>{escape(n.summary)}</td><td>{n.count}</td>"
            f"<td>{escape(', '.join(map(str, n.frames[:5])) + (' …' if n.count > 5 else ''))}</td></tr>"
            for n in notes.itertuples())
        return ("<p><b>Expert information</b> (this range)</p><table><tr><th>severity</th><th>summary</th>"
                f"<th>count</th><th>frames</th></tr>{rows}</table>")

    @cached_property
    def _ppcb(self) -> pd.DataFrame | None:
        """``exchange``'s packets of the capture, read once (None: a dataset has no bytes to read them from)."""
        try:
            return self.capture.flow_graph().packets
        except WirelabError:
            return None

    def _may_carry_ppcb(self) -> bool:
        """Whether the chosen conversation may carry PPCB (``_carries_ppcb``), once per conversation."""
        known = self.__dict__.setdefault("_ppcb_conversations", {})
        if self.selector.value not in known:
            known[self.selector.value] = self._carries_ppcb()
        return known[self.selector.value]

    def _carries_ppcb(self) -> bool:
        """Whether the chosen conversation may carry PPCB: a UDP datagram, or the first byte of a
        TCP direction (its lowest sequence number), is a PPCB type byte. Without one the reading
        (``ppcb_reader``) finds no PPCB packet in it, and reading the whole capture as PPCB (every
        TCP stream walked, seconds on a million packets) is skipped."""
        kind, stream = self.selector.value
        # (the whole capture's rows: the chosen view's if unfiltered)
        rows = self._frames() if self.view is self.capture else self.capture._conversation(kind, stream).frames
        try:
            self.capture._bytes()
            read = self.capture.read_at                   # (a stretch at a time: resident memory stays low)
        except WirelabError:                             # a dataset: no bytes
            return False
        start = rows["payload_offset"].to_numpy(np.int64, na_value=-1)
        held = (start >= 0) & (rows["payload_len"].to_numpy(np.int64, na_value=0) > 0) & \
            (rows["cap_len"].to_numpy(np.int64) > start)
        at = rows["file_offset"].to_numpy(np.int64)[held] + start[held]
        seq = rows["tcp_seq"].to_numpy(np.int64, na_value=-1)[held]
        if kind == "tcp" and not (seq < 0).any():        # only each direction's first byte is read
            return bool(np.isin(read(at[self._lowest_seq(seq, rows["a_to_b"].to_numpy(bool)[held])])[:, 0],
                                list(HEADER_BY_CODE)).any())
        first = read(at)[:, 0]
        starts = np.isin(first, list(HEADER_BY_CODE))
        if kind == "udp":
            return self._whole_ppcb_datagram(rows[held], read, first, starts)
        return bool(starts.any())                        # (no sequence numbers: any byte may start one)

    @staticmethod
    def _lowest_seq(seq: np.ndarray, side: np.ndarray) -> np.ndarray:
        """The segments at each direction's lowest sequence number (modulo 2^32), where its bytes begin."""
        lowest = []
        for this in (True, False):
            mine = np.flatnonzero(side == this)
            if mine.size:
                relative = (seq[mine] - seq[mine[0]] + 2 ** 31) % 2 ** 32 - 2 ** 31
                lowest.append(mine[relative == relative.min()])
        return np.concatenate(lowest) if lowest else np.zeros(0, np.int64)

    @staticmethod
    def _whole_ppcb_datagram(rows: pd.DataFrame, read, first: np.ndarray, starts: np.ndarray) -> bool:
        """Whether a datagram is exactly one PPCB packet by its length: its type's header, or a
        DATA's header and ``data_len`` (``ppcb_reader.packet_fields``; a datagram of any other
        length is "not PPCB", no ladder). Fragmented datagrams: any type byte will do."""
        if rows["more_frags"].fillna(False).to_numpy(bool).any() or \
                (rows["frag_offset"].to_numpy(np.int64, na_value=0) > 0).any():
            return bool(starts.any())
        size = rows["payload_len"].to_numpy(np.int64)
        header = np.zeros(256, np.int64)
        header[list(HEADER_BY_CODE)] = list(HEADER_BY_CODE.values())
        whole = starts & (first != DATA) & (size == header[first])
        data = np.flatnonzero(starts & (first == DATA) & (rows["cap_len"].to_numpy(np.int64) >= (
            rows["payload_offset"].to_numpy(np.int64) + DATA_HEADER)))
        at = rows["file_offset"].to_numpy(np.int64)[data] + rows["payload_offset"].to_numpy(np.int64)[data]
        length = read(at + OFFSETS["data_len"], DATA_HEADER - OFFSETS["data_len"]).astype(np.int64) @ \
            (256 ** np.arange(DATA_HEADER - OFFSETS["data_len"] - 1, -1, -1))
        return bool(whole.any() or (size[data] == DATA_HEADER + length).any())

    def _ladder_html(self, inside: pd.DataFrame) -> str:
        """The ladder of the PPCB packets in range (SVG), when this conversation carries PPCB."""
        if not self._may_carry_ppcb():
            return ""
        packets = self._ppcb
        if packets is None or not len(packets):
            return ""
        mine = packets[packets["frame"].isin(inside["frame"])]
        if mine["kind"].isin(_NOT_PPCB).all():           # (no PPCB packet among them: no ladder)
            return ""
        return "<p><b>PPCB ladder</b></p>" + ladder_svg(mine.reset_index(drop=True))
