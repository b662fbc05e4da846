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
    events: list = []
    order = [0]
    free = {"fwd": 0.0, "rev": 0.0}

    def at(when, kind, *args):
        order[0] += 1
        heapq.heappush(events, (when, order[0], kind, args))

    def wire(direction, now, tx, loss, kind, *args):
        leaves = max(now, free[direction]) + tx
        free[direction] = leaves
        if rng.random() >= loss:
            at(leaves + delay_s, kind, *args)

    sender = {"base": 0, "next": 0, "sent": {}, "tries": 1, "timer": None, "timeouts": 0, "most": 0,
              "done": None, "all_acked": None}
    receiver = {"expected": 0, "heard": 0.0, "reply": None, "resends": 0, "done": False, "last": None}

    def send_data(now, k):
        sender["sent"][k] = now
        wire("fwd", now, data_s, loss_forward, "data", k)

    def arm(now):
        if sender["base"] < packets:
            token = object()
            sender["timer"] = token
            at(sender["sent"][sender["base"]] + timeout_s, "timer", token)
        elif sender["all_acked"] is None:
            sender["all_acked"] = now
            token = object()
            sender["timer"] = token
            at(now + timeout_s, "rcvd_wait", token)

    def fill(now):
        while sender["next"] < packets and sender["next"] < sender["base"] + window:
            send_data(now, sender["next"])
            sender["next"] += 1
        sender["most"] = max(sender["most"], sender["next"] - sender["base"])

    def reply(now, kind, number=None):
        wire("rev", now, ack_s if kind == "ack" else rcvd_s, loss_reverse, kind, number)

    fill(0.0)
    arm(0.0)
    at(timeout_s, "silence")
    while events and sender["done"] is None:
        now, _, kind, args = heapq.heappop(events)
        if kind == "data":                          # at the receiver
            k = args[0]
            if receiver["done"]:                    # lingering: the last ACC and RCVD again
                reply(now, "ack", packets - 1)
                reply(now, "rcvd")
                continue
            receiver["heard"] = now
            if k != receiver["expected"]:
                if receiver["expected"]:
                    reply(now, "ack", receiver["expected"] - 1)
                continue
            receiver["expected"] += 1
            receiver["reply"], receiver["resends"] = ("ack", k), 0
            reply(now, "ack", k)
            if receiver["expected"] == packets:
                receiver["done"], receiver["last"] = True, now
                reply(now, "rcvd")
        elif kind == "silence":                     # the receiver's MAX_WAIT
            if receiver["done"]:
                continue
            due = receiver["heard"] + timeout_s
            if now < due:
                at(due, "silence")
                continue
            if receiver["reply"] is not None and receiver["resends"] < max_retransmits:
                reply(now, *receiver["reply"])
                receiver["resends"] += 1
            receiver["heard"] = now
            at(now + timeout_s, "silence")
        elif kind == "ack":                         # at the sender
            a = args[0]
            if a < sender["base"] or a >= sender["next"]:
                continue
            for number in range(sender["base"], a + 1):
                sender["sent"].pop(number, None)
            sender["base"], sender["tries"] = a + 1, 1
            fill(now)
            arm(now)
        elif kind == "rcvd":
            sender["done"] = now
        elif kind == "timer":
            if args[0] is not sender["timer"]:
                continue
            if sender["tries"] > max_retransmits:
                break
            sender["timeouts"] += 1
            sender["tries"] += 1
            for number in range(sender["base"], sender["next"]):
                send_data(now, number)
            arm(now)
        elif kind == "rcvd_wait":                   # every DATA acknowledged, no RCVD: the last DATA again
            if args[0] is not sender["timer"]:
                continue
            send_data(now, packets - 1)
            token = object()
            sender["timer"] = token
            at(now + timeout_s, "rcvd_wait", token)
    return Run(receiver["last"], sender["done"], sender["timeouts"], sender["most"])
