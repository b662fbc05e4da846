"""What every measured number means: one definition each, and the glossary that says it.

A transfer has four instants that matter, each read by the end that sees it:

    client start ──(set-up: connect, CONN/CONACC)──▶ first data byte sent
        ──▶ last data byte handed to the kernel (sender)
        ──▶ last byte delivered (receiver) ──▶ client's end (RCVD)

Goodput is measured across the link, from the first byte *sent* to the last
byte *delivered*, so both instants must be on one clock: two namespaces on
one host share it; across hosts the receiver's clock is corrected by the
estimated offset, and ``clock`` says which was used. Only when neither is
possible does goodput fall back to the receiver's own span (first to last
byte delivered), which leaves out the first packet's time on the wire and so
reads high by about one packet in N: ``clock`` says so then too.

Standard library only: this module is read by students.
"""
from __future__ import annotations

__all__ = ["GLOSSARY", "ALWAYS_MEASURED", "CLOCKS", "transfer_time", "goodput", "sender_view",
           "glossary_markdown"]

#: How the two instants of a goodput were put on one clock.
CLOCKS = {
    "one clock": "both ends read the same clock (one host: loopback or namespaces)",
    "offset estimate": "receiver's clock corrected by the offset estimated from echo rounds",
    "receiver only": "no common clock: the receiver's first-to-last delivery (reads about 1/N high)",
}

#: Every measured column of a run, defined once (README and notebook 02 print this; the
#: engines' ``MEASURED`` and the results store read it).
GLOSSARY = {
    "goodput_bps": "receiver goodput: application bytes delivered in order, exactly once, × 8 "
                   "÷ transfer_s. The figure to trust.",
    "transfer_s": "from the first data byte sent (sender) to the last byte delivered (receiver), on one "
                  "clock (see `goodput_clock`); connection set-up not included",
    "completion_s": "from the client's start (connect, CONN) to its end (RCVD received, or its last "
                    "report): what a user waits, set-up included",
    "setup_s": "from the client's start to its first data byte: TCP handshake and PPCB's CONN/CONACC",
    "sender_goodput_bps": "the sender's view: bytes offered × 8 ÷ sender_duration_s (first data byte "
                          "sent → last handed to the kernel). Never below the receiver's goodput when "
                          "everything arrived: the kernel takes bytes before the link carries them",
    "sender_duration_s": "first data byte sent → last data byte handed to the kernel (sender's clock)",
    "receiver_duration_s": "first byte delivered → last byte delivered (receiver's clock)",
    "delivered_fraction": "bytes delivered ÷ bytes offered: below 1 when plain UDP lost data, which "
                          "the protocol allows (a result, not a failure); never above 1: bytes "
                          "offered are the application's (a file's size, or the records a paced "
                          "sender planned), and a datagram's last one carries only what is left",
    "goodput_clock": "how transfer_s put its two instants on one clock: " + "; ".join(
        f"'{k}': {v}" for k, v in CLOCKS.items()),
    "bytes_offered": "application bytes the sender was asked to send",
    "bytes_sent": "application bytes the sender handed to the kernel, resends included",
    "bytes_received": "application bytes that reached the receiver, duplicates included",
    "bytes_delivered": "application bytes delivered in order, exactly once: what goodput_bps counts (a "
                       "timed TCP run: those the receiver got within interval_s)",
    "interval_s": "a timed TCP run, measured as iperf3 does: the receiver counts what arrives within this "
                  "many seconds of the first record, on its own clock, and reports at once",
    "report_wait_s": "from the sender's last write to the receiver's REPORT: about a round trip for a timed "
                     "TCP run; the drain of the send buffer where the run waits it out (a TCP load)",
    "send_queue_bytes": "bytes the sender's socket still held when a timed TCP run's REPORT came: written "
                        "within the interval, not delivered within it; discarded (a reset), never counted",
    "drain_s": "send_queue_bytes at the run's goodput: how long waiting out the send buffer would have "
               "taken (a timed run does not wait for it)",
    "packets_sent": "DATA packets, datagrams or writes the sender sent, resends included",
    "retransmissions": "packets sent again: TCP segments the kernel resent, UDPR's resent DATA",
    "lost": "datagrams that never arrived (UDP), where the receiver could count them",
    "loss_fraction": "lost ÷ datagrams sent (resends not counted): the loss the receiver saw",
    "rtt_mean_s": "mean of the round trips the run measured (echo rounds; UDPR: a DATA to its ACC; "
                  "iperf3 TCP: the kernel's smoothed RTT)",
    "congestion_control": "the TCP congestion control of the sender's socket (TCP_CONGESTION)",
}

#: The measured columns every results table has, NaN where no run measured them: what
#: analyses read first (a sweep whose runs were all skipped still has them).
ALWAYS_MEASURED = ("goodput_bps", "sender_goodput_bps", "bytes_sent", "bytes_received",
                   "retransmissions", "loss_fraction", "rtt_mean_s")


def transfer_time(first_sent_s: float | None, last_delivered_s: float | None, *,
                  offset_s: float | None = None) -> float | None:
    """Seconds from the first byte sent to the last delivered; ``offset_s`` = receiver clock −
    sender clock (0 on one host). None when an instant is missing."""
    if first_sent_s is None or last_delivered_s is None:
        return None
    return max(last_delivered_s - (offset_s or 0.0) - first_sent_s, 0.0)


def goodput(bytes_delivered: int | None, seconds: float | None) -> float | None:
    """Bytes × 8 ÷ seconds, or None when either is missing or the time is zero."""
    if bytes_delivered is None or not seconds:
        return None
    return 8.0 * bytes_delivered / seconds


def sender_view(bytes_offered: int, first_sent_s: float | None, last_handed_s: float | None) -> float | None:
    """The sender's goodput: what it offered over the time it took to hand it to the kernel."""
    if first_sent_s is None or last_handed_s is None:
        return None
    return goodput(bytes_offered, last_handed_s - first_sent_s)


def glossary_markdown() -> str:
    """The glossary as a Markdown list (for the README and notebooks)."""
    return "\n".join(f"- `{name}`: {text}" for name, text in GLOSSARY.items())
