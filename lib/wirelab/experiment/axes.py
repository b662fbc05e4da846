"""The axes of an experiment: each parameter as people type it (``"10mbit"``, ``"20ms"``, ``"1%"``),
its results column and its parser (SI floats inside), the link a setting's columns describe, and
the host pairs of a sweep across machines. ``spec`` builds experiments and settings from them."""
from __future__ import annotations

from collections.abc import Iterable

from .. import transports, units
from ..errors import UsageError
from ..link import LinkSpec
from ..model.headers import WIRES
from .flowspec import canonical

__all__ = ["AXES", "WORKLOADS", "PROTOCOLS", "LATER_AXES", "OPTIONAL_AXES", "OPTION_AXES", "column_for", "values_of",
           "link_spec", "host_pairs"]

#: every transport's name (``wirelab.transports``), in the kit's order
PROTOCOLS = transports.names()
#: file: send ``size`` bytes; time: bulk for ``time`` s; load: offered ``offered``
#: bit/s in ``packet``-byte datagrams; echo: ``echo`` request/response round trips;
#: scenario: a peer misbehaves as ``scenario`` says (document 001 §5, engine ``peers``).
WORKLOADS = ("file", "time", "load", "echo", "scenario")


def _text(value: object) -> str:
    return str(value)


def _flows(value: object) -> str:
    """Several flows on one link (``flowspec``): their canonical text, e.g. ``tcp + udp rate=1mbit``."""
    return canonical(value)


def _wire(value: object) -> str | None:
    """A link's framing: "real" (a cable's 38 B a frame) or "emulated" (the default, kept as
    None so that settings saved before the axis existed keep their ``setting_id``)."""
    if value not in WIRES:
        raise UsageError(f"unknown wire {value!r}", "use wire='emulated' (+14 B a frame) or wire='real' (+38 B)")
    return None if value == "emulated" else value


def _flag(value: object) -> bool | None:
    """True, or None for False (unset: older settings keep their ``setting_id``)."""
    if isinstance(value, str):
        value = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(
            value.strip().lower(), value)
    if not isinstance(value, bool):
        raise UsageError(f"expected True or False, not {value!r}", "e.g. pppoe=True")
    return True if value else None


def _int(value: object) -> int:
    number = units.parse_size(value)
    if number != int(number):
        raise UsageError(f"{value!r} is not a whole number", "e.g. 1500")
    return int(number)


#: axis name → (results column, parser). Columns carry their unit in the name.
AXES: dict[str, tuple[str, object]] = {
    "proto": ("proto", _text),
    # the workload
    "size": ("size_bytes", units.parse_size),
    "time": ("time_s", units.parse_time),
    "offered": ("offered_bps", units.parse_rate),
    "packet": ("packet_bytes", _int),
    "echo": ("echo_count", _int),
    # the link
    "rate": ("rate_bps", units.parse_rate),
    "rate_reverse": ("rate_reverse_bps", units.parse_rate),
    "delay": ("delay_s", units.parse_time),
    "jitter": ("jitter_s", units.parse_time),
    "delay_reverse": ("delay_reverse_s", units.parse_time),      # b → a; default: as delay
    "jitter_reverse": ("jitter_reverse_s", units.parse_time),    # b → a; default: as jitter
    "loss": ("loss", units.parse_fraction),
    "loss_reverse": ("loss_reverse", units.parse_fraction),
    "mtu": ("mtu", _int),
    "queue": ("queue_packets", _int),
    "qdisc": ("qdisc", _text),
    "wire": ("link_wire", _wire),
    "pppoe": ("pppoe", _flag),
    # socket options and protocol constants
    "window": ("window_bytes", units.parse_size),
    "sndbuf": ("sndbuf_bytes", units.parse_size),
    "rcvbuf": ("rcvbuf_bytes", units.parse_size),
    "read": ("read_bytes", _int),          # the receiver's bytes per recv (iperf 2's -l at the server)
    "cc": ("cc", _text),
    "max_wait": ("max_wait_s", units.parse_time),
    "max_retransmits": ("max_retransmits", _int),
    # how a timed run is measured
    "omit": ("omit_s", units.parse_time),
    # several flows at once on the one link (flows.py)
    "flows": ("flows", _flows),
    # what a misbehaving peer does (peers.py)
    "scenario": ("scenario", _text),
}



def _option_axes() -> dict[str, tuple[str, object]]:
    """Each transport's own options a sweep may vary (``transports.Option``): axis → (column, parser)."""
    out = {}
    for option in transports.options().values():
        if not option.sweep:
            continue
        if option.name in AXES or option.column in {c for c, _ in AXES.values()}:
            raise UsageError(f"a transport's option {option.name!r} (column {option.column}) is already an axis",
                             "give the option a name and a column of its own")
        out[option.name] = (option.column, option.parse)
    return out


