"""Document 003's experiment: end-to-end delay of 32-byte messages across the five-node network.

    frame = delay_sweep([("0ms", "0ms"), ("20ms", "5ms")], messages=1000, out="data/runs/09")
    summary = summarize_delays(frame)         # mean ± 95 % CI per method, beside pred_* and the paper

Each configuration builds ``broker_network`` with its delay ± jitter on every
UDP link (b–r1, b–r2, r1–d, r2–d; s–b as the document had it, or as
``source_link`` says), starts the node programs of ``wirelab.transfer.broker``
on their hosts (``link.open(topology)``: the backend is chosen once, for the
whole sweep), runs the source on ``s`` and keeps one row per message.

End-to-end delay three ways (``method`` in the summary):

* ``rtt_half``   (ACK back at s − sent) / 2: the document's method, exact only
                 when the way back takes as long as the way there;
* ``same_clock`` arrival at d − sent: the namespaces of one machine share one
                 clock, so this is the true one-way delay (d's programmed offset,
                 known here, is taken off first);
* ``offset_est`` arrival at d − sent − θ̂, where θ̂ is the NTP-style estimate of
                 d's clock offset, ((t2 − t1) + (t3 − t4)) / 2 per message, median
                 over the run: what one does when the clocks differ (document 003's
                 were 4 s apart; ``clock_offset`` plays that here).

The prediction (``pred_one_way_s``) is ``wirelab.model.path_delay`` along the
route: per hop the transmission of the message's frame (TCP on s–b, UDP
after) at the link's rate, plus its delay (jitter counted with its mean);
processing and queueing are not modelled (one message in flight: no queue).
"""
from __future__ import annotations

import json
import math
import select
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

from .. import link as links
from .. import units
from ..errors import ExperimentError, TransferError, WirelabError
from ..link import LinkSpec, broker_network
from ..model import Hop, HeaderStack, path_delay
from ..transfer.broker import MESSAGE_BYTES
from ..wire.headers import TCP_TIMESTAMPS
from .stats import confidence_interval
from .store import atomic_write

__all__ = ["run_broker_network", "run_across", "delay_sweep", "summarize_delays", "delay_table", "route_hops",
           "predict_route", "PORT", "METHODS"]

PORT = 5300
READY_TIMEOUT_S = 15.0
METHODS = {"rtt_half": "RTT / 2 (document 003)", "same_clock": "one-way, one clock",
           "offset_est": "one-way, clock offset estimated"}
#: Bytes a frame of one message is charged on each kind of link (emulated wire: IP packet + 14 B).
#: TCP carries the 12 B timestamp option (Linux's default, net.ipv4.tcp_timestamps = 1).
FRAME_BYTES = {proto: MESSAGE_BYTES + stack.l2 + stack.l3 + stack.l4
               for proto, stack in (("tcp", HeaderStack("tcp", tcp_options=TCP_TIMESTAMPS, wire="emulated")),
                                    ("udp", HeaderStack("udp", wire="emulated")))}


def _argv(role: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "wirelab.transfer.broker", role, *args]


def _wait_ready(proc, what: str, deadline: float) -> None:
    """A node program prints "ready" once its sockets are open."""
    ready, _, _ = select.select([proc.stdout], [], [], max(deadline - time.monotonic(), 0))
    line = proc.stdout.readline() if ready else ""
    if not line.startswith("ready"):
        err = proc.stderr.read() if proc.poll() is not None else ""
        raise TransferError(f"the {what} did not start: {err.strip() or 'no answer'}",
                            "run python -m wirelab.transfer.broker by hand to see why")


def route_hops(topology, route=("s", "b", "r1", "d")) -> list[Hop]:
    """The hops a message takes along ``route``: each link's rate, delay and jitter in that
    direction, and the frame the link charges (TCP between s and b, UDP elsewhere)."""
    hops = []
    for here, there in zip(route, route[1:]):
        cable = topology.link(here, there)
        direction = cable.spec.forward if cable.a == here else cable.spec.reverse
        proto = "tcp" if {here, there} == {"s", "b"} else "udp"
        hops.append(Hop(rate_bps=direction.rate_bps, delay_s=direction.delay_s, jitter_s=direction.jitter_s,
                        wire_bytes=FRAME_BYTES[proto]))
    return hops


