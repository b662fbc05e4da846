"""A seeded event simulation of Go-Back-N's exact rules (transports/gbn/sender.py and receiver.py) on a
wire with rate, delay and independent loss each way: what tests/test_transport_gbn.py holds the model to.

The link: each direction a FIFO that serializes a packet in its transmission time and delivers it one
delay later, unless it is lost (drawn once per packet). The sender's sends enter the queue at once; its
timer runs from a DATA's send. The data phase starts at 0 (CONN/CONACC is udpr's, tested there).
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass


@dataclass
class Run:
    data_time_s: float          # first DATA sent → last byte delivered
    done_s: float               # → RCVD in the sender's hands
    timeouts: int
    max_in_flight: int


def simulate(rng: random.Random, *, packets: int, window: int, data_s: float, ack_s: float, rcvd_s: float,
             delay_s: float, timeout_s: float, loss_forward: float, loss_reverse: float,
             max_retransmits: int = 10 ** 6) -> Run:
    """One transfer of ``packets`` DATA with window ``window``; the times of its Run are seconds."""
    sim = _Simulation(rng, packets, window, data_s, ack_s, rcvd_s, delay_s, timeout_s, loss_forward, loss_reverse,
                      max_retransmits)
    return sim.run()


class _Simulation:
    def __init__(self, rng, packets, window, data_s, ack_s, rcvd_s, delay_s, timeout_s, loss_forward, loss_reverse,
                 max_retransmits):
        self.rng, self.n, self.window = rng, packets, window
        self.tx = {"data": data_s, "ack": ack_s, "rcvd": rcvd_s}
        self.delay, self.t0, self.max_retransmits = delay_s, timeout_s, max_retransmits
        self.loss = {"fwd": loss_forward, "rev": loss_reverse}
        self.events: list = []
        self.order = 0
        self.free = {"fwd": 0.0, "rev": 0.0}
        # the sender
        self.base = self.next = 0
        self.sent: dict[int, float] = {}
        self.tries, self.timer, self.timeouts, self.most, self.done = 1, None, 0, 0, None
        # the receiver
        self.expected, self.heard, self.reply, self.resends, self.finished, self.last = 0, 0.0, None, 0, False, None

    def at(self, when, kind, *args):
        self.order += 1
        heapq.heappush(self.events, (when, self.order, kind, args))

    def wire(self, direction, now, kind, *args):
        leaves = max(now, self.free[direction]) + self.tx["data" if direction == "fwd" else kind]
        self.free[direction] = leaves
        if self.rng.random() >= self.loss[direction]:
            self.at(leaves + self.delay, kind, *args)

    def run(self) -> Run:
        self.fill(0.0)
        self.arm(0.0)
        self.at(self.t0, "silence")
        while self.events and self.done is None:
            now, _, kind, args = heapq.heappop(self.events)
            if getattr(self, "on_" + kind)(now, *args) is False:
                break                                   # the sender gave up
        return Run(self.last, self.done, self.timeouts, self.most)

    # -- the sender ------------------------------------------------------------------------------------
    def send_data(self, now, k):
        self.sent[k] = now
        self.wire("fwd", now, "data", k)

    def fill(self, now):
        while self.next < self.n and self.next < self.base + self.window:
            self.send_data(now, self.next)
            self.next += 1
        self.most = max(self.most, self.next - self.base)

    def arm(self, now):
        """The timer: MAX_WAIT after the oldest unacknowledged DATA's send; all acknowledged: the RCVD wait."""
        self.timer = token = object()
        if self.base < self.n:
            self.at(self.sent[self.base] + self.t0, "timer", token)
        else:
            self.at(now + self.t0, "rcvd_wait", token)

    def on_ack(self, now, a):
        if a < self.base or a >= self.next:
            return
        for number in range(self.base, a + 1):
            self.sent.pop(number, None)
        self.base, self.tries = a + 1, 1
        self.fill(now)
        self.arm(now)

    def on_rcvd(self, now, *_):
        self.done = now

    def on_timer(self, now, token):
        if token is not self.timer:
            return None
        if self.tries > self.max_retransmits:
            return False
        self.timeouts += 1
        self.tries += 1
        for number in range(self.base, self.next):      # the whole window again
            self.send_data(now, number)
        self.arm(now)
        return None

    def on_rcvd_wait(self, now, token):                  # every DATA acknowledged, no RCVD: the last DATA again
        if token is self.timer:
            self.send_data(now, self.n - 1)
            self.timer = token = object()
            self.at(now + self.t0, "rcvd_wait", token)

    # -- the receiver ----------------------------------------------------------------------------------
    def answer(self, now, kind, number=None):
        self.wire("rev", now, kind, number)

    def on_data(self, now, k):
        if self.finished:                               # lingering: the last ACC and RCVD again
            self.answer(now, "ack", self.n - 1)
            self.answer(now, "rcvd")
            return
        self.heard = now
        if k != self.expected:                          # discarded; the last one in order named again
            if self.expected:
                self.answer(now, "ack", self.expected - 1)
            return
        self.expected += 1
        self.reply, self.resends = ("ack", k), 0
        self.answer(now, "ack", k)
        if self.expected == self.n:
            self.finished, self.last = True, now
            self.answer(now, "rcvd")

    def on_silence(self, now):                           # the receiver's own MAX_WAIT
        if self.finished:
            return
        due = self.heard + self.t0
        if now < due:
            self.at(due, "silence")
            return
        if self.reply is not None and self.resends < self.max_retransmits:
            self.answer(now, *self.reply)
            self.resends += 1
        self.heard = now
        self.at(now + self.t0, "silence")
