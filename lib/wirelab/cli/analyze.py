"""``wirelab analyze FILE [--filter EXPR]``: the flow table, TCP analysis, where the losses
happened, the overhead read from the wire and RFC 6349's metrics of the main TCP transfer, of the
frames a display filter keeps; the report itself is ``capture.report``'s. With ``--expert``,
``--follow N`` or ``--graph KIND --png FILE`` it prints (or draws) those instead, as
``open_capture``'s Capture gives them."""
from __future__ import annotations

import json

from . import args as types
from ..errors import UsageError


def add_parser(subparsers):
    p = subparsers.add_parser("analyze", help="read a capture: flows, retransmissions, overhead",
                              description="Read a pcap/pcapng file: conversations (like tshark -z conv), "
                              "TCP retransmissions and losses (like Wireshark's tcp.analysis flags), the "
                              "overhead of the main flow read from the wire and, with --rate, the goodput "
                              "the model predicts for it beside the goodput measured.")
    p.add_argument("file", help="a .pcap or .pcapng file, or a dataset folder (wirelab capture convert)")
    p.add_argument("--no-ppcb", dest="ppcb", action="store_false",
                   help="skip reading PPCB sessions (the kit reads them by the rules of its Wireshark dissector)")
    p.add_argument("--rate", type=types.rate, default=None,
                   help="link rate the capture went through, e.g. 10mbit (enables the prediction)")
    p.add_argument("--wire", choices=["real", "emulated"], default="emulated",
                   help="emulated: 14 B/frame as tbf charges (default); real: 38 B of Ethernet")
    p.add_argument("--filter", metavar="EXPR", default=None,
                   help="a Wireshark display filter, e.g. 'tcp.port == 5201 and not tcp.analysis.retransmission': "
                        "the report is of the frames it keeps")
    p.add_argument("--flows", type=int, default=10, metavar="N", help="show the N biggest flows")
    views = p.add_argument_group("instead of the report", "print (or draw) one of Wireshark's views; "
                                 "with --filter, of the frames it keeps")
    views.add_argument("--expert", action="store_true",
                       help="Wireshark's expert information, as tshark -q -z expert prints it")
    views.add_argument("--follow", type=int, default=None, metavar="N",
                       help="TCP stream N's bytes, both directions, as tshark -q -z follow,tcp,ascii,N")
    views.add_argument("--raw", action="store_true", help="with --follow: hex, as tshark's follow,tcp,raw")
    views.add_argument("--graph", choices=["sequence", "io", "rtt"], default=None,
                       help="draw tcptrace's time-sequence graph or the round-trip times of --stream N, "
                            "or the I/O graph (bits per --interval), into --png FILE")
    views.add_argument("--stream", type=int, default=None, metavar="N", help="the TCP stream (tcp.stream) to draw")
    views.add_argument("--png", default=None, metavar="FILE", help="the PNG file --graph writes")
    views.add_argument("--interval", type=float, default=0.1, metavar="S",
                       help="the I/O graph's interval in seconds (default 0.1; any, down to 1e-6)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def _views(args) -> int:
    """--expert, --follow, --graph: from the Capture (pandas; only when asked for)."""
    # start-up: numpy, pandas, pyarrow, capture.stats.pictures only when _views() runs (wirelab --help loads this)
    from ..capture import open_capture
    from ..capture.stats.expert import expert_text
    from ..capture.stats.pictures import save_graph

    cap = open_capture(args.file)
    if args.filter:
        cap = cap.filter(args.filter)
    if args.expert:
        print(expert_text(cap.expert()), end="")
    if args.follow is not None:
        print(cap.follow(args.follow).text("raw" if args.raw else "ascii"), end="")
    if args.graph:
        path = save_graph(cap, args.graph, args.png, stream=args.stream, interval=args.interval)
        print(f"wrote the {args.graph} graph to {path}")
    return 0


def _check(args) -> None:
    """Options that make sense only together: a clear error, not a silent no-op."""

    if args.graph and not args.png:
        raise UsageError(f"--graph {args.graph} needs a file to write", "add --png FILE")
    if args.png and not args.graph:
        raise UsageError("--png without --graph", "add --graph sequence, io or rtt")
    if args.raw and args.follow is None:
        raise UsageError("--raw is a way to --follow a stream", "add --follow N")
    if args.stream is not None and args.graph not in ("sequence", "rtt"):
        raise UsageError("--stream chooses the stream of --graph sequence or rtt", "add --graph sequence or rtt")


def run(args) -> int:
    _check(args)
    if args.expert or args.follow is not None or args.graph:
        return _views(args)
    from ..capture.report import render, report      # (start-up: numpy, only when a capture is read)
    r = report(args.file, rate_bps=args.rate, wire=args.wire, top=args.flows, ppcb=args.ppcb, filter=args.filter)
    print(json.dumps(r, indent=2) if args.json else render(r))
    return 0
