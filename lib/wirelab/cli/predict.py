"""``wirelab predict``: what the model says for one protocol on one link."""
from __future__ import annotations

import json

from .. import transports, units
from ..model import CONGESTION_CONTROLS, predict
from ..model.prediction import SOURCES, TERM_SOURCES
from . import args as types


def add_parser(subparsers):
    p = subparsers.add_parser("predict", help="predict goodput from first principles",
                              description="Predict goodput from header overhead, window, loss "
                              "and stop-and-wait limits (no traffic is sent).")
    p.add_argument("--proto", choices=transports.names(), default="tcp")
    p.add_argument("--rate", type=types.rate, default=1e9, help="link rate, e.g. 10mbit (default 1gbit)")
    p.add_argument("--mtu", type=types.size, default=None, help="IP MTU in bytes (default 1500, 1492 with --pppoe)")
    p.add_argument("--payload", type=types.size, default=None,
                   help="application bytes per write/datagram (default: a full packet)")
    p.add_argument("--ip", type=int, choices=[4, 6], default=4, help="IP version")
    p.add_argument("--tcp-options", type=int, default=0, metavar="N", help="TCP option bytes")
    p.add_argument("--timestamps", action="store_true", help="TCP timestamps (+12 B options)")
    p.add_argument("--vlan", action="store_true", help="802.1Q tag (+4 B per frame)")
    p.add_argument("--pppoe", action="store_true", help="PPPoE (+8 B per frame, MTU 1492)")
    p.add_argument("--rtt", type=types.time, default=None, help="round-trip time, e.g. 40ms")
    p.add_argument("--loss", type=types.fraction, default=0.0, help="per-packet loss, e.g. 1%%")
    p.add_argument("--loss-reverse", type=types.fraction, default=None,
                   help="loss on the return path (udpr ACCs; default: same as --loss)")
    p.add_argument("--window", type=types.size_float, default=None, help="TCP window, e.g. 64KB")
    p.add_argument("--wire", choices=["real", "emulated"], default="real",
                   help="real: 38 B/frame of Ethernet; emulated: 14 B as tbf counts")
    p.add_argument("--max-wait", type=types.time, default=5.0, help="udpr MAX_WAIT (default 5s)")
    p.add_argument("--max-retransmits", type=int, default=5, help="udpr MAX_RETRANSMITS (default 5)")
    p.add_argument("--cc", choices=CONGESTION_CONTROLS, default=None,
                   help="TCP congestion control (default: the classic Reno limits, Mathis and PFTK)")
    p.add_argument("--size", type=types.size, default=None,
                   help="bytes of one file, e.g. 200KB: predicts its transfer time too")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    types.add_transport_options(p)
    return p


def run(args) -> int:
    result = predict(args.proto, args.rate, mtu=args.mtu, payload=args.payload, ip_version=args.ip,
                     tcp_options=args.tcp_options, timestamps=args.timestamps, vlan=args.vlan,
                     pppoe=args.pppoe, rtt_s=args.rtt, loss=args.loss, loss_reverse=args.loss_reverse,
                     window_bytes=args.window, wire=args.wire, max_wait_s=args.max_wait,
                     max_retransmits=args.max_retransmits, cc=args.cc, size=args.size,
                     **types.transport_options(args, args.proto))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    print(render(result))
    return 0


def render(result) -> str:
    """The prediction as a small plain-text table."""
    s = result.stack
    lines = [f"prediction for {result.proto.upper()} over IPv{s.ip_version} at "
             f"{units.format_rate(result.rate_bps)}, MTU {s.mtu} B, {s.wire} wire "
             f"({s.l2} B per frame)",
             f"  payload per write        {result.payload_bytes} B",
             f"  bytes on the wire        {result.wire_bytes} B in {result.fragments} packet(s)",
             f"  efficiency η             {result.efficiency:.4f}"]
    if result.delivery_probability < 1:
        lines.append(f"  delivered fraction       {result.delivery_probability:.4f}")
    if result.bdp_bytes:
        lines.append(f"  bandwidth-delay product  {units.format_size(result.bdp_bytes)}")
    lines.append("  limits:")
    for name, value in result.limits.items():
        mark = "  ← binds" if name == result.binding else ""
        lines.append(f"    {name:<14} {units.format_rate(value):>16}   ({result.source(name)}){mark}")
    if result.goodput_bps != result.goodput_bps and result.transfer is None:   # NaN: outside the model
        lines.append("  predicted goodput        not predicted: outside the model (see the notes)")
    elif result.transfer is None:
        lines.append(f"  predicted goodput        {units.format_rate(result.goodput_bps)}")
    else:
        lines.append(f"  steady-state goodput     {units.format_rate(result.steady_goodput_bps)}")
        lines.extend(_transfer_lines(result))
    lines.extend(f"  note: {note}" for note in result.notes)
    return "\n".join(lines)


def _transfer_lines(result) -> list[str]:
    """The whole file: every term of its time, what binds, the goodput of the finite transfer."""
    t = result.transfer
    cc = f" with {result.cc}" if result.cc else ""
    lines = [f"  transfer of {units.format_size(t.size_bytes)}{cc}:"]
    for phase, terms in (("set-up", t.setup), ("data", t.data), ("final", t.final)):
        for name, seconds in terms.items():
            mark = "  ← binds" if phase == "data" and name == t.binding else ""
            source = TERM_SOURCES.get(name) or SOURCES.get(name, "")
            lines.append(f"    {phase:<7}{name:<14} {units.format_time(seconds):>10}   ({source}){mark}")
    spread = f" ± {units.format_time(t.std_s)}" if t.std_s else ""
    lines.append(f"  transfer time            {units.format_time(t.total_s)}{spread}   "
                 f"(first packet → RCVD; mostly {t.transfer_binding})")
    lines.append(f"  data time                {units.format_time(t.data_time_s)}   "
                 "(first data byte sent → last byte delivered)")
    if t.size_bytes:
        lines.append(f"  predicted goodput        {units.format_rate(result.goodput_bps)}   (size / data time)")
    extras = t.extras
    if "expected_lost_datagrams" in extras and extras["delivered_fraction"] < 1:
        lines.append(f"  datagrams lost           {extras['expected_lost_datagrams']:.1f} of {extras['datagrams']} "
                     f"expected; whole file arrives with probability {extras['complete_probability']:.3g}")
    if extras.get("give_up_probability"):
        lines.append(f"  client gives up          with probability {extras['give_up_probability']:.3g}")
    return lines
