"""Go-Back-N over UDP: the sender (notebooks/ppcb-protocol.md, "Go-Back-N").

    CONN(4) ── CONACC ──▶ send DATA while fewer than N are unacknowledged
        ACC n (cumulative) ──▶ packets 0..n are done; slide the window, send more
        MAX_WAIT after the oldest unacknowledged DATA was sent, no ACC for it ──▶
            send the whole window again (its sends restart the timer)
        MAX_RETRANSMITS resends of the window in a row, no ACC sliding it ──▶ ERROR, end
    every DATA acknowledged ──▶ wait for RCVD (MAX_WAIT; lost: the last DATA again, as udpr)

One timer, the oldest unacknowledged DATA's: an ACC that slides the window moves it to the
next oldest one's send time. CONN and the wait for RCVD follow udpr's rules (``udp_client``).
An older ACC is ignored; RJT or CONRJT end the transfer (a strict PPCB server refuses
protocol 4 with CONRJT).

    python -m wirelab.transports.gbn.sender 8 127.0.0.1 5000 < file.bin     (window 8)
"""
from __future__ import annotations

import sys
import time

from ...errors import TransferError, UsageError
from ...transfer import ppcb
from ...transfer.result import Result
from ...transfer.sockets import buffer_sizes
from ...transfer.udp_client import _Client
from .. import gbn

__all__ = ["send_gbn"]

MAX_WINDOW = gbn.MAX_WINDOW


def send_gbn(host: str, port: int, data: bytes, *, window_packets: int = 8, proto: str = gbn.NAME,
             max_wait: float = 5.0, max_retransmits: int = 5, chunk: int = 1000,
             sndbuf: int | None = None, rcvbuf: int | None = None, session_id: bytes | None = None,
             progress=None, trace=None) -> Result:
    """Send ``data`` with Go-Back-N, at most ``window_packets`` DATA unacknowledged (the window N); the sender's Result
    (``ok`` after RCVD), shaped like ``udp_client.send_udp``'s. ``trace(event, packet_no)`` is
    called at each "send", "resend", "ack" (the cumulative number) and "timeout" (the oldest
    unacknowledged one): what a test or a ladder diagram reads."""
    if proto != gbn.NAME:
        raise UsageError(f"send_gbn speaks gbn, not {proto!r}", "use send_udp for udp and udpr")
    window = window_packets
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_WINDOW:
        raise UsageError(f"the window must be a whole number of DATA in 1..{MAX_WINDOW}, not {window!r}",
                         "e.g. --window 8 (1 is stop-and-wait)")
    if not 1 <= chunk <= ppcb.MAX_DATA:
        raise UsageError(f"chunk {chunk} B outside 1..{ppcb.MAX_DATA}", "use --packet 1000")
    sender = _Sender(host, port, "udpr", max_wait, max_retransmits, sndbuf, rcvbuf,
                     session_id or ppcb.new_session_id())
    sender.trace = trace or (lambda event, number: None)
    result = sender.result
    result.proto, result.bytes_offered, result.packet_bytes = gbn.NAME, len(data), chunk
    result.metadata["window_packets"] = window
    if progress is not None:
        progress.count = lambda: result.bytes_sent
        progress.start()
    try:
        sender.run_gbn(data, chunk, window)
        result.ok = True
    except TransferError as err:
        result.error = str(err)
    except OSError as err:     # ICMP port unreachable on the connected socket
        result.error = f"{err.strerror or err}: is a gbn server running on {host}:{port}?"
    finally:
        if progress is not None:
            result.metadata["progress"] = progress.stop()
        sender.sock.close()
    result.sender_end_time_s = time.time()
    result.first_data_time_s = result.send_times_s[0] if result.send_times_s else None
    result.sender_cpu_s, result.sender_syscalls = sender.meter.stop(), sender.meter.calls
    return result


