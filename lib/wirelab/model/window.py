"""Socket buffers and TCP's window: what Linux grants, the window it makes, slow start.

Sources:
  * Linux ``net/core/sock.c`` (``sock_setsockopt``, SO_SNDBUF/SO_RCVBUF): the request
    is capped at ``net.core.wmem_max`` / ``rmem_max``, then doubled, then raised to
    ``SOCK_MIN_SNDBUF`` / ``SOCK_MIN_RCVBUF``; socket(7): "the kernel doubles this value
    (to allow space for bookkeeping overhead) ... and this doubled value is returned by
    getsockopt". ``include/net/sock.h``: SOCK_MIN_RCVBUF = TCP_SKB_MIN_TRUESIZE =
    2048 + sizeof(struct sk_buff) aligned (2304 B on x86-64), SOCK_MIN_SNDBUF twice that.
  * Linux ``include/net/tcp.h``: the receive window is the buffer × ``scaling_ratio``,
    50 % by default (TCP_DEFAULT_SCALING_RATIO), later measured as payload / skb truesize;
    so the doubled buffer gives back about the window that was asked for.
  * RFC 1122 §4.2.3.3 (a receiver offers whole segments, not slivers: silly window syndrome).
  * RFC 1323 §1.1 (a window per round trip: W/RTT), RFC 5681 §3.1 (slow start doubles
    the window every round trip), RFC 6928 (initial window of 10 segments).

    >>> granted_buffer(5269, "rcv")           # what getsockopt reports after asking for 5269 B
    10538
    >>> granted_buffer(100, "rcv"), granted_buffer(100, "snd")
    (2304, 4608)
"""
from __future__ import annotations

import math

from ..errors import ModelError

__all__ = ["SOCK_MIN_SNDBUF", "SOCK_MIN_RCVBUF", "LINUX_CAP", "granted_buffer", "tcp_window",
           "slow_start_bytes", "base_rtt"]

#: include/net/sock.h on x86-64 (2048 + a 256 B sk_buff, aligned): the smallest buffers Linux grants.
SOCK_MIN_RCVBUF = 2304
SOCK_MIN_SNDBUF = 2 * SOCK_MIN_RCVBUF
#: This machine's net.core.rmem_max and wmem_max when the model was written (4 MiB);
#: pass the real ones (``/proc/sys/net/core/rmem_max``) to ``granted_buffer``.
LINUX_CAP = 4 * 1024 * 1024
#: Linux's default share of a receive buffer that TCP offers as window (include/net/tcp.h).
DEFAULT_SCALING_RATIO = 0.5


def granted_buffer(requested: float, kind: str = "rcv", *, cap: float = LINUX_CAP) -> int:
    """The SO_RCVBUF (``kind="rcv"``) or SO_SNDBUF (``"snd"``) Linux grants for ``requested``
    bytes: min(requested, cap) × 2, at least SOCK_MIN_RCVBUF / SOCK_MIN_SNDBUF
    (net/core/sock.c, sock_setsockopt). ``cap``: net.core.rmem_max or wmem_max."""
    if kind not in ("rcv", "snd"):
        raise ModelError(f"buffer kind must be 'rcv' or 'snd', not {kind!r}", "e.g. kind='rcv'")
    if not requested >= 0 or not cap > 0:
        raise ModelError(f"buffer request must be ≥ 0 B, not {requested!r}", "e.g. 65536")
    floor = SOCK_MIN_RCVBUF if kind == "rcv" else SOCK_MIN_SNDBUF
    return max(int(min(requested, cap)) * 2, floor)


def tcp_window(requested: float, *, cap: float = LINUX_CAP, ratio: float = DEFAULT_SCALING_RATIO,
               mss: float | None = None) -> float:
    """The TCP window a receive buffer request gives: the granted (doubled) buffer × the share
    TCP offers as window (50 % by default, include/net/tcp.h), i.e. about the request itself.
    With ``mss``: rounded down to whole segments, as a receiver avoiding the silly window
    syndrome advertises it (RFC 1122 §4.2.3.3; Linux ``__tcp_select_window``), never below
    what one segment smaller than the buffer needs."""
    if not 0 < ratio <= 1:
        raise ModelError(f"scaling ratio must be in (0, 1], not {ratio!r}", "e.g. 0.5")
    window = granted_buffer(requested, "rcv", cap=cap) * ratio
    if mss:
        window = max(window // mss * mss, min(window, mss))
    return window


def slow_start_bytes(duration_s: float, rtt_s: float, mss_bytes: float, *, initial_segments: int = 10,
                     window_bytes: float | None = None, handshake_rtts: float = 1.0) -> float:
    """Bytes TCP can deliver in ``duration_s`` when every round trip doubles the window from
    ``initial_segments`` (RFC 5681 §3.1, RFC 6928), capped at ``window_bytes``, after
    ``handshake_rtts`` round trips of connection set-up. For runs only a few RTTs long
    (seconds of delay), where the steady-state W/RTT never applies."""
    for name, value in (("duration", duration_s), ("RTT", rtt_s), ("MSS", mss_bytes)):
        if not value > 0 or not math.isfinite(value):
            raise ModelError(f"{name} must be positive, not {value!r}", f"give a {name} above zero")
    rounds = max(0.0, duration_s / rtt_s - handshake_rtts)
    window, total = float(initial_segments * mss_bytes), 0.0
    full = int(rounds)
    for _ in range(full):
        total += window
        window = window * 2 if window_bytes is None else min(window * 2, window_bytes)
    return total + (rounds - full) * window


def base_rtt(rate_bps: float, delay_s: float = 0.0, *, frame_bytes: int = 1514, ack_bytes: int = 66) -> float:
    """The smallest RTT of a link: both delays plus one full frame's and one ACK's transmission
    (store and forward, Kurose & Ross §1.4); what a window must cover even without delay."""
    if not rate_bps > 0 or delay_s < 0:
        raise ModelError("rate must be > 0 and delay ≥ 0", "e.g. base_rtt(100e6, 0.04)")
    return 2.0 * delay_s + 8.0 * (frame_bytes + ack_bytes) / rate_bps