def predict_route(topology) -> dict:
    """Predicted one-way delay there (s → d) and back (d → s), averaged over both routers."""
    there = [path_delay(MESSAGE_BYTES, route_hops(topology, ("s", "b", r, "d"))) for r in ("r1", "r2")]
    back = [path_delay(MESSAGE_BYTES, route_hops(topology, ("d", r, "b", "s"))) for r in ("r1", "r2")]
    one_way, way_back = sum(there) / 2, sum(back) / 2
    return {"pred_one_way_s": one_way, "pred_way_back_s": way_back, "pred_rtt_half_s": (one_way + way_back) / 2}


def run_broker_network(topology, *, messages: int = 1000, ack_timeout_s: float = 2.0,
                       clock_offset_s: float = 0.0, backend: str = "auto", seed: int | None = None,
                       timeout_s: float | None = None, bar=None) -> tuple[pd.DataFrame, dict]:
    """Build ``topology`` (a ``broker_network``), run ``messages`` messages from s to d and back;
    return one row per message and the link's ``describe()``. ``bar``: a tqdm bar to advance."""
    with links.open(topology, backend=backend, seed=seed, name="doc3") as net:
        frame = run_across(net, messages=messages, ack_timeout_s=ack_timeout_s, clock_offset_s=clock_offset_s,
                           timeout_s=timeout_s, bar=bar)
    return frame, net.describe()                      # after close: with the link's final counters


def run_across(net, *, messages: int = 1000, ack_timeout_s: float = 2.0, clock_offset_s: float = 0.0,
               timeout_s: float | None = None, bar=None) -> pd.DataFrame:
    """The node programs on the hosts of ``net`` (an open five-node link), ``messages`` messages
    from s; one row per message. Every program started here stops when ``net`` closes."""
    if messages < 1:
        raise ExperimentError(f"messages must be at least 1, not {messages}", "e.g. messages=1000")
    timeout_s = timeout_s or messages * (ack_timeout_s + 0.05) + 30
    rows = []
    deadline = time.monotonic() + READY_TIMEOUT_S
    listen = f"0.0.0.0:{PORT}"       # inside each namespace: its own links only
    d = net.popen("d", _argv("destination", listen, "--clock-offset", repr(clock_offset_s)))
    started = [(d, "destination")]
    for r in ("r1", "r2"):
        started.append((net.popen(r, _argv("router", listen, "--next", f"{net.address('d', r)}:{PORT}")),
                        f"router {r}"))
    routers = [f"{net.address(r, 'b')}:{PORT}" for r in ("r1", "r2")]
    started.append((net.popen("b", _argv("broker", listen, "--routers", *routers)), "broker"))
    for proc, what in started:
        _wait_ready(proc, what, deadline)
    source = net.popen("s", _argv("source", f"{net.address('b', 's')}:{PORT}", "--count", str(messages),
                                  "--timeout", repr(ack_timeout_s)))
    end = time.monotonic() + timeout_s
    while len(rows) < messages and time.monotonic() < end:
        ready, _, _ = select.select([source.stdout], [], [], min(1.0, max(end - time.monotonic(), 0)))
        if not ready:
            continue
        line = source.stdout.readline()
        if not line:
            break                                     # the source ended
        rows.append(json.loads(line))
        if bar is not None:
            bar.update(1)
    if len(rows) < messages:
        source.kill()
        why = source.stderr.read().strip() if source.poll() is not None else ""
        raise TransferError(f"the source finished {len(rows)} of {messages} messages"
                            + (f": {why}" if why else f" within {timeout_s:.0f} s"),
                            "raise timeout_s, or check the links are up")
    frame = pd.DataFrame(rows)
    for column in ("acked", "via", "dest_rx", "dest_tx", "lost"):
        if column not in frame:
            frame[column] = math.nan
    frame["lost"] = frame["acked"].isna()
    frame["via"] = frame["via"].map({1: "r1", 2: "r2"})
    return _delays(frame, clock_offset_s)


