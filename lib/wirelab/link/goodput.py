"""TCP goodput across the emulated link, measured and predicted (document 004, task 2).

``measure_tcp(spec)`` runs iperf3 from ``a`` to ``b`` on a fresh testbed
(root), or a bulk transfer through the loopback ``TcpRelay`` (no root: rate
and delay only, no loss). ``goodput_sweep`` repeats it over one parameter;
``prediction_lines`` gives the model's limits over the same parameter, for
drawing as lines. Rows are plain dicts: ``pandas.DataFrame(rows)`` makes them tidy.
"""
from __future__ import annotations

import math
import socket
import threading
import time

from ..errors import UsageError
from ..model import mathis, padhye
from .capabilities import choose_backend
from .iperf import iperf3_run
from .relay import TcpRelay
from .spec import LinkSpec
from .testbed import Testbed

__all__ = ["measure_tcp", "goodput_sweep", "prediction_lines", "loopback_tcp"]

#: What each sweep parameter means in ``LinkSpec.parse`` terms.
PARAMETERS = {"rate": "rate", "delay": "delay", "loss": "loss"}


def loopback_tcp(spec: LinkSpec, seconds: float = 2.0, omit: float = 0.5) -> dict:
    """Goodput of a bulk TCP transfer through a loopback ``TcpRelay``, measured at the
    receiver from ``omit`` s after the first byte for ``seconds`` s (then both ends stop)."""
    server = socket.create_server(("127.0.0.1", 0))
    marks: dict = {}
    done = threading.Event()

    def sink():
        conn, _ = server.accept()
        conn.settimeout(0.2)
        total, start = 0, None
        while not done.is_set() and not (start and time.monotonic() - start >= omit + seconds):
            try:
                data = conn.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            now = time.monotonic()
            start = start or now
            total += len(data)
            if "t0" not in marks and now - start >= omit:
                marks.update(t0=now, b0=total)
        marks.update(t1=time.monotonic(), b1=total)
        done.set()
        conn.close()

    thread = threading.Thread(target=sink, daemon=True)
    thread.start()
    chunk = b"\0" * 16384
    with TcpRelay(spec, server.getsockname()) as relay:
        with socket.create_connection(relay.address, timeout=1) as sock:
            deadline = time.monotonic() + seconds + omit + 10
            while not done.is_set() and time.monotonic() < deadline:
                try:
                    sock.sendall(chunk)
                except socket.timeout:        # the relay's queue is full: try again
                    continue
                except OSError:               # the receiver has stopped
                    break
        done.set()
        thread.join(timeout=5)
        meta = relay.describe()
    server.close()
    elapsed = marks.get("t1", 0) - marks.get("t0", 0)
    goodput = (marks["b1"] - marks["b0"]) * 8 / elapsed if elapsed > 0 else math.nan
    return {"goodput_bps": goodput, "sent_bps": math.nan, "retransmits": None, "congestion": None,
            "note": meta["note"]}


def measure_tcp(spec: LinkSpec, *, backend: str = "auto", seconds: float = 3, omit: float = 1,
                repetitions: int = 1, window: int | None = None, congestion: str | None = None,
                name: str = "goodput") -> list[dict]:
    """``repetitions`` TCP runs over one link; each row says which backend and commands carried it."""
    backend = choose_backend(spec, backend)
    rows = []
    if backend == "loopback":
        if spec.forward.loss:
            return [{"repetition": i, "goodput_bps": math.nan, "backend": backend,
                     "note": "the loopback TCP relay cannot lose packets"} for i in range(repetitions)]
        for i in range(repetitions):
            rows.append({"repetition": i, "backend": backend, "shaping": [],
                         **loopback_tcp(spec, seconds, omit)})
        return rows
    with Testbed(spec, name=name, backend=backend) as tb:
        for i in range(repetitions):
            result = iperf3_run(tb, seconds=seconds, omit=omit, window=window, congestion=congestion)
            rows.append({"repetition": i, "backend": tb.backend, "shaping": list(tb.shaping), **result})
    return rows


def goodput_sweep(parameter: str, values, base: dict, **kwargs) -> list[dict]:
    """``measure_tcp`` for ``base`` (``LinkSpec.parse`` arguments) with ``parameter`` set to each value.

    Every row carries the parameter, its value, the link's rate/delay/loss and the prediction
    for that link (emulated wire, timestamps on, with the window if one was given)."""
    if parameter not in PARAMETERS:
        raise UsageError(f"cannot sweep {parameter!r}", f"sweep one of {', '.join(PARAMETERS)}")
    rows = []
    for value in values:
        spec = LinkSpec.parse(**{**base, PARAMETERS[parameter]: value})
        window = kwargs.get("window")
        predicted = spec.predict("tcp", timestamps=True, window_bytes=window)
        for row in measure_tcp(spec, **kwargs):
            rows.append({"parameter": parameter, "value": value, "rate_bps": spec.forward.rate_bps,
                         "delay_s": spec.forward.delay_s, "rtt_s": spec.rtt_s, "loss": spec.forward.loss,
                         "predicted_bps": predicted.goodput_bps, "binding": predicted.binding, **row})
    return rows


def prediction_lines(parameter: str, low: float, high: float, base: dict, *, window: int | None = None,
                     points: int = 60, log: bool = False) -> list[dict]:
    """The model's limits (η·C, W/RTT, Mathis, PFTK) across ``parameter`` from ``low`` to ``high``
    (SI values), one row per (value, limit); for lines beside the measured points."""
    rows = []
    for k in range(points):
        f = k / (points - 1)
        value = low * (high / low) ** f if log else low + (high - low) * f
        spec = LinkSpec.parse(**{**base, PARAMETERS[parameter]: value})
        p = spec.predict("tcp", timestamps=True, window_bytes=window)
        limits = dict(p.limits)
        if parameter == "loss" and spec.rtt_s and value > 0:
            mss = p.payload_bytes
            limits.setdefault("mathis", mathis(mss, spec.rtt_s, value))
            limits.setdefault("padhye", padhye(mss, spec.rtt_s, value))
        names = {"link": "η·C", "window": "W/RTT", "mathis": "Mathis", "padhye": "PFTK"}
        for limit, bps in limits.items():
            rows.append({"parameter": parameter, "value": value, "limit": names.get(limit, limit),
                         "goodput_bps": bps})
        rows.append({"parameter": parameter, "value": value, "limit": "predicted (min)",
                     "goodput_bps": p.goodput_bps})
    return rows