#: The transports' own options, axes like the rest: a setting of a transport without the option
#: leaves its column out (``Experiment.settings``).
OPTION_AXES = _option_axes()
AXES.update(OPTION_AXES)
#: Columns of axes added in results format 2 (left out of ``setting_id`` while unset).
LATER_AXES = {"loss_reverse", "window_bytes", "omit_s", "flows", "link_wire", "pppoe", "rate_reverse_bps",
              "scenario", "read_bytes", "qdisc", "delay_reverse_s", "jitter_reverse_s"} | \
    {column for column, _ in OPTION_AXES.values()}
#: Columns only the sweeps that set them have (a table of transfers has no ``scenario``).
OPTIONAL_AXES = {"scenario", "qdisc", "delay_reverse_s", "jitter_reverse_s"} | \
    {column for column, _ in OPTION_AXES.values()}


def column_for(axis: str) -> str:
    """The results column of an axis: ``column_for("rate") == "rate_bps"``."""
    if axis in AXES:
        return AXES[axis][0]
    if axis in {c for c, _ in AXES.values()}:
        return axis
    raise UsageError(f"unknown experiment parameter {axis!r}", f"use one of {', '.join(AXES)}")


def values_of(axis: str, value: object) -> tuple:
    """One axis → a tuple of parsed values (None stays None: "not set")."""
    if value is None:
        return (None,)
    if isinstance(value, str) and "," in value:
        items: Iterable = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple, set, frozenset, range)):
        items = list(value)
    else:
        items = [value]
    parse = AXES[axis][1]
    parsed = tuple(None if v is None else parse(v) for v in items)
    if not parsed:
        raise UsageError(f"{axis} has no values", f"give at least one, e.g. {axis}=[...]")
    return parsed


def link_spec(params: dict) -> LinkSpec:
    """The link a setting's columns describe (parsed once, when the ``Setting`` is made).
    Delay and jitter apply in both directions unless ``delay_reverse_s`` / ``jitter_reverse_s``
    say otherwise (netem on one host delays one direction only); rate and loss too unless
    ``rate_reverse_bps`` or ``loss_reverse`` say otherwise; ``queue_packets`` counts full frames; ``link_wire`` and
    ``pppoe`` say how each frame is charged (``LinkSpec.wire``, ``LinkSpec.pppoe``)."""
    def get(name, default):
        value = params.get(name)
        return default if value is None else value
    spec = LinkSpec.parse(rate=params.get("rate_bps") or None,
                          rate_reverse=params.get("rate_reverse_bps") or params.get("rate_bps") or None,
                          delay=get("delay_s", 0),
                          jitter=get("jitter_s", 0), loss=get("loss", 0),
                          delay_reverse=get("delay_reverse_s", get("delay_s", 0)),
                          jitter_reverse=get("jitter_reverse_s", get("jitter_s", 0)),
                          loss_reverse=get("loss_reverse", get("loss", 0)),
                          mtu=None if params.get("mtu") is None else int(params["mtu"]),
                          wire=get("link_wire", "emulated"), pppoe=bool(params.get("pppoe")),
                          qdisc=params.get("qdisc") or None)
    queue = params.get("queue_packets")
    return spec if queue is None else spec.with_changes(queue_bytes=int(queue) * spec.frame_bytes)


def host_pairs(hosts) -> tuple[tuple[str, str], ...] | None:
    """``hosts`` as (a, b) pairs of worker names: from ``{"a": .., "b": ..}``, a list of those or of
    (a, b), or text ``"a=pc07,b=pc08"`` (pairs separated by ``;``). None stays None."""
    if hosts is None:
        return None
    if isinstance(hosts, str):
        hosts = [dict(part.split("=", 1) for part in pair.split(",") if "=" in part)
                 for pair in hosts.split(";") if pair.strip()]
    if isinstance(hosts, dict):
        hosts = [hosts]
    pairs = []
    for pair in hosts:
        a, b = (pair.get("a"), pair.get("b")) if isinstance(pair, dict) else \
            (tuple(pair) if len(pair) == 2 else (None, None))
        if not (isinstance(a, str) and isinstance(b, str) and a.strip() and b.strip() and a.strip() != b.strip()):
            raise UsageError(f"hosts {pair!r} are not two different workers a and b",
                             "e.g. hosts={'a': 'pc07', 'b': 'pc08'} or --hosts a=pc07,b=pc08")
        pairs.append((a.strip(), b.strip()))
    if not pairs:
        raise UsageError("hosts names no pair", "e.g. hosts={'a': 'pc07', 'b': 'pc08'}")
    return tuple(pairs)