def _delays(frame: pd.DataFrame, clock_offset_s: float) -> pd.DataFrame:
    """Add the three end-to-end delays (see the module docstring) and the offset estimate."""
    t1, t2, t3, t4 = frame["sent"], frame["dest_rx"], frame["dest_tx"], frame["acked"]
    frame["rtt_s"] = t4 - t1
    frame["hold_s"] = t3 - t2                         # d's own time between arrival and ACK
    frame["rtt_half_s"] = frame["rtt_s"] / 2
    frame["same_clock_s"] = (t2 - clock_offset_s) - t1
    offsets = ((t2 - t1) + (t3 - t4)) / 2             # NTP (RFC 5905 §8): θ per exchange
    estimate = statistics.median(offsets.dropna()) if offsets.notna().any() else math.nan
    frame["offset_estimate_s"] = estimate
    frame["offset_est_s"] = (t2 - t1) - estimate
    frame["clock_offset_s"] = clock_offset_s
    return frame


def _spec(delay, jitter) -> LinkSpec:
    return LinkSpec.parse(delay=delay, jitter=jitter)


def delay_sweep(configs, *, messages: int = 1000, source_link: LinkSpec | None = None,
                clock_offset_s: float = 0.0, ack_timeout_s: float = 2.0, backend: str = "auto",
                seed: int = 0, out: str | Path | None = None, progress: bool = True) -> pd.DataFrame:
    """Every (delay, jitter) in ``configs`` on the four UDP links, ``messages`` each; one row per
    message with ``emulated_delay_s``, ``jitter_s`` and the ``pred_*`` of its configuration.
    ``out``: a folder for messages.parquet/.csv and links.json; a configuration already there
    is loaded, not run again (delete the folder to measure afresh). A configuration that
    cannot run (e.g. no root for five namespaces) is one row with its ``error`` and the
    prediction, so the tables still show the model beside the document."""
    folder = Path(out) if out is not None else None
    done = pd.read_parquet(folder / "messages.parquet") if folder and (folder / "messages.parquet").exists() \
        else pd.DataFrame()
    described = json.loads((folder / "links.json").read_text()) if folder and (folder / "links.json").exists() \
        else {}
    plan = []
    for delay, jitter in configs:
        spec = _spec(delay, jitter)
        topology = broker_network(source_link or LinkSpec(), spec, spec)
        key = units.format_time(spec.forward.delay_s) + (f" ± {units.format_time(spec.forward.jitter_s)}"
                                                         if spec.forward.jitter_s else "")
        plan.append((key, spec, topology))
    chosen = links.backend_for([l.spec for _, _, t in plan for l in t.links], backend)
    source = (source_link or LinkSpec()).describe()
    if not done.empty and "source_link" in done:         # only what was measured with this s–b link
        done = done[done["source_link"] == source]
    if not done.empty:
        done = done[done["config"].isin([key for key, _, _ in plan])]
        if "error" in done:               # a configuration that failed before is tried again
            done = done[done["error"].isna()]
    todo = [p for p in plan if done.empty or p[0] not in set(done["config"])]
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm
        bar = tqdm(total=messages * len(todo), desc="messages", unit="msg")
    frames = [done] if not done.empty else []
    failed = {}
    try:
        for key, spec, topology in todo:
            if bar is not None:
                bar.set_postfix_str(key, refresh=False)
            try:
                frame, info = run_broker_network(topology, messages=messages, ack_timeout_s=ack_timeout_s,
                                                 clock_offset_s=clock_offset_s, backend=chosen, seed=seed, bar=bar)
            except WirelabError as err:          # recorded with its reason; the sweep goes on
                failed[key] = str(err)
                print(f"{key}: not measured: {err}")
                # one row that says so, with the prediction: tables and plots show the model for it
                frames.append(pd.DataFrame([{"config": key, "source_link": source,
                                             "emulated_delay_s": spec.forward.delay_s,
                                             "jitter_s": spec.forward.jitter_s, "seq": None, "via": None,
                                             "lost": False,
                                             **{f"{method}_s": math.nan for method in METHODS},
                                             **predict_route(topology), "backend": chosen,
                                             "error": str(err)}]))
                continue
            frame.insert(0, "config", key)
            frame["error"] = None
            frame["source_link"] = source
            frame.insert(1, "emulated_delay_s", spec.forward.delay_s)
            frame.insert(2, "jitter_s", spec.forward.jitter_s)
            frame["backend"] = info["backend"]
            # how late the userspace link delivered at worst (it records it; kernel qdiscs do not)
            lateness = [c.get("late_s_max") for c in (info.get("counters") or {}).values() if isinstance(c, dict)]
            frame["link_late_max_s"] = max([v for v in lateness if v is not None], default=math.nan)
            for name, value in predict_route(topology).items():
                frame[name] = value
            frames.append(frame)
            described[key] = {k: info.get(k) for k in ("backend", "link", "tc_commands", "tc_note", "counters")}
            if folder is not None:              # saved after every configuration: nothing measured is lost
                _save(folder, pd.concat(frames, ignore_index=True), described)
    finally:
        if bar is not None:
            bar.close()
    if not frames:
        raise ExperimentError("nothing to measure: no configuration given", "give configs=[(delay, jitter)]")
    out = pd.concat(frames, ignore_index=True)
    if folder is not None and failed:
        _save(folder, out, described)
    out.attrs["failed"] = failed
    return out


