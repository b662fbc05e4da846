"""A transport is one module: its facts in one ``Transport``, found by name in one registry.

    >>> from wirelab import transports
    >>> transports.names()
    ('tcp', 'udp', 'udpr')
    >>> udpr = transports.get("udpr")
    >>> udpr.protocol_id, udpr.socket, udpr.retransmits, udpr.modes
    (3, 'udp', True, ('file',))

Each module of this package (``tcp.py``, ``udp.py``, ``udpr.py``, ...) holds one
``TRANSPORT = Transport(...)``: its wire (PPCB protocol id, the headers above IP),
its programs (sender, receiver), its model, the columns its runs add, what the
grader and the misbehaving peers may ask of it, its own options (``Option``) and
how plots show it. The rest of the kit asks the transport (``get(name).retransmits``,
``names()``) and never compares a transport's name, so a new transport is one new
module here (the registry discovers it with ``pkgutil``), its tests, the protocol
page and the notebooks.

A transport with an option of its own (Go-Back-N's window) declares it, and the CLI
(``--window``), ``Experiment(window_packets=[1, 4, 16])``, the predictions and the widgets
pick it up::

    WINDOW = Option("window_packets", parse=_whole, default=1, help="DATA in flight, unacknowledged",
                    column="window_packets", flag="--window", choices=(1, 2, 4, 8, 16))
    TRANSPORT = Transport(name="gbn", protocol_id=4, socket="udp", ..., options=(WINDOW,))

Its programs take ``window_packets=`` as a keyword; the udp server (``transfer/udp_server.py``) hands
a session to ``by_protocol_id(conn.protocol_id).receiver`` when CONN arrives. A flag a command has
already (``wirelab predict --window``: TCP's window in bytes) is shared: for this transport its
value goes to the option, parsed by the option's ``parse``.

Layering: this package sits just above ``wire`` and below every other floor, so
``model``, ``transfer``, ``capture``, ``grade``... may all import it. A transport's
module (or its package's ``__init__``) holds facts only and imports nothing above
``wire``; behaviour (the sender, the receiver, the model function) lives on the floors
above, or in the transport's own subpackage (``transports/gbn/sender.py``, which may
import ``model`` and ``transfer`` but which nothing imports), and is reached by ``Ref``
("module:function", imported on first use). tests/test_packaging.py checks both.
"""
from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import UsageError

__all__ = ["Transport", "Option", "Ref", "get", "names", "transports", "by_protocol_id", "protocol_ids", "protocol_names",
           "options", "option", "MEMBERS", "SOCKETS", "MODES"]

#: The sockets a transport can run over (its programs' ``socket.SOCK_STREAM`` or ``SOCK_DGRAM``).
SOCKETS = ("tcp", "udp")
#: Workloads a transport may support: file (PPCB moves a file), time (bulk for a time),
#: load (offered load), echo (request/response) — experiment/axes.py's WORKLOADS less "scenario".
MODES = ("file", "time", "load", "echo")


@dataclass(frozen=True)
class Ref:
    """A function on a higher floor named by ``"module:function"``, imported on first call.

    Why lazy: this package sits below ``model`` and ``transfer``; importing them here would
    make a circle (they ask the registry), and ``wirelab send`` must start fast.
    ``keywords`` are passed on every call (the udp program serves udp and udpr: ``proto``).
    """
    target: str
    keywords: Mapping[str, object] = field(default_factory=dict)

    def resolve(self) -> Callable:
        """The function itself (imported now)."""
        module, _, attribute = self.target.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **{**self.keywords, **kwargs})