class _Sender(_Client):
    """udpr's client (its socket, its CONN exchange, its RCVD wait) with a window for the DATA."""

    def run_gbn(self, data: bytes, chunk: int, window: int) -> None:
        result = self.result
        self.sock.connect(self.address)            # only the server's datagrams reach us now
        result.sndbuf_granted_bytes, result.rcvbuf_granted_bytes = buffer_sizes(self.sock)
        result.sender_start_time_s = time.time()
        try:
            self.exchange(gbn.conn(self.session, len(data)), lambda p: p.kind == "CONACC", "CONACC")
        finally:
            result.metadata["conn_resends"] = result.retransmissions
        result.retransmissions = 0
        result.ack_times_s.clear()                 # keep DATA's only
        view = memoryview(data)
        pieces = [view[at:at + chunk] for at in range(0, len(data), chunk)]
        try:
            done = self.slide(pieces, window) if pieces else False
        finally:
            result.packets_sent = len(result.send_times_s) + result.retransmissions
        if done or not pieces:
            if not pieces:
                self.wait(lambda p: p.kind == "RCVD", "RCVD")
            return
        last = gbn.data(self.session, len(pieces) - 1, bytes(pieces[-1]))
        try:                                       # as udpr: RCVD, or the last DATA again if it got lost
            self.wait(lambda p: p.kind == "RCVD", "RCVD")
        except TransferError:
            result.retransmissions += 1
            self.exchange(last, lambda p: p.kind == "RCVD", "RCVD")

    def slide(self, pieces: list, window: int) -> bool:
        """Every DATA until all are acknowledged; True if RCVD came already (it acknowledges all)."""
        result, count = self.result, len(pieces)
        base = next_no = 0                          # oldest unacknowledged; next never sent
        sent_at: dict[int, float] = {}              # monotonic time of each unacknowledged DATA's last send
        first_at: dict[int, float] = {}             # ... and of its first send (ack_times_s counts from it)
        sent_once: set[int] = set()                 # not resent yet: its ACC measures an RTT (Karn)
        tries = 1                                   # sends of the current oldest DATA
        timeouts = in_flight_max = 0
        self.sending_data = True
        while base < count:
            while next_no < count and next_no < base + window:
                self.send_data(pieces, next_no, sent_at, resend=False)
                first_at[next_no] = sent_at[next_no]
                sent_once.add(next_no)
                next_no += 1
            in_flight_max = max(in_flight_max, next_no - base)
            deadline = sent_at[base] + self.max_wait
            packet = self.receive(deadline)
            if packet is None:                      # the timer: the oldest DATA's MAX_WAIT is over
                if time.monotonic() < deadline:
                    continue
                self.trace("timeout", base)
                if tries > self.max_retransmits:
                    raise TransferError(f"timeout: no ACC for packet {base} after {self.max_retransmits} "
                                        f"resends of the window {self.max_wait:g} s apart",
                                        "the server stopped answering or the link drops everything")
                timeouts, tries = timeouts + 1, tries + 1
                for number in range(base, next_no):  # Go-Back-N: the whole window again
                    self.send_data(pieces, number, sent_at, resend=True)
                    sent_once.discard(number)
                continue
            if packet.kind == "RCVD":
                base = count
                break
            if packet.kind != "ACC" or packet.packet_no < base or packet.packet_no >= next_no:
                continue                            # an older ACC, a repeated CONACC: ignore
            now = time.monotonic()
            self.trace("ack", packet.packet_no)
            if packet.packet_no in sent_once:
                result.rtts_s.append(now - sent_at[packet.packet_no])
            for number in range(base, packet.packet_no + 1):
                sent_at.pop(number, None)
                sent_once.discard(number)
                result.ack_times_s.append(now - first_at.pop(number))
            base, tries = packet.packet_no + 1, 1
        self.sending_data = False
        result.metadata.update(timeouts=timeouts, max_in_flight=in_flight_max)
        return packet is not None and packet.kind == "RCVD"

    def send_data(self, pieces: list, number: int, sent_at: dict, *, resend: bool) -> None:
        body = pieces[number]
        if not resend:
            self.result.send_times_s.append(time.time())
        else:
            self.result.retransmissions += 1
        self.send(gbn.data(self.session, number, bytes(body)))
        sent_at[number] = time.monotonic()
        self.result.bytes_sent += len(body)
        self.trace("resend" if resend else "send", number)


def main(argv: list[str] | None = None) -> int:
    """``WINDOW HOST PORT`` with the input on stdin."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or not argv[0].isdigit():
        print("usage: python -m wirelab.transports.gbn.sender WINDOW HOST PORT < file", file=sys.stderr)
        return 2
    result = send_gbn(argv[1], int(argv[2]), sys.stdin.buffer.read(), window_packets=int(argv[0]))
    if not result.ok:
        print(f"ERROR: {result.error}", file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
