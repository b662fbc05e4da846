"""Document 003's network as an engine of the one runner: 32-byte messages s → b → r1/r2 → d and back.

    exp = Experiment("five-node", engine="broker", workload="echo", echo=1000, rate=None,
                     max_wait="2s", cases=[{"delay": "0ms"}, {"delay": "20ms", "jitter": "5ms"}])
    df = run(exp, engine=BrokerEngine(clock_offset_s=4.0))    # one row per message

(The lab of document 003, ``doc003``, declares its sweep with this engine.)

Each setting's link (its delay ± jitter, rate, loss) is put on every UDP link of
``broker_network`` (b–r1, b–r2, r1–d, r2–d; s–b as ``source_link`` says): the
engine's ``topology``, which the runner opens like any link, on the plan's backend
(five hosts need namespaces). ``run`` starts the node programs of
``wirelab.transfer.broker`` on their hosts and sends ``echo`` messages from s, each
waiting at most ``max_wait`` for its ACK; ``rows`` gives one row per message.

End-to-end delay three ways (the ``*_s`` columns):

* ``rtt_half``   (ACK back at s − sent) / 2: the document's method, exact only
                 when the way back takes as long as the way there;
* ``same_clock`` arrival at d − sent: the namespaces of one machine share one
                 clock, so this is the true one-way delay (d's programmed offset,
                 known here, is taken off first);
* ``offset_est`` arrival at d − sent − θ̂, where θ̂ is the NTP-style estimate of
                 d's clock offset, ((t2 − t1) + (t3 − t4)) / 2 per message, median
                 over the run: what one does when the clocks differ (document 003's
                 were 4 s apart; ``clock_offset_s`` plays that here).

The prediction (``pred_one_way_s``) is ``wirelab.model.path_delay`` along the
route: per hop the transmission of the message's frame (TCP on s–b, UDP
after) at the link's rate, plus its delay (jitter counted with its mean);
processing and queueing are not modelled (one message in flight: no queue).
``pred_transfer_time_s``, every message's predicted round trip, sets the run's deadline.
"""
from __future__ import annotations

import json
import math
import select
import statistics
import sys
import time

import pandas as pd

from .. import units
from ..errors import ExperimentError, TransferError
from ..link import LinkSpec, broker_network
from ..model import Hop, HeaderStack, path_delay
from ..transfer.broker import MESSAGE_BYTES
from ..wire.headers import TCP_TIMESTAMPS
from ..experiment.status import decide

__all__ = ["BrokerEngine", "run_across", "route_hops", "predict_route", "config_label", "PORT", "METHODS"]

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


def run_across(net, *, messages: int = 1000, ack_timeout_s: float = 2.0, clock_offset_s: float = 0.0,
               deadline: float | None = None) -> pd.DataFrame:
    """The node programs on the hosts of ``net`` (an open five-node link), ``messages`` messages
    from s; one row per message. Every program started here stops when ``net`` closes.
    ``deadline`` (``time.monotonic()``): by then every message is back or the run failed;
    unset, each message may wait out its ACK (a one-off run, outside a sweep's plan)."""
    if messages < 1:
        raise ExperimentError(f"messages must be at least 1, not {messages}", "e.g. echo=1000")
    if deadline is None:
        deadline = time.monotonic() + READY_TIMEOUT_S + messages * (ack_timeout_s + 0.05) + 30
    rows = []
    ready_by = min(deadline, time.monotonic() + READY_TIMEOUT_S)
    listen = f"0.0.0.0:{PORT}"       # inside each namespace: its own links only
    d = net.popen("d", _argv("destination", listen, "--clock-offset", repr(clock_offset_s)))
    started = [(d, "destination")]
    for r in ("r1", "r2"):
        started.append((net.popen(r, _argv("router", listen, "--next", f"{net.address('d', r)}:{PORT}")),
                        f"router {r}"))
    routers = [f"{net.address(r, 'b')}:{PORT}" for r in ("r1", "r2")]
    started.append((net.popen("b", _argv("broker", listen, "--routers", *routers)), "broker"))
    for proc, what in started:
        _wait_ready(proc, what, ready_by)
    source = net.popen("s", _argv("source", f"{net.address('b', 's')}:{PORT}", "--count", str(messages),
                                  "--timeout", repr(ack_timeout_s)))
    while len(rows) < messages and time.monotonic() < deadline:
        ready, _, _ = select.select([source.stdout], [], [], min(1.0, max(deadline - time.monotonic(), 0)))
        if not ready:
            continue
        line = source.stdout.readline()
        if not line:
            break                                     # the source ended
        rows.append(json.loads(line))
    if len(rows) < messages:
        source.kill()
        why = source.stderr.read().strip() if source.poll() is not None else ""
        raise TransferError(f"the source finished {len(rows)} of {messages} messages"
                            + (f": {why}" if why else " before the run's deadline"),
                            "check the links are up, or give the sweep a longer timeout")
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