@dataclass(frozen=True)
class Option:
    """A parameter a transport has and the others do not (Go-Back-N's ``window``), declared once.

    Picked up generically: ``wirelab send/serve/run/predict`` add ``flag``; ``Experiment`` takes
    ``name`` as an axis (a list sweeps it) stored in ``column``; predictions and the programs get
    it as the keyword ``name``; the notebooks' widgets offer ``choices``.
    """
    #: keyword in Python (``send(..., window_packets=8)``, ``Experiment(window_packets=[1, 4])``) and the axis
    #: name; it must
    #: not be a name the kit already uses for something else: experiment/axes.py's AXES ("window" there is
    #: TCP's socket window in bytes, ``--window`` of ``wirelab predict`` too) nor predict()'s keywords
    name: str
    #: what people type or pass → the value (SI floats/ints); raises a UsageError naming a right value
    parse: Callable[[object], object]
    #: the value when not given
    default: object
    #: one line for ``--help`` and the widget's tooltip
    help: str
    #: results column (unit in the name, as experiment/axes.py's), e.g. "window_packets"
    column: str
    #: command-line flag; default "--" + name with "_" → "-"
    flag: str | None = None
    #: values the notebooks' widgets offer (a dropdown); empty: a free text box
    choices: tuple = ()
    #: an Experiment axis a sweep may vary (``wirelab run --window 1,4,16``)
    sweep: bool = True

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Transport:
    """Everything the kit knows about one transport. Frozen: facts, plus three ``Ref``s to behaviour."""
    #: its name everywhere: ``--proto NAME``, the results' ``proto`` column, ``Result.proto``; equals its module's
    name: str
    #: PPCB CONN's protocol_id (wire/ppcb.py's PROTOCOL_IDS for the assignment's three; others outside them)
    protocol_id: int
    #: the socket its programs run over: "tcp" or "udp" (``SOCKETS``); also the measurement modes' protocol
    socket: str
    #: one line for people: "UDP with stop-and-wait: one DATA, its ACC, MAX_WAIT timer"
    summary: str
    #: every byte arrives in order, or the transfer fails (tcp: by the kernel; udpr: by ACC and resends)
    reliable: bool
    #: the programs resend after MAX_WAIT, up to MAX_RETRANSMITS times (reads ``max_retransmits``)
    retransmits: bool
    #: the receiver answers each DATA with a numbered ACC (or RJT) and the sender reads it while sending:
    #: peers wait for ACC after DATA; a client must stop at RJT (grade/timing's after_reject rule);
    #: ACCs travel back, so the reverse direction's loss matters to the model
    acked: bool
    #: goodput depends on the round trip of each exchange (the sender waits for ACC): the runner probes the
    #: host's own round trip and adds it to the predicted RTT (experiment/calibration.py, prediction.py)
    ack_clocked: bool
    #: header bytes above IP before the application's data, by layer, in order (model/headers.py's
    #: HeaderStack.layers and transport_header): tcp (("TCP", 20),), udpr (("UDP", 8), ("PPCB DATA", 21))
    header_layers: tuple[tuple[str, int], ...]
    #: the largest application payload one packet may carry (PPCB's MAX_DATA); None: only IP's limit
    max_payload: int | None
    #: the sender: ``sender(host, port, data, *, max_wait, chunk, sndbuf=None, rcvbuf=None, progress=None,
    #: **options) -> Result``; over a stream it also takes ``congestion``, over datagrams ``max_retransmits``
    #: (every caller passes one of the two by ``stream``), and its options by name
    sender: Ref
    #: the receiver of one session once CONN arrived, with its socket kind's signature: udp:
    #: ``(sock, conn, client, *, out, max_wait, max_retransmits, stop=None) -> Result`` (udp_server.serve_session);
    #: tcp: ``(conn, reader, meter, *, out, max_wait, ...) -> Result`` (tcp.serve_tcp_connection)
    receiver: Ref
    #: the model: ``model(stack, packets, rate_bps, *, notes, **parameters) -> Prediction``, parameters all of
    #: ``model.prediction.predict``'s keywords plus this transport's options (take ``**_`` for the rest);
    #: build the Prediction with ``model.prediction.finish``
    model: Ref
    #: workloads its programs run (``MODES``): "file" always; time/load/echo where the measurement modes run
    modes: tuple[str, ...] = ("file",)
    #: results columns only this transport's runs fill (besides every run's), e.g. retransmissions
    columns: tuple[str, ...] = ()
    #: its own parameters (``Option``), picked up by the CLI, Experiment axes, predictions and widgets
    options: tuple[Option, ...] = ()
    #: misbehaving-peer scenario (labs/peers.py's SCENARIOS, document 001 §5) → the play of ``wirelab.peers``
    #: that stages it over this transport, None where the lab's own dying process plays it; a scenario
    #: missing from the mapping does not apply to this transport
    peer_scenarios: Mapping[str, str | None] = field(default_factory=dict)
    #: iperf3 can run it (engine "iperf3")
    iperf3: bool = False
    #: the PPCB assignment's own transport: a strict PPCB peer accepts its protocol id; the grader may test it
    ppcb: bool = True
    #: for plots and widgets: "UDPR (stop-and-wait)"
    label: str = ""
    #: its goodput spans decades over a sweep (stop-and-wait under delay): plots use a log axis
    log_scale: bool = False
    #: where it sorts in ``names()``, tables and plots (tcp 0, udp 1, udpr 2, ...)
    order: int = 100

    def __post_init__(self):
        if self.socket not in SOCKETS:
            raise UsageError(f"transport {self.name}: unknown socket {self.socket!r}", f"use one of {SOCKETS}")
        if "file" not in self.modes or not set(self.modes) <= set(MODES):
            raise UsageError(f"transport {self.name}: modes {self.modes}", f"'file' and any of {MODES}")
        object.__setattr__(self, "peer_scenarios", MappingProxyType(dict(self.peer_scenarios)))

    @property
    def header_bytes(self) -> int:
        """Bytes above IP before the data (TCP without options): the sum of ``header_layers``."""
        return sum(size for _, size in self.header_layers)

    @property
    def ppcb_layer(self) -> bool:
        """PPCB's DATA header is one of its ``header_layers`` (udpr): its model counts it as a header;
        the others carry it inside their payload (a 1000 B chunk is 1021 B of UDP payload)."""
        return any(layer == "PPCB DATA" for layer, _ in self.header_layers)

    @property
    def stream(self) -> bool:
        """Its data rides a byte stream the kernel segments (MSS), not one datagram per DATA."""
        return self.socket == "tcp"

    def give_up_s(self, max_wait_s: float, max_retransmits: int) -> float:
        """How long its programs keep trying before they give up (ppcb.md): a retransmitting transport's
        one send plus MAX_RETRANSMITS resends, MAX_WAIT apart; the others wait once, MAX_WAIT."""
        return max_wait_s * (max_retransmits + 1) if self.retransmits else max_wait_s

    def supports(self, mode: str) -> bool:
        """Do its programs run workload ``mode`` (file, time, load, echo)?"""
        return mode in self.modes

    def option_values(self, given: Mapping[str, object] | None = None) -> dict[str, object]:
        """Its options' values: from ``given`` (keyword names or results columns), else the defaults."""
        given = given or {}
        out = {}
        for opt in self.options:
            value = given.get(opt.name, given.get(opt.column))
            out[opt.name] = opt.default if value is None else opt.parse(value)
        return out

    def send(self, host: str, port: int, data: bytes, **kwargs):
        """Run its sender (``sender``): the keyword arguments its signature takes."""
        return self.sender(host, port, data, **kwargs)

    def __str__(self) -> str:
        return self.name


