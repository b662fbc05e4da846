"""Pacing: send at an offered load, in time (document 000's rate-paced sender).

Two ways to offer X bytes a second, and they are not the same load:

* ``Pacer`` ("even"): packet i is due at t0 + i · size · 8 / rate, evenly spaced.
  If the sender falls behind (the kernel blocked it, the CPU was busy) it does
  not burst to catch up by more than ``max_burst`` packets.
* ``TickPacer`` ("tick"): what document 000's Java sender did. A
  ``java.util.Timer`` ran its ``TimerTask`` once a second
  (``timer.scheduleAtFixedRate(task, 0, 1000)``) and the task sent that second's
  X bytes back to back, leaving its loop early once it had spent a second
  sending (what was not sent then counted as lost: "data not sent within one
  second"). A fixed-rate timer runs a late task at once to catch up.
  Every second starts with a burst of X bytes, so the queues behind the sender
  fill and drain once a second even when X is far below the link's capacity.

Offered load is what the sender *tried*; the Result reports what it managed.

    >>> p = Pacer(rate_bps=8e6, packet_bytes=1000)      # 1000 packets/s
    >>> p.interval_s, p.slots(0.5)
    (0.001, 500)
    >>> TickPacer(rate_bps=8e6, packet_bytes=1400).slots(2.0)    # 715 a tick, two ticks
    1430
"""
from __future__ import annotations

import math
import time

from ..errors import UsageError

__all__ = ["Pacer", "TickPacer", "PACINGS", "pacer"]

#: The ways a paced sender spreads its load: evenly, or each second's at a 1 s timer tick.
PACINGS = ("even", "tick")


def _check(rate_bps: float, packet_bytes: int) -> None:
    if not rate_bps > 0 or packet_bytes <= 0:
        raise UsageError(f"offered load needs a positive rate and packet size, not "
                         f"{rate_bps} bit/s, {packet_bytes} B", "e.g. --rate 5MB/s --packet 1400")


def _sleep_until(due: float, clock, sleep) -> None:
    """Sleep most of the gap, then spin the last bit: sleep() overshoots by ~0.1 ms."""
    now = clock()
    if due - now > 0.002:
        sleep(due - now - 0.001)
    while clock() < due:
        sleep(0)   # yield the GIL: a receiver thread in this process must run


class Pacer:
    """Evenly spaced send times for ``rate_bps`` of ``packet_bytes`` packets."""
    kind = "even"

    def __init__(self, rate_bps: float, packet_bytes: int, *, max_burst: int = 8,
                 clock=time.monotonic, sleep=time.sleep):
        _check(rate_bps, packet_bytes)
        self.interval_s = 8.0 * packet_bytes / rate_bps
        self.max_burst = max_burst
        self.clock, self.sleep = clock, sleep
        self.next_s: float | None = None
        self.late = 0          # packets sent later than their slot (sender could not keep up)

    def slots(self, time_s: float) -> int:
        """How many packets the sender plans in ``time_s`` (at least one)."""
        return max(math.ceil(time_s / self.interval_s - 1e-9), 1)

    def wait(self) -> float:
        """Block until the next packet is due; return the time it was due."""
        now = self.clock()
        if self.next_s is None:
            self.next_s = now
        due = self.next_s
        if due > now:
            _sleep_until(due, self.clock, self.sleep)
        elif now - due > self.interval_s:
            self.late += 1
            floor = now - self.max_burst * self.interval_s     # do not burst without bound
            if due < floor:
                due = floor
        self.next_s = due + self.interval_s
        return due


class TickPacer:
    """Each ``tick_s``'s bytes back to back at the tick, as document 000's TimerTask sent them:
    ceil(rate · tick / 8 / packet) packets a tick (its loop ran until the tick's bytes were
    out), a tick's loop cut after ``tick_s`` of sending (its 1 s check), the next tick due at
    t0 + k · tick_s or at once when late (``Timer.scheduleAtFixedRate``). ``skipped``: packets
    a cut-short tick never sent; ``late``: ticks that started after their time."""
    kind = "tick"

    def __init__(self, rate_bps: float, packet_bytes: int, *, tick_s: float = 1.0,
                 clock=time.monotonic, sleep=time.sleep):
        _check(rate_bps, packet_bytes)
        if not tick_s > 0:
            raise UsageError(f"a timer tick of {tick_s} s", "e.g. tick_s=1.0 (document 000's)")
        self.tick_s, self.clock, self.sleep = tick_s, clock, sleep
        self.per_tick = math.ceil(rate_bps * tick_s / 8 / packet_bytes - 1e-9)
        self.interval_s = tick_s / self.per_tick      # the mean spacing: the same load as ``Pacer``'s
        self.start_s: float | None = None
        self.tick, self.sent_in_tick, self.tick_began_s = 0, 0, 0.0
        self.skipped = self.late = 0

    def slots(self, time_s: float) -> int:
        """Packets planned in ``time_s``: every tick's, one tick at least."""
        return max(math.ceil(time_s / self.tick_s - 1e-9), 1) * self.per_tick

    def wait(self) -> float:
        """The next packet's due time: at once within a tick, else sleep until the next tick."""
        now = self.clock()
        if self.start_s is None:
            self.start_s = self.tick_began_s = now
        elif self.sent_in_tick >= self.per_tick or now - self.tick_began_s >= self.tick_s:
            self.skipped += self.per_tick - self.sent_in_tick
            self.tick += 1
            due = self.start_s + self.tick * self.tick_s
            if due > now:
                _sleep_until(due, self.clock, self.sleep)
            else:
                self.late += 1
            self.tick_began_s, self.sent_in_tick = max(due, now), 0
        self.sent_in_tick += 1
        return self.start_s + self.tick * self.tick_s


def pacer(kind: str, rate_bps: float, packet_bytes: int, **kwargs) -> Pacer | TickPacer:
    """The pacer of ``kind`` ("even" or "tick")."""
    if kind not in PACINGS:
        raise UsageError(f"unknown pacing {kind!r}", "use 'even' (evenly spaced) or 'tick' (each second's "
                         "bytes back to back at a 1 s timer, as document 000's Java TimerTask)")
    return (Pacer if kind == "even" else TickPacer)(rate_bps, packet_bytes, **kwargs)


if __name__ == "__main__":          # python -m wirelab.transfer.pacing: watch a pacer keep time
    pacer_ = Pacer(rate_bps=8e6, packet_bytes=1000)            # 1000 packets per second
    start = time.monotonic()
    dues = [pacer_.wait() - start for _ in range(200)]
    gaps = [b - a for a, b in zip(dues, dues[1:])]
    print(f"200 packets of 1000 B at 8 Mbit/s took {time.monotonic() - start:.3f} s "
          f"(planned {199 * pacer_.interval_s:.3f} s), mean gap {sum(gaps) / len(gaps) * 1e3:.3f} ms, "
          f"late {pacer_.late}")
