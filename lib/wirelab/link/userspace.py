"""The userspace link: a wirelab process that *is* the cable, for kernels without netem.

Each host keeps a real veth interface; its other end lives in the testbed's
``wire`` namespace, where this process reads every Ethernet frame with a
packet socket, asks a ``Shaper`` (``emulator.py``) when the frame should come
out, and writes it to the far host's cable at that moment. The kernels on
both hosts therefore see a real link with rate, queue, delay, jitter, loss,
duplication and reordering, and their captures show ordinary 1514 B frames.

Why packet sockets on veths rather than TUN devices: the hosts get the same
Ethernet interface as with the kernel backend (same captures, same MTU and
offload settings), and a frame read here is exactly the skb a qdisc would
see (IP packet + 14 B). Each is charged as the spec's wire says
(``LinkSpec.charge``: as read on the "emulated" wire, + 24 B and at least
84 B on a "real" one, as tbf with its size table), so ``wirelab.model``
predicts this link with no special case.

Run by ``Testbed`` as ``ip netns exec <wire-ns> python -m wirelab.link.userspace CONFIG``;
it prints ``ready`` when its sockets are open, exits when told (SIGTERM/SIGINT)
or when its owner process is gone, and prints its counters as JSON on exit.
Between runs of a sweep the testbed asks it for its counters and to start
afresh with the next run's seed (``renew``, see ``serve``); during a run, for its
queues (``queue``: what waits for the line in each direction, for a live plot).
"""
from __future__ import annotations

import heapq
import json
import os
import random
import select
import signal
import socket
import sys
import time
from dataclasses import replace

from .emulator import Shaper, datagram_key
from .spec import LinkSpec

__all__ = ["open_port", "serve"]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
RCVBUF = 4 << 20
OWNER_CHECK_S = 0.5
#: Waking from select() is late by ~0.1-0.3 ms on a loaded machine, so the process wakes this
#: much before a frame is due and spins out the rest: frames leave on time, neither late nor
#: early (sending them early made every stop-and-wait round trip 0.2-0.4 ms shorter than the
#: link allows, measured). The spin is bounded by this much per frame.
EARLY_S = 0.0002


