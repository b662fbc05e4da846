"""``wirelab serve {tcp|udp} PORT``: the PPCB server (udp serves udp and udpr),
also answering wirelab's measurement modes on the same port."""
from __future__ import annotations

import sys

from .. import transports
from ..transfer.sockets import DEFAULT_HOST
from . import args as types


def add_parser(subparsers):
    p = subparsers.add_parser("serve", help="run a tcp or udp/udpr server (received bytes to stdout)",
                              description="Serve PPCB clients one after another, as the assignment's "
                              "server: received bytes go to stdout (or --out FILE); a client's error "
                              "is printed as 'ERROR: ...' on stderr and the next client is served.")
    p.add_argument("proto", choices=transports.SOCKETS,
                   help="the socket: udp serves every transport over UDP (" +
                        ", ".join(t.name for t in transports.transports() if t.socket == "udp") + ")")
    p.add_argument("port", type=int)
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}: loopback only)")
    p.add_argument("--out", metavar="FILE", help="write received bytes here instead of stdout")
    p.add_argument("--max-wait", type=types.time, default=5.0, help="MAX_WAIT (default 5s)")
    p.add_argument("--max-retransmits", type=int, default=5, help="MAX_RETRANSMITS (default 5)")
    p.add_argument("--rcvbuf", type=types.size, default=None, help="SO_RCVBUF to request, e.g. 4MiB")
    p.add_argument("--sndbuf", type=types.size, default=None, help="SO_SNDBUF to request")
    p.add_argument("--sessions", type=int, default=None, metavar="N", help="exit after N clients")
    p.add_argument("--json", action="store_true",
                   help="print each client's Result as one JSON line (stdout with --out, else stderr)")
    return p


def run(args) -> int:
    # start-up: transfer.tcp only when run() runs (wirelab --help imports this module)
    from ..transfer import listen_tcp, listen_udp, serve_tcp, serve_udp
    listen = listen_tcp if args.proto == "tcp" else listen_udp
    sock = listen(args.host, args.port, rcvbuf=args.rcvbuf, sndbuf=args.sndbuf)
    out = open(args.out, "wb") if args.out else sys.stdout.buffer
    report = sys.stdout if args.out else sys.stderr

    def on_result(result):
        result.rcvbuf_requested_bytes, result.sndbuf_requested_bytes = args.rcvbuf, args.sndbuf
        if args.json:
            print(result.to_json(), file=report, flush=True)

    host, port = sock.getsockname()[:2]
    print(f"wirelab serve: {args.proto} listening on {host}:{port}", file=sys.stderr, flush=True)
    kwargs = {"max_retransmits": args.max_retransmits} if args.proto == "udp" else {}
    try:
        serve = serve_tcp if args.proto == "tcp" else serve_udp
        serve(sock, out=out, max_wait=args.max_wait, sessions=args.sessions, on_result=on_result,
              log=lambda line: print(line, file=sys.stderr, flush=True), **kwargs)
    finally:
        sock.close()
        if args.out:
            out.close()
    return 0
