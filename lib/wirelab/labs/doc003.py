"""Document 003 (METU CENG 435): end-to-end delay of 32-byte messages across five nodes.

s —TCP— b —UDP— r1, r2 —UDP— d: the broker sends each message to r1 or r2 in
turn, the destination's ACK comes back the same way, one message in flight. The
document emulated 0, 1, 20 and 60 ms (± 5 ms) on the UDP links, sent 1000
messages per configuration and reported RTT/2 with a 95 % interval (its table:
``seed003_delay``). Notebook ``09-five-node-delay`` redoes it::

    lab = doc003.sweeps(quick=QUICK)               # the configurations as one sweep of the runner
    frame = lab["delays"].run(OUT)                 # one row per message (labs.broker's engine)
    summary = doc003.summarize_delays(frame)       # per configuration and method: mean ± CI, prediction
    doc003.delay_table(summary, doc003.reference())

The network runs on the one runner with this lab's engine (``labs.broker``: the node
programs, the three delays, the path prediction); here are the document's values, its
table, the tables and figures that set them side by side, and its exercises.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .. import link as links
from ..experiment import Experiment, load
from ..experiment.stats import confidence_interval
from ..model import Hop, mean_jittered_delay, path_delay
from ..reference import load_reference
from .broker import METHODS, BrokerEngine, predict_route, route_hops, run_across
from .lab import Exercise, Lab, Link, Sweep, values

__all__ = ["EXERCISES", "exercises", "sweeps", "predict_route", "route_hops", "reference", "load_delays", "run_once", "summarize_delays", "delay_table",
           "plot_end_to_end", "plot_delay_distribution", "widest_interval", "DOC_Z", "FULL", "QUICK"]

#: The document's values: delay and jitter on every UDP link, messages per configuration, the
#: s–b link (``LinkSpec.parse`` keywords; it had none), d's clock offset (about 4 s), the time
#: the source waits for each ACK before it counts the message lost.
FULL = {"configs": [["0ms", "0ms"], ["1ms", "5ms"], ["20ms", "5ms"], ["60ms", "5ms"]], "messages": 1000,
        "source_link": {}, "clock_offset": 4.0, "ack_timeout": 2.0, "backend": "auto"}
QUICK = {"messages": 40}
#: The document's interval: "we focused on the confidence interval of %95 ... and found Z value
#: to be 1.95" (a normal quantile, where Student's t over the messages is what ``ci_s`` uses).
DOC_Z = 1.95


def sweeps(*, quick: bool = False, **given) -> Lab:
    """``delays``: every configuration, ``messages`` each, on the engine ``broker``. Values not
    given (or None) are the document's (``FULL``; ``QUICK`` in quick mode)."""
    v = values(FULL, QUICK, quick, given)
    exp = Experiment("09-five-node", engine="broker", workload="echo", echo=v["messages"], rate=None,
                     max_wait=v["ack_timeout"], reps=1, backend=v["backend"],
                     cases=[{"delay": delay, "jitter": jitter} for delay, jitter in v["configs"]])
    # a configuration that failed (e.g. no root for five namespaces) is tried again on the next run
    delays = Sweep(exp, {"source_link": v["source_link"], "clock_offset_s": v["clock_offset"]}, retry_failed=True,
                   engine=BrokerEngine)
    return Lab({"delays": delays}, v)


def reference() -> pd.DataFrame:
    """The document's table: measured end-to-end delay (ms) per emulated delay."""
    return load_reference("seed003_delay")


def load_delays(folder: str | Path) -> pd.DataFrame:
    """The messages of a sweep saved in ``folder``: the runner's table, or the messages.parquet
    a sweep of this lab wrote before it ran on the one runner."""
    folder = Path(folder)
    if not (folder / "results.parquet").exists() and (folder / "messages.parquet").exists():
        return pd.read_parquet(folder / "messages.parquet")
    return load(folder)


def run_once(topology, *, messages: int = 1000, ack_timeout_s: float = 2.0, clock_offset_s: float = 0.0,
             backend: str = "auto", seed: int | None = None) -> tuple[pd.DataFrame, dict]:
    """One network outside a sweep (a topology no ``Experiment`` axis describes, e.g. a delay on
    the way there only): its messages, and the link's ``describe()`` after it closed."""
    with links.open(topology, backend=backend, seed=seed, name="doc3") as net:
        frame = run_across(net, messages=messages, ack_timeout_s=ack_timeout_s, clock_offset_s=clock_offset_s)
    return frame, net.describe()


def summarize_delays(frame: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """One row per (configuration, method): mean ± Student-t CI over the messages that came
    back (``ci_s``), the document's own interval Z · s / √n with Z = 1.95 (``ci_doc_s``; with
    1000 messages the two differ by under 1 %), n, lost, and the prediction (``pred_s``)."""
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
                         "ci_doc_s": DOC_Z * std / math.sqrt(n) if n > 1 else math.nan,
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
        row["RTT/2 ± 1.95·s/√n, the document's interval (ms)"] = cell(by.loc["rtt_half", "mean_s"],
                                                                       by.loc["rtt_half", "ci_doc_s"])
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
            if "error_bar" in paper and len(paper):
                row["document's error bar"] = paper["error_bar"].fillna("").iloc[0]
        if part["error"].notna().any():
            row["not measured"] = part["error"].dropna().iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)