def _save(folder: Path, frame: pd.DataFrame, described: dict) -> None:
    import io
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    atomic_write(folder / "messages.parquet", buffer.getvalue())
    atomic_write(folder / "messages.csv", frame.to_csv(index=False).encode())
    atomic_write(folder / "links.json", json.dumps(described, indent=1, default=str).encode())


def summarize_delays(frame: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """One row per (configuration, method): mean ± Student-t CI over the messages that came
    back, n, lost, and the prediction for that method (``pred_s``)."""
    rows = []
    for (key, delay, jitter), group in frame.groupby(["config", "emulated_delay_s", "jitter_s"], sort=False):
        back = group[~group["lost"]]
        for method, label in METHODS.items():
            mean, std, half, n = confidence_interval(back[f"{method}_s"], level)
            pred = group["pred_rtt_half_s" if method == "rtt_half" else "pred_one_way_s"].iloc[0]
            late = group["link_late_max_s"].iloc[0] if "link_late_max_s" in group else math.nan
            errors = group["error"].dropna() if "error" in group else pd.Series([], dtype=object)
            rows.append({"config": key, "emulated_delay_s": delay, "jitter_s": jitter, "method": method,
                         "link_late_max_s": late, "error": errors.iloc[0] if len(errors) else None,
                         "label": label, "mean_s": mean, "ci_s": half, "std_s": std, "n": n,
                         "lost": int(group["lost"].sum()), "pred_s": pred, "measured_minus_pred_s": mean - pred})
    return pd.DataFrame(rows)


def delay_table(summary: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """For people: one row per configuration, milliseconds, measured "mean ± CI" per method, the
    prediction, measured − predicted, and (with ``reference``, e.g. ``seed003_delay``) the
    paper's figure beside ours and how far it is from the prediction for the same links."""
    def cell(mean, ci):
        return "—" if mean != mean else f"{mean * 1e3:.2f}" + (f" ± {ci * 1e3:.2f}" if ci == ci else "")
    rows = []
    for (key, delay, jitter), part in summary.groupby(["config", "emulated_delay_s", "jitter_s"], sort=False):
        by = part.set_index("method")
        row = {"link delay": key, "messages": int(by["n"].max()), "lost": int(by["lost"].max())}
        for method in METHODS:
            row[f"{METHODS[method]} (ms)"] = cell(by.loc[method, "mean_s"], by.loc[method, "ci_s"])
        pred = by.loc["same_clock", "pred_s"]
        row["predicted one-way (ms)"] = round(pred * 1e3, 3)
        row["measured − predicted (ms)"] = round((by.loc["same_clock", "mean_s"] - pred) * 1e3, 3)
        if "link_late_max_s" in part:
            row["link's worst lateness (ms)"] = round(part["link_late_max_s"].iloc[0] * 1e3, 2)
        if reference is not None:
            paper = reference[(reference["emulated_delay_ms"] - delay * 1e3).abs() < 1e-9]
            figure = float(paper["measured_e2e_delay_ms"].iloc[0]) if len(paper) else math.nan
            row["document 003 (ms)"] = figure
            row["document − predicted (ms)"] = round(figure - pred * 1e3, 3)
        if part["error"].notna().any():
            row["not measured"] = part["error"].dropna().iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)
