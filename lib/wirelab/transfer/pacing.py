"""Pacing: send at an offered load, in time (document 000's rate-paced sender).

A ``Pacer`` hands out send times: packet i is due at t0 + i · size · 8 / rate.
If the sender falls behind (the kernel blocked it, the CPU was busy) it
does not burst to catch up by more than ``max_burst`` packets: offered load
is what the sender *tried*, and the Result reports what it managed.

    >>> p = Pacer(rate_bps=8e6, packet_bytes=1000)      # 1000 packets/s
    >>> p.interval_s
    0.001
"""
from __future__ import annotations

import time

from ..errors import UsageError

__all__ = ["Pacer"]


class Pacer:
    """Evenly spaced send times for ``rate_bps`` of ``packet_bytes`` packets."""

    def __init__(self, rate_bps: float, packet_bytes: int, *, max_burst: int = 8,
                 clock=time.monotonic, sleep=time.sleep):
        if not rate_bps > 0 or packet_bytes <= 0:
            raise UsageError(f"offered load needs a positive rate and packet size, not "
                             f"{rate_bps} bit/s, {packet_bytes} B", "e.g. --rate 5MB/s --packet 1400")
        self.interval_s = 8.0 * packet_bytes / rate_bps
        self.max_burst = max_burst
        self.clock, self.sleep = clock, sleep
        self.next_s: float | None = None
        self.late = 0          # packets sent later than their slot (sender could not keep up)

    def wait(self) -> float:
        """Block until the next packet is due; return the time it was due."""
        now = self.clock()
        if self.next_s is None:
            self.next_s = now
        due = self.next_s
        if due > now:
            # sleep most of the gap, then spin the last bit: sleep() overshoots by ~0.1 ms
            if due - now > 0.002:
                self.sleep(due - now - 0.001)
            while self.clock() < due:
                self.sleep(0)   # yield the GIL: a receiver thread in this process must run
        elif now - due > self.interval_s:
            self.late += 1
            floor = now - self.max_burst * self.interval_s     # do not burst without bound
            if due < floor:
                due = floor
        self.next_s = due + self.interval_s
        return due


if __name__ == "__main__":          # python -m wirelab.transfer.pacing: watch a pacer keep time
    pacer = Pacer(rate_bps=8e6, packet_bytes=1000)            # 1000 packets per second
    start = time.monotonic()
    dues = [pacer.wait() - start for _ in range(200)]
    gaps = [b - a for a, b in zip(dues, dues[1:])]
    print(f"200 packets of 1000 B at 8 Mbit/s took {time.monotonic() - start:.3f} s "
          f"(planned {199 * pacer.interval_s:.3f} s), mean gap {sum(gaps) / len(gaps) * 1e3:.3f} ms, "
          f"late {pacer.late}")