def widest_interval(summary: pd.DataFrame, reference: pd.DataFrame | None = None,
                    method: str = "rtt_half") -> pd.DataFrame:
    """Which configuration's interval is widest, ours (``method``, the document's RTT/2) beside
    the document's reading of its figure 1 ("error margin in no delay case is larger than the
    others", ``error_bar`` in ``seed003_delay``): one row per configuration, widest first."""
    part = summary[summary["method"] == method]
    out = pd.DataFrame({"link delay": part["config"], "emulated_delay_ms": part["emulated_delay_s"] * 1e3,
                        "interval_ms": part["ci_doc_s"] * 1e3, "std_ms": part["std_s"] * 1e3})
    out["widest here"] = out["interval_ms"] == out["interval_ms"].max()
    if reference is not None and "error_bar" in reference:
        doc = reference.set_index("emulated_delay_ms")["error_bar"].fillna("")
        out["document"] = [doc.get(d, "") for d in out["emulated_delay_ms"]]
    return out.sort_values("interval_ms", ascending=False).reset_index(drop=True)


# ---------------------------------------------------------------- figures
_MARKERS = {"rtt_half": "o", "same_clock": "s", "offset_est": "^"}


def plot_end_to_end(summary: pd.DataFrame, reference: pd.DataFrame | None = None, *, ax=None,
                    title: str = "End-to-end delay of a 32-byte message"):
    """x: the delay emulated on each UDP link; y: end-to-end delay (ms). Points with error bars:
    measured means ± 95 % CI per method (slightly offset so they do not hide each other);
    line: ``pred_s`` (one-way path prediction); crosses: ``reference``'s ``measured_e2e_delay_ms``
    against ``emulated_delay_ms`` (a paper's numbers: not ours)."""
    # start-up: matplotlib only when plot_end_to_end() runs
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(7, 4))[1]
    if summary.empty:
        ax.text(0.5, 0.5, "nothing measured", ha="center", va="center", transform=ax.transAxes)
        return ax
    delays = sorted(summary["emulated_delay_s"].unique())
    step = (max(delays) - min(delays) or 1.0) * 1e3 * 0.008
    for i, (method, part) in enumerate(summary.groupby("method", sort=False)):
        x = part["emulated_delay_s"] * 1e3 + (i - 1) * step
        ax.errorbar(x, part["mean_s"] * 1e3, yerr=part["ci_s"].fillna(0) * 1e3, fmt=_MARKERS.get(method, "o"),
                    capsize=3, markersize=5, label=f"measured: {part['label'].iloc[0]} (mean ± 95 % CI)")
    one_way = summary[summary["method"] == "same_clock"].sort_values("emulated_delay_s")
    ax.plot(one_way["emulated_delay_s"] * 1e3, one_way["pred_s"] * 1e3, "-", color="0.3",
            label="predicted: store-and-forward path (model.path_delay)")
    if reference is not None and not reference.empty:
        ax.plot(reference["emulated_delay_ms"], reference["measured_e2e_delay_ms"], "x", color="C3",
                markersize=9, mew=2, label="document 003 (RTT/2, its own network)")
    ax.set(xlabel="delay on each UDP link (ms)", ylabel="end-to-end delay (ms)", title=title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def plot_delay_distribution(frame: pd.DataFrame, method: str = "same_clock", *, ax=None,
                            title: str = "Delay of every message (one clock)"):
    """The empirical CDF of each configuration's per-message delay, its prediction dashed:
    jitter on two hops shows as a ramp (the sum of two uniform draws), not a step."""
    # start-up: matplotlib only when plot_delay_distribution() runs
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(7, 3.5))[1]
    column = f"{method}_s"
    for i, (key, part) in enumerate(frame[~frame["lost"]].groupby("config", sort=False)):
        values = part[column].sort_values() * 1e3
        color = f"C{i % 10}"
        ax.step(values, (pd.RangeIndex(1, len(values) + 1) / len(values)), where="post", color=color,
                label=f"measured {key} ({len(values)} messages)")
        ax.axvline(part["pred_one_way_s"].iloc[0] * 1e3, color=color, linestyle="--", linewidth=1)
    ax.set(xlabel="end-to-end delay (ms)", ylabel="fraction of messages ≤ x",
           title=title + "; dashed: predicted mean")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def exercises(link: Link | None = None) -> dict[str, Exercise]:
    """The lab's exercises (``wirelab.exercises.check``); on ``link`` (a student's: its one-way delay on
    each delayed link, its rate for store-and-forward) where one depends on a link, else on the
    document's numbers (20 ms on b–r1 and r1–d; 10 Mbit/s, 1 ms)."""
    delay = link.delay_s if link else 0.02
    rate, propagation = (link.rate_bps, link.delay_s) if link else (10e6, 0.001)
    return {
        "path_delay_doc003": Exercise(
            f"One-way delay (ms) of a 32-byte message s → b → r1 → d when b–r1 and r1–d each add {delay * 1e3:g} ms "
            "and s–b nothing (no rate limits, processing not counted)?",
            lambda: path_delay(32, [Hop(), Hop(delay_s=delay), Hop(delay_s=delay)]) * 1e3, 0.001,
            "sum the nodal delays of the three hops (Kurose & Ross §1.4)"),
        "jitter_mean_1ms": Exercise(
            "netem 'delay 1ms 5ms' draws each delay uniformly from −4 to 6 ms and sends the negative ones "
            "at once. Mean delay it adds (ms)?",
            lambda: mean_jittered_delay(0.001, 0.005) * 1e3, 0.01,
            "the mean of max(D + U, 0): (D + J)² / 4J while D < J"),
        "store_forward_10mbit": Exercise(
            f"A 1500-byte frame crosses three store-and-forward links of {rate / 1e6:g} Mbit/s, "
            f"{propagation * 1e3:g} ms propagation each. End-to-end delay (ms)?",
            lambda: path_delay(1500, [(rate, propagation)] * 3) * 1e3, 0.001,
            f"each hop: 8·1500/{rate:g} s to transmit, plus {propagation * 1e3:g} ms"),
    }


#: The exercises on the document's own numbers.
EXERCISES = exercises()
