"""``wirelab send {tcp|udp|udpr|...} HOST PORT < file``: the PPCB client, plus
wirelab's measurement modes (--time, --rate, --echo)."""
from __future__ import annotations

import sys

from .. import transports
from ..errors import UsageError
from . import args as types


def add_parser(subparsers):
    p = subparsers.add_parser("send", help="send stdin (or --in FILE) to a wirelab/PPCB server",
                              description="Send a file as the assignment's client (exit 0 after RCVD, "
                              "'ERROR: ...' on stderr otherwise), or measure: --time (bulk), "
                              "--rate with --packet (offered load), --echo (round trips).")
    p.add_argument("proto", choices=transports.names())
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--in", dest="infile", metavar="FILE", help="read the bytes to send from FILE")
    p.add_argument("--time", type=types.time, default=None, help="bulk: send for this long, e.g. 10s")
    p.add_argument("--rate", type=types.rate, default=None, help="offered load, e.g. 5MB/s or 40mbit")
    p.add_argument("--packet", type=types.size, default=None,
                   help="bytes per DATA/record (file: 1000, measurements: 1400)")
    p.add_argument("--echo", type=int, nargs="?", const=100, default=None, metavar="N",
                   help="N request/response rounds for RTT (default 100)")
    p.add_argument("--sndbuf", type=types.size, default=None, help="SO_SNDBUF to request, e.g. 64KB")
    p.add_argument("--rcvbuf", type=types.size, default=None, help="SO_RCVBUF to request")
    p.add_argument("--congestion", default=None, help="TCP congestion control, e.g. cubic or bbr")
    p.add_argument("--max-wait", type=types.time, default=5.0, help="MAX_WAIT (default 5s)")
    p.add_argument("--max-retransmits", type=int, default=5, help="MAX_RETRANSMITS (default 5)")
    p.add_argument("--gso", action="store_true", help="udp bulk only: Linux UDP GSO fast path")
    p.add_argument("--end-markers", type=int, nargs="?", const=3, default=0, metavar="N",
                   help="udp --time/--rate: end with N 4-byte datagrams 2 s apart, as nttcp does (default N: 3)")
    p.add_argument("--pacing", choices=["even", "tick"], default="even",
                   help="--rate: even spacing (default), or each second's bytes back to back at a 1 s "
                        "timer tick, as document 000's Java TimerTask")
    p.add_argument("--json", action="store_true", help="print the Result as JSON on stdout")
    types.add_transport_options(p)
    return p


def run(args) -> int:
    from ..transfer import measure     # the programs, only when one runs
    measuring = args.time is not None or args.rate is not None or args.echo is not None
    common = dict(max_wait=args.max_wait, sndbuf=args.sndbuf, rcvbuf=args.rcvbuf)
    transport = transports.get(args.proto)
    if measuring:
        mode = "echo" if args.echo is not None else "load" if args.rate is not None else "bulk"
        if not transport.supports({"bulk": "time"}.get(mode, mode)):
            able = [t.name for t in transports.transports() if t.supports("time")]
            raise UsageError(f"measurement modes run over {' or '.join(able)}",
                             f"use {' or '.join(able)} with --time/--rate/--echo")
        result = measure(transport.socket, args.host, args.port, mode=mode, time_s=args.time or 10.0,
                         rate_bps=args.rate, packet=args.packet or 1400, count=args.echo or 100,
                         max_retransmits=args.max_retransmits, congestion=args.congestion,
                         gso=args.gso, end_markers=args.end_markers,
                         pacing=args.pacing if mode == "load" else "even", **common)
    else:
        if args.infile:
            with open(args.infile, "rb") as f:
                data = f.read()
        else:
            data = sys.stdin.buffer.read()
        chunk = args.packet or 1000
        # the transport's own sender: a stream's takes a congestion control, a datagram's resends
        own = {"congestion": args.congestion} if transport.stream else {"max_retransmits": args.max_retransmits}
        result = transport.send(args.host, args.port, data, chunk=chunk, **own, **common,
                                **types.transport_options(args, args.proto))
    if args.json:
        print(result.to_json(indent=1))
    elif measuring:
        print(result.summary())
    if not result.ok:
        print(f"ERROR: {result.error or result.receiver_error}", file=sys.stderr)
        return 1
    return 0
