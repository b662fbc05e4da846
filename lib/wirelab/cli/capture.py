"""``wirelab capture``: dumpcap on an interface (or inside a testbed host) into a pcapng file;
``wirelab capture convert CAPTURE OUT/``: a capture of any size → a parquet dataset (DuckDB, Dask)."""
from __future__ import annotations

import json
import signal
import threading

from ..capture import LiveCapture
from ..errors import UsageError
from . import args as types


def add_parser(subparsers):
    p = subparsers.add_parser("capture", help="capture packets with dumpcap into a pcapng file",
                              description="Capture with dumpcap until --duration, --filesize or "
                              "--count is reached, or Ctrl-C; prints dumpcap's received/dropped counts. "
                              "`wirelab capture convert CAPTURE OUT/` writes a capture of any size as a "
                              "parquet dataset for DuckDB and Dask.")
    p.add_argument("-i", "--interface", default="lo", help="interface (default lo)")
    p.add_argument("-f", "--filter", default=None, help='capture filter, e.g. "tcp port 5201"')
    p.add_argument("-s", "--snaplen", type=types.size, default=None, help="bytes kept per frame, e.g. 128")
    p.add_argument("--duration", type=types.time, default=10.0, help="stop after this long (default 10s)")
    p.add_argument("--filesize", type=types.size, default=None, help="stop at this file size, e.g. 10MB")
    p.add_argument("-c", "--count", type=int, default=None, help="stop after this many packets")
    p.add_argument("--netns", default=None, help="capture inside this network namespace (testbed host)")
    p.add_argument("-w", "--write", help="output .pcapng file (required to capture)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    c = actions.add_parser("convert", help="write a pcap/pcapng file as a parquet dataset",
                           description="Read CAPTURE in chunks (memory stays flat whatever its size) and "
                           "write OUT/part-*.parquet (the columns of read_capture) and OUT/_capture.json. "
                           "Query it with wirelab.capture.open_dataset(OUT) (DuckDB) or "
                           "dask.dataframe.read_parquet(OUT).")
    c.add_argument("capture", help="a .pcap or .pcapng file")
    c.add_argument("out", help="the dataset folder to write")
    c.add_argument("--chunk-packets", type=int, default=None, metavar="N",
                   help="packets per parquet part (default 250000)")
    c.add_argument("--overwrite", action="store_true", help="replace OUT if it is a capture dataset")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def convert(args) -> int:
    # start-up: numpy, pandas, pyarrow only when convert() runs
    from ..capture.sql.dataset import convert as write_dataset
    from ..capture.reader.stream import CHUNK_PACKETS
    out = write_dataset(args.capture, args.out, chunk_packets=args.chunk_packets or CHUNK_PACKETS,
                        overwrite=args.overwrite, progress=not args.quiet)
    info = json.loads((out / "_capture.json").read_text())
    print(f"wrote {out}: {info['packets']} packets of a {info['format']} file in {info['parts']} parquet "
          f"part(s)" + "".join(f"\nnote: {n}" for n in info["notes"]))
    return 0


def run(args) -> int:
    if getattr(args, "action", None) == "convert":
        return convert(args)
    if not args.write:
        raise UsageError("no output file", "give -w FILE.pcapng (or `wirelab capture convert CAPTURE OUT/`)")
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