def config_label(spec: LinkSpec) -> str:
    """A configuration as people say it: ``20 ms ± 5 ms`` (the delay and jitter of the UDP links)."""
    return units.format_time(spec.forward.delay_s) + (f" ± {units.format_time(spec.forward.jitter_s)}"
                                                      if spec.forward.jitter_s else "")


class BrokerEngine:
    """The five-node network of document 003 (see the module docstring). ``source_link``: the s–b
    link (a ``LinkSpec``, or ``LinkSpec.parse`` keywords); ``clock_offset_s``: how far d's clock is off."""
    name = "broker"
    keeps_links = False              # each configuration on a network built for it
    measure = "messages"

    def __init__(self, *, source_link: LinkSpec | dict | None = None, clock_offset_s: float = 0.0):
        self.source_link = LinkSpec.parse(**source_link) if isinstance(source_link, dict) else \
            source_link or LinkSpec()
        self.clock_offset_s = float(clock_offset_s)

    def info(self) -> dict:
        return {"programs": "wirelab.transfer.broker (source, broker, routers, destination)",
                "source_link": self.source_link.describe(), "clock_offset_s": self.clock_offset_s}

    def topology(self, setting):
        return broker_network(self.source_link, setting.link, setting.link)

    def cannot_carry(self, setting, link) -> str | None:
        return None                  # TCP on s–b, UDP after it: the topology says so

    def predict(self, setting) -> dict:
        route = predict_route(self.topology(setting))
        return {**route, "pred_transfer_time_s": _messages(setting) * 2 * route["pred_rtt_half_s"]}

    def run(self, setting, link, *, deadline: float, seed: int = 0, workdir=None, capture=None) -> dict:
        frame = run_across(link, messages=_messages(setting), ack_timeout_s=setting.get("max_wait_s", 2.0),
                           clock_offset_s=self.clock_offset_s, deadline=deadline)
        return {"messages": frame.to_dict("records"), "lost_messages": int(frame["lost"].sum())}

    def rows(self, setting, record: dict | None, row: dict) -> list[dict]:
        """One row per message, with its configuration, the s–b link and the link's worst lateness
        (the userspace link records it; kernel qdiscs do not); one row saying why when the run failed."""
        messages = (record or {}).pop("messages", None)
        if record is not None:
            status, error = decide({**record, "messages": messages}, elapsed_s=row.get("elapsed_s"),
                                   deadline_s=row.get("deadline_s"), measure=self.measure)
            row.update(status=status, error=error)
        lateness = [v for k, v in row.items() if k.startswith("link_counters_") and k.endswith("_late_s_max")
                    and v is not None]
        head = {**row, "config": config_label(setting.link), "emulated_delay_s": setting.link.forward.delay_s,
                "jitter_s": setting.link.forward.jitter_s, "source_link": self.source_link.describe(),
                "link_late_max_s": max(lateness, default=math.nan), "clock_offset_s": self.clock_offset_s}
        if not messages or row["status"] != "ok":
            return [{**head, "seq": None, "via": None, "lost": False, **{f"{m}_s": math.nan for m in METHODS}}]
        return [{**head, **message} for message in messages]


def _messages(setting) -> int:
    return int(setting.get("echo_count", 1000))
