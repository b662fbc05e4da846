"""``wirelab wireshark``: the kit's PPCB dissector for Wireshark and tshark."""
from __future__ import annotations

import json


def add_parser(subparsers):
    p = subparsers.add_parser("wireshark", help="PPCB in Wireshark: install the dissector, decode a capture",
                              description="wirelab ships a Lua dissector for PPCB (tcp, udp, udpr). "
                              "`install` copies it into your Wireshark Lua plugins folder (the GUI and "
                              "tshark then load it by themselves); `path` prints where the packaged one is "
                              "(for tshark -X lua_script:PATH); `packets FILE` lists a capture's PPCB packets.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    install = sub.add_parser("install", help="copy the dissector into your Lua plugins folder")
    install.add_argument("--folder", default=None, help="another folder (default: tshark -G folders)")
    sub.add_parser("path", help="print the packaged dissector's path")
    packets = sub.add_parser("packets", help="one line per PPCB packet of a capture")
    packets.add_argument("file", help="a .pcap or .pcapng file")
    packets.add_argument("-Y", "--filter", default=None, help='display filter, e.g. "ppcb.type == 6"')
    packets.add_argument("--udp-port", type=int, action="append", default=[],
                         help="also decode this UDP port as PPCB (repeatable)")
    packets.add_argument("--tcp-port", type=int, action="append", default=[],
                         help="also decode this TCP port as PPCB (repeatable)")
    packets.add_argument("--json", action="store_true", help="one JSON object per line")
    return p


def run(args) -> int:
    # start-up: numpy, pandas, pyarrow only when run() runs
    from ..capture.tools import ppcb_dissector as dissector

    if args.action == "path":
        print(dissector.DISSECTOR)
        return 0
    if args.action == "install":
        target = dissector.install(args.folder)
        print(f"installed the PPCB dissector: {target}")
        print("Wireshark loads it at start (or Analyze → Reload Lua Plugins); filter with `ppcb`.")
        return 0
    table = dissector.tshark_ppcb_packets(args.file, display_filter=args.filter, udp_ports=args.udp_port,
                                   tcp_ports=args.tcp_port)
    if args.json:
        for row in table.astype(object).where(table.notna(), None).to_dict("records"):
            print(json.dumps(row))
        return 0
    if table.empty:
        print(f"{args.file}: no PPCB packets (a stream or port not recognised? try --udp-port/--tcp-port)")
        return 0
    for row in table.itertuples():
        extra = "".join(f" {name}={getattr(row, name)}" for name in
                        ("protocol_id", "total_length", "packet_no", "data_len") if getattr(row, name) is not None
                        and str(getattr(row, name)) != "<NA>")
        print(f"{row.frame:>6} {row.time:10.6f} {row.transport} {row.src}:{row.sport} → {row.dst}:{row.dport}"
              f"  {row.type:<6} session {row.session_id}{extra}")
    return 0