def open_port(dev: str) -> socket.socket:
    """A packet socket seeing every frame that arrives on ``dev`` (not the ones we send)."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    for option in (getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, RCVBUF)
            break
        except OSError:
            continue
    sock.bind((dev, 0))
    sock.setblocking(False)
    return sock


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _go_first() -> str:
    """The wire goes first: senders and receivers must not delay it. A real-time priority
    (like the kernel's own softirq work for netem) where allowed, else a lower nice value.
    The kernel still keeps 5 % of every second for others (sched_rt_runtime_us)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return "SCHED_FIFO 10"
    except (OSError, AttributeError):
        pass
    try:
        os.nice(-10)
        return "nice -10"
    except OSError:
        return "normal"


def _routes(pairs: list[dict], ports: list[tuple], seed) -> dict:
    """Receiving socket → (sending socket, a new Shaper, name, what a frame is charged), the
    shapers' draws from ``seed``."""
    rng = random.Random(seed)
    routes = {}
    for pair, (a, b) in zip(pairs, ports):
        spec = LinkSpec.from_dict(pair["spec"])
        routes[a] = (b, Shaper(spec.forward, spec.queue_for(spec.forward), random.Random(rng.random()),
                               spec.loss_unit), f"{pair['a']}->{pair['b']}", spec.charge)
        routes[b] = (a, Shaper(spec.reverse, spec.queue_for(spec.reverse), random.Random(rng.random()),
                               spec.loss_unit), f"{pair['b']}->{pair['a']}", spec.charge)
    return routes


def _specs(routes: dict, pairs: list[dict]) -> list[dict]:
    """The spec each pair's shapers now apply, read from the shapers themselves."""
    shapers = {name: shaper for _, shaper, name, _ in routes.values()}
    specs = []
    for pair in pairs:
        spec = LinkSpec.from_dict(pair["spec"])
        forward, reverse = shapers[f"{pair['a']}->{pair['b']}"], shapers[f"{pair['b']}->{pair['a']}"]
        read = replace(spec, forward=forward.direction, reverse=reverse.direction)
        if (forward.queue_bytes, reverse.queue_bytes) != (spec.queue_for(spec.forward), spec.queue_for(spec.reverse)):
            read = None                  # not what the spec asks: the owner sees a mismatch
        specs.append(read.to_dict() if read else None)
    return specs


def _counters(routes: dict) -> dict:
    return {name: vars(shaper.counters) for _, shaper, name, _ in routes.values()}


def _queues(routes: dict, now: float) -> dict:
    """Each direction's queue now: bytes waiting for the line (as charged), the limit, and what
    the queue dropped and the line carried so far."""
    return {name: {"backlog_bytes": shaper.backlog_bytes(now), "limit_bytes": shaper.queue_bytes,
                   "dropped": shaper.counters.dropped_queue, "sent_bytes": shaper.counters.bytes,
                   "sent_packets": shaper.counters.packets}
            for _, shaper, name, _ in routes.values()}


def _answer(commands: bytes, routes: dict) -> tuple[bytes, tuple | None]:
    """Answer each whole command line (``serve``'s docstring); return what is left of the input and
    a ``renew`` asked for, if any."""
    renew = None
    while b"\n" in commands:
        line, commands = commands.split(b"\n", 1)
        word, _, argument = line.decode().strip().partition(" ")
        if word == "counters":
            print(json.dumps(_counters(routes)), flush=True)
        elif word == "queue":
            print(json.dumps(_queues(routes, time.monotonic())), flush=True)
        elif word == "renew":
            asked = json.loads(argument or "null")
            asked = asked if isinstance(asked, dict) else {"seed": asked}
            renew = (asked.get("seed"), asked.get("specs"))
    return commands, renew


def _admit(sock, route, heap: list, seq: int, now: float) -> int:
    """Read what waits on ``sock`` (at most 256 frames: the clock must run) and give each frame its
    time to come out on the far side; returns the last sequence number used."""
    out, shaper, _, charge = route
    for _ in range(256):
        try:
            frame = sock.recv(65536)
        except BlockingIOError:
            break
        datagram = datagram_key(frame) if shaper.loss_unit == "datagram" else None
        for due in shaper.admit(charge(len(frame)), now, datagram):
            seq += 1
            heapq.heappush(heap, (due, seq, out, frame, shaper))
    return seq


def _send_due(heap: list, now: float) -> None:
    """Send every frame due by ``now``, counting how late the loop was."""
    while heap and heap[0][0] <= now:
        due, _, out, frame, shaper = heapq.heappop(heap)
        shaper.counters.late_s_max = max(shaper.counters.late_s_max, now - due)
        try:
            out.send(frame)
        except OSError as err:   # ENOBUFS, or the far end went away
            shaper.counters.extra[err.__class__.__name__] = shaper.counters.extra.get(err.__class__.__name__, 0) + 1


def serve(config: dict, *, stop_after_s: float | None = None) -> dict:
    """Forward frames between every cable pair in ``config`` until stopped; return counters.

    With ``config["control"]`` it also reads commands on stdin, one a line, and answers each
    with one JSON line: ``counters`` (what every direction counted so far) and ``renew SEED``
    or ``renew {"seed": SEED, "specs": [one LinkSpec dict per pair]}`` (once no frame is in
    flight: new shapers, of the new specs if given, drawing from SEED, as if just started;
    answered with the old shapers' counters and the specs now in force), so one link process
    can serve many runs, each as a new one, each on its own spec; ``queue`` (each direction's
    queue now, ``_queues``)."""
    ports = [(open_port(pair["a_dev"]), open_port(pair["b_dev"])) for pair in config["pairs"]]
    routes = _routes(config["pairs"], ports, config.get("seed"))
    _go_first()
    owner = config.get("owner")
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.append(True))
    # A signal must wake select() at once: Python retries an interrupted select until its
    # timeout (PEP 475), which made every teardown wait up to OWNER_CHECK_S.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    print("ready", flush=True)

    heap: list = []                  # (due, sequence, out socket, frame, shaper)
    seq = 0
    started = next_owner_check = time.monotonic()
    control = sys.stdin.fileno() if config.get("control") else None
    commands, renew = b"", None      # renew: (seed,) once asked, until done
    readable = list(routes) + [wake_r] + ([control] if control is not None else [])
    while not stopping:
        now = time.monotonic()
        if stop_after_s is not None and now - started > stop_after_s:
            break
        if now >= next_owner_check:
            next_owner_check = now + OWNER_CHECK_S
            if owner and not _alive(owner):
                break
        timeout = OWNER_CHECK_S if not heap else min(OWNER_CHECK_S, max(0.0, heap[0][0] - EARLY_S - now))
        try:
            ready, _, _ = select.select(readable, [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for sock in ready:
            if sock == wake_r:
                os.read(wake_r, 512)
                continue
            if sock == control:
                chunk = os.read(control, 4096)
                if not chunk:            # the owner closed it: no more commands
                    readable.remove(control)
                commands, asked = _answer(commands + chunk, routes)
                renew = asked or renew
                continue
            seq = _admit(sock, routes[sock], heap, seq, now)
        now = time.monotonic()
        if heap and not ready and now < heap[0][0] <= now + EARLY_S:
            due = heap[0][0]
            while now < due:             # woke early on purpose: wait out the rest, on time
                now = time.monotonic()
        _send_due(heap, now)
        if renew is not None and not heap:      # nothing in flight: start afresh
            seed, specs = renew
            if specs is not None:
                config["pairs"] = [{**pair, "spec": spec} for pair, spec in zip(config["pairs"], specs)]
            counters = _counters(routes)
            routes, renew = _routes(config["pairs"], ports, seed), None
            print(json.dumps({"renewed": counters, "specs": _specs(routes, config["pairs"])}), flush=True)
    for sock in routes:
        sock.close()
    signal.set_wakeup_fd(-1)
    os.close(wake_r)
    os.close(wake_w)
    return _counters(routes)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m wirelab.link.userspace CONFIG_JSON", file=sys.stderr)
        return 2
    counters = serve(json.loads(argv[0]))
    print(json.dumps(counters), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