#: Every member of Transport, documented above it (tests/test_transports.py keeps them all documented)
MEMBERS = tuple(Transport.__dataclass_fields__)


# Discovered once, on first use; another thread waits for it, and a transport's own module asking the
# registry while it is imported (a circle) is told what to do instead of seeing half a registry.
_LOCK = threading.RLock()
_STATE = threading.local()
_FOUND: dict[str, Transport] = {}


def _registry() -> dict[str, Transport]:
    """Every module of this package holding a ``TRANSPORT``, discovered, by name, in ``order``."""
    if _FOUND:
        return _FOUND
    with _LOCK:
        if _FOUND:
            return _FOUND
        if getattr(_STATE, "discovering", False):
            raise UsageError("a transport's module asked the registry while it was being imported",
                             "keep its module to facts (imports of wire only) and name its sender, receiver "
                             "and model by Ref('module:function')")
        _STATE.discovering = True
        try:
            _FOUND.update(_discover())
        finally:
            _STATE.discovering = False
    return _FOUND


def _forget() -> None:
    """Discover again on next use (tests that add a module to the package's path)."""
    with _LOCK:
        _FOUND.clear()


def _discover() -> dict[str, Transport]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        transport = getattr(module, "TRANSPORT", None)
        if not isinstance(transport, Transport):
            continue
        if transport.name != info.name:
            raise UsageError(f"transports/{info.name}.py holds transport {transport.name!r}",
                             f"name the module {transport.name}.py or the transport {info.name!r}")
        found.append(transport)
    ids = [t.protocol_id for t in found]
    if len(set(ids)) != len(ids):
        raise UsageError(f"two transports share a protocol id: {sorted(ids)}", "give each its own")
    return {t.name: t for t in sorted(found, key=lambda t: (t.order, t.name))}


def names() -> tuple[str, ...]:
    """The transports' names in the kit's order (``--proto`` choices)."""
    return tuple(_registry())


def transports() -> Iterator[Transport]:
    """Every transport, in the kit's order."""
    return iter(_registry().values())


def get(name: str | Transport) -> Transport:
    """The transport called ``name`` (a Transport is returned as it is); a UsageError naming the known ones."""
    if isinstance(name, Transport):
        return name
    registry = _registry()
    if name not in registry:
        raise UsageError(f"unknown protocol {name!r}", f"use one of {', '.join(registry)}")
    return registry[name]


def by_protocol_id(protocol_id: int) -> Transport | None:
    """The transport whose PPCB CONN carries ``protocol_id``; None for an id no transport has."""
    return next((t for t in transports() if t.protocol_id == protocol_id), None)


def protocol_ids() -> dict[str, int]:
    """name → PPCB protocol id, every transport's (wire/ppcb.py's PROTOCOL_IDS: the assignment's three)."""
    return {t.name: t.protocol_id for t in transports()}


def protocol_names() -> dict[int, str]:
    """PPCB protocol id → name, every transport's (the capture reader's and the servers' lookup)."""
    return {t.protocol_id: t.name for t in transports()}


def options() -> dict[str, Option]:
    """Every transport's options by name (an option two transports declare is declared alike)."""
    out: dict[str, Option] = {}
    for transport in transports():
        for opt in transport.options:
            if out.setdefault(opt.name, opt) != opt:
                raise UsageError(f"option {opt.name!r} is declared differently by two transports",
                                 "declare it once and import it in the other module")
    return out


def option(name: str) -> Option:
    """The transport option called ``name`` (``options()[name]``); a UsageError naming the known ones."""
    known = options()
    if name not in known:
        raise UsageError(f"no transport has the option {name!r}", f"known: {', '.join(known) or 'none'}")
    return known[name]
