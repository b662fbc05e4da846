"""``wirelab analyze FILE [--filter EXPR]``: the flow table, TCP analysis, the overhead read from
the wire and RFC 6349's metrics of the main TCP transfer, of the frames a display filter keeps;
the report itself is ``capture.report``'s."""
from __future__ import annotations

import json

from . import args as types


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
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def run(args) -> int:
    from ..capture.report import render, report      # (start-up: numpy, only when a capture is read)
    r = report(args.file, rate_bps=args.rate, wire=args.wire, top=args.flows, ppcb=args.ppcb, filter=args.filter)
    print(json.dumps(r, indent=2) if args.json else render(r))
    return 0
