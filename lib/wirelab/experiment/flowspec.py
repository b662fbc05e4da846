"""Several flows on one link, as written: ``tcp streams=4 + udp rate=1mbit``.

A flow is written as its protocol and ``key=value`` words (defaults left out);
flows of one setting are joined by `` + ``, settings by commas or a list:

    tcp                          a→b for the setting's time, with the setting's engine
    tcp streams=4                four parallel streams (iperf3 -P 4; wirelab: four connections)
    udp rate=1mbit packet=1470   offered load per stream (UDP); for TCP a cap (iperf3 -b)
    tcp dir=b>a start=2s time=5s engine=iperf3 cc=cubic window=64KB
    ping interval=20ms           a probe: a small UDP echo every 20 ms (wirelab's echo rounds), whose
                                 round trips show the queue the other flows build (latency under load)

Only the description lives here (parsed once, when the ``Setting`` is made); the
engine that runs the flows side by side on one link is ``flows``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import units
from ..errors import UsageError

__all__ = ["Flow", "canonical", "flows_of", "flow_setting", "DIRECTIONS"]

DIRECTIONS = ("a>b", "b>a")
def _rate(bps: float) -> str:
    for factor, unit in ((1e9, "gbit"), (1e6, "mbit"), (1e3, "kbit")):
        if bps >= factor:
            return f"{bps / factor:g}{unit}"
    return f"{bps:g}bit"


def _whole(value) -> int:
    number = units.parse_size(value)
    if number != int(number) or number < 1:
        raise UsageError(f"{value!r} is not a whole number ≥ 1", "e.g. streams=4")
    return int(number)


#: word → (Flow field, parser, writer)
_KEYS = {
    "engine": ("engine", str, str), "dir": ("direction", str, str),
    "start": ("start_s", units.parse_time, lambda v: f"{v:g}s"),
    "time": ("time_s", units.parse_time, lambda v: f"{v:g}s"),
    "rate": ("offered_bps", units.parse_rate, _rate), "packet": ("packet_bytes", _whole, str),
    "streams": ("streams", _whole, str), "cc": ("cc", str, str),
    "window": ("window_bytes", units.parse_size, lambda v: str(int(v)) if float(v).is_integer() else f"{v:g}"),
    "interval": ("interval_s", units.parse_time, lambda v: f"{v:g}s"),
}
#: A probe's echo payload when ``packet`` is not given (ping's 56 B + 8 B ICMP header).
PING_PACKET = 64
#: A probe's rounds when ``interval`` is not given (flent's RRUL pings every 200 ms; 20 ms
#: shows a queue filling within a round trip or two).
PING_INTERVAL_S = 0.02
#: How long a probe waits for its last rounds' replies (a round is lost after that).
PING_WAIT_S = 0.5


@dataclass(frozen=True)
class Flow:
    """One flow of a setting (see the module docstring for how it is written)."""
    proto: str = "tcp"
    engine: str | None = None          # None: the setting's engine
    direction: str = "a>b"
    start_s: float = 0.0               # seconds after the run's first flow
    time_s: float | None = None        # None: the setting's time
    offered_bps: float | None = None   # per stream
    packet_bytes: int | None = None
    streams: int = 1
    cc: str | None = None
    window_bytes: float | None = None
    interval_s: float | None = None    # a probe's: seconds between echo rounds

    def __post_init__(self):
        if self.proto not in ("tcp", "udp", "ping"):
            raise UsageError(f"a flow is tcp, udp or ping, not {self.proto!r}",
                             "e.g. 'tcp', 'udp rate=1mbit' or 'ping interval=20ms'")
        if self.interval_s is not None and self.proto != "ping":
            raise UsageError("interval= is a probe's (ping) only", "e.g. 'ping interval=20ms'")
        if self.interval_s is not None and not 0.001 <= self.interval_s <= 1.0:
            raise UsageError(f"a probe's interval is 1 ms to 1 s, not {self.interval_s:g} s", "e.g. interval=20ms")
        if self.direction not in DIRECTIONS:
            raise UsageError(f"flow direction {self.direction!r}", "use dir=a>b or dir=b>a")
        if self.streams < 1:
            raise UsageError(f"a flow has at least one stream, not {self.streams}", "e.g. streams=2")

    @classmethod
    def parse(cls, text: str) -> "Flow":
        words = str(text).split()
        if not words:
            raise UsageError("an empty flow", "e.g. 'tcp' or 'udp rate=1mbit'")
        values: dict = {"proto": words[0].lower()}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or key not in _KEYS:
                raise UsageError(f"cannot read {word!r} in flow {text!r}",
                                 f"write key=value with a key among {', '.join(_KEYS)}")
            name, parse, _ = _KEYS[key]
            values[name] = parse(value)
        return cls(**values)

    @property
    def text(self) -> str:
        """The canonical way to write this flow (what the results table shows)."""
        words = [self.proto]
        default = Flow(self.proto)
        for key, (name, _, write) in _KEYS.items():
            value = getattr(self, name)
            if value != getattr(default, name):
                words.append(f"{key}={write(value)}")
        return " ".join(words)


def canonical(value) -> str:
    """One setting's flows (text with `` + ``, a Flow, or a list of them) → canonical text."""
    if isinstance(value, Flow):
        items = [value]
    elif isinstance(value, str):
        items = [part for part in value.split("+")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise UsageError(f"cannot read flows from {value!r}", "e.g. flows='tcp + udp rate=1mbit'")
    flows = [item if isinstance(item, Flow) else Flow.parse(item) for item in items]
    if not flows:
        raise UsageError("a setting with flows needs at least one", "e.g. flows='tcp + tcp'")
    return " + ".join(f.text for f in flows)


def flows_of(setting) -> list[Flow]:
    """The flows of a setting (its ``flows`` column), parsed."""
    text = setting["flows"]
    return [Flow.parse(part) for part in text.split("+")] if text else []


def flow_setting(setting, flow: Flow, *, streams: int | None = None):
    """The single-flow ``Setting`` an engine runs for ``flow`` on ``setting``'s link."""
    params = dict(setting.params)
    time_s = flow.time_s if flow.time_s is not None else setting.get("time_s", 10.0)
    if flow.proto == "ping":
        interval = flow.interval_s or PING_INTERVAL_S
        params.update(proto="udp", time_s=time_s, offered_bps=None, packet_bytes=flow.packet_bytes or PING_PACKET,
                      streams=1, reverse=None, size_bytes=None, cc=None, window_bytes=None,
                      echo_count=max(1, round(time_s / interval)), echo_interval_s=interval,
                      max_wait_s=PING_WAIT_S)
        return replace(setting, params=params, workload="echo", engine="wirelab")
    udp_load = flow.proto == "udp" and flow.offered_bps
    params.update(proto=flow.proto, time_s=time_s, offered_bps=flow.offered_bps,
                  packet_bytes=flow.packet_bytes, cc=flow.cc if flow.cc is not None else params.get("cc"),
                  window_bytes=flow.window_bytes if flow.window_bytes is not None else params.get("window_bytes"),
                  streams=flow.streams if streams is None else streams,
                  reverse=flow.direction == "b>a" or None, size_bytes=None)
    return replace(setting, params=params, workload="load" if udp_load else "time",
                   engine=flow.engine or setting.engine)
