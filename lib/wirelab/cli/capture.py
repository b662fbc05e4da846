"""``wirelab capture``: dumpcap on an interface (or inside a testbed host) into a pcapng file."""
from __future__ import annotations

import signal
import threading

from ..capture import LiveCapture
from . import args as types


def add_parser(subparsers):
    p = subparsers.add_parser("capture", help="capture packets with dumpcap into a pcapng file",
                              description="Capture with dumpcap until --duration, --filesize or "
                              "--count is reached, or Ctrl-C; prints dumpcap's received/dropped counts.")
    p.add_argument("-i", "--interface", default="lo", help="interface (default lo)")
    p.add_argument("-f", "--filter", default=None, help='capture filter, e.g. "tcp port 5201"')
    p.add_argument("-s", "--snaplen", type=types.size, default=None, help="bytes kept per frame, e.g. 128")
    p.add_argument("--duration", type=types.time, default=10.0, help="stop after this long (default 10s)")
    p.add_argument("--filesize", type=types.size, default=None, help="stop at this file size, e.g. 10MB")
    p.add_argument("-c", "--count", type=int, default=None, help="stop after this many packets")
    p.add_argument("--netns", default=None, help="capture inside this network namespace (testbed host)")
    p.add_argument("-w", "--write", required=True, help="output .pcapng file")
    return p


def run(args) -> int:
    prefix = ["ip", "netns", "exec", args.netns] if args.netns else []
    cap = LiveCapture(args.interface, args.write, capture_filter=args.filter, snaplen=args.snaplen,
                      duration=args.duration, packets=args.count, prefix=prefix,
                      filesize_kb=max(args.filesize // 1000, 1) if args.filesize else None)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        with cap:
            print(f"capturing on {args.interface} into {args.write} (Ctrl-C stops)")
            while not stop.is_set() and cap.running:
                stop.wait(0.2)
    finally:
        signal.signal(signal.SIGINT, previous)
    for s in cap.stats:
        print(f"{s.interface}: received {s.received}, dropped {s.dropped} (kernel {s.kernel_dropped}, "
              f"interface {s.if_dropped})")
    print(f"wrote {args.write}")
    return 0
