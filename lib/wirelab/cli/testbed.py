"""``wirelab testbed``: build an emulated link, use any tool across it, remove it.

    wirelab testbed up demo --rate 10mbit --delay 20ms --loss 1%
    wirelab testbed up cable --rate 10mbit --wire real      # a cable's 38 B a frame (document 002)
    wirelab testbed up fttc --rate 21mbit --rate-reverse 54mbit --wire real --pppoe
    wirelab testbed up doc3 --topology broker --link 'b-r*:delay=20ms,jitter=5ms' \
                                              --link 'r*-d:delay=20ms,jitter=5ms'
    wirelab testbed exec demo b -- iperf3 -s -1 &
    wirelab testbed exec demo a -- iperf3 -c 10.77.0.2
    wirelab testbed ls
    wirelab testbed down demo        # or: wirelab testbed down --all
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time

from ..errors import LinkError, UsageError
from ..link import capabilities
from ..link.cleanup import name_of, remove, remove_all, stop_process, testbeds, valid_name
from ..link.detect import BACKENDS
from ..link.spec import LinkSpec
from ..link.topology import parse_link_option
from . import args as types

UP_TIMEOUT_S = 60.0
#: What ``--link NAME:KEY=VALUE,...`` may set (``LinkSpec.parse``'s keywords).
LINK_KEYS = ("rate", "delay", "jitter", "loss", "duplicate", "reorder", "mtu", "queue", "burst", "wire",
             "rate_reverse", "delay_reverse", "jitter_reverse", "loss_reverse", "duplicate_reverse",
             "reorder_reverse")
LINK_HELP = ("one link's own spec, repeatable: LINK:KEY=VALUE,... where LINK is a-b (e.g. s-b, b-r1, "
             "r2-d; a shell pattern like 'b-r*' names several) and KEY is one of rate, delay, jitter, "
             "loss, duplicate, reorder, mtu, queue, burst, wire or rate_reverse, delay_reverse, ... ; "
             "keys not given keep the values of --rate, --delay, ... (later --link options win). "
             "E.g. --link 's-b:rate=10mbit' --link 'b-r*:delay=20ms,jitter=5ms'")


def add_parser(subparsers):
    p = subparsers.add_parser("testbed", help="build an emulated link and run tools across it",
                              description="Hosts in network namespaces joined by an emulated link "
                              "(tbf/netem/iptables, or wirelab's userspace link), or loopback relays.")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="build a testbed and keep it until `down`")
    up.add_argument("name", help="a short name, e.g. demo")
    up.add_argument("--rate", type=types.rate, default=None, help="link rate, e.g. 10mbit (default: unlimited)")
    up.add_argument("--delay", type=types.time, default=0.0, help="one-way delay, e.g. 20ms")
    up.add_argument("--jitter", type=types.time, default=0.0, help="delay variation, e.g. 2ms")
    up.add_argument("--loss", type=types.fraction, default=0.0, help="per-packet loss, e.g. 1%%")
    up.add_argument("--duplicate", type=types.fraction, default=0.0, help="duplicated packets, e.g. 0.5%%")
    up.add_argument("--reorder", type=types.fraction, default=0.0, help="packets sent without the delay")
    for name in ("rate", "delay", "loss"):
        kind = {"rate": types.rate, "delay": types.time, "loss": types.fraction}[name]
        up.add_argument(f"--{name}-reverse", type=kind, default=None, help=f"{name} from b to a (default: same)")
    up.add_argument("--mtu", type=types.size, default=None,
                    help="MTU on every interface (default 1500, with --pppoe 1492)")
    up.add_argument("--wire", choices=["emulated", "real"], default="emulated",
                    help="what a frame costs: emulated (what a qdisc sees, IP + 14 B) or real "
                         "(a cable: + 38 B preamble, header, FCS and gap, at least 84 B)")
    up.add_argument("--pppoe", action="store_true", help="8 B of PPPoE a frame more (an FTTC/DSL line)")
    up.add_argument("--queue", type=types.size, default=None, help="queue limit, e.g. 64KB (default: 100 ms)")
    up.add_argument("--burst", type=types.size, default=None, help="tbf burst (default: one frame and 1 ms of the rate)")
    up.add_argument("--backend", choices=BACKENDS, default="auto")
    up.add_argument("--topology", choices=["two_hosts", "broker"], default="two_hosts",
                    help="two_hosts: a–b; broker: document 003's s, b, r1, r2, d (links s-b, b-r1, "
                         "b-r2, r1-d, r2-d: the same spec on each unless --link says otherwise)")
    up.add_argument("--link", action="append", default=[], metavar="LINK:KEY=VALUE,...", help=LINK_HELP)
    up.add_argument("--forward", action="append", default=[], metavar="PROTO:PORT",
                    help="loopback only: relay udp:PORT or tcp:PORT on 127.0.0.1 through the link")
    up.add_argument("--seed", type=int, default=None, help="seed of the random loss (userspace/loopback)")
    up.add_argument("--json", action="store_true", help="print one JSON object")
    ex = sub.add_parser("exec", help="run a command on a host: exec NAME HOST -- COMMAND...")
    ex.add_argument("name")
    ex.add_argument("host")
    ex.add_argument("command", nargs="+", help="the command (put -- before it)")
    show = sub.add_parser("show", help="what the kernel holds for a testbed now: interfaces, qdiscs, "
                          "counters (read through netlink)")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    ls = sub.add_parser("ls", help="list testbeds (stale ones too)")
    ls.add_argument("--json", action="store_true")
    down = sub.add_parser("down", help="remove a testbed, or everything wirelab made (--all)")
    down.add_argument("name", nargs="?")
    down.add_argument("--all", action="store_true", help="every namespace, link process and relay of wirelab")
    caps = sub.add_parser("caps", help="what this machine can emulate, and why")
    caps.add_argument("--json", action="store_true")
    return p


def run(args) -> int:
    return {"up": _up, "exec": _exec, "show": _show, "ls": _ls, "down": _down,
            "caps": _caps}[args.action](args)


def _options(args) -> dict:
    """The link options given on the command line (a ``*_reverse`` only when given)."""
    options = {name: getattr(args, name) for name in ("rate", "delay", "jitter", "loss", "duplicate",
                                                       "reorder", "mtu", "queue", "burst", "wire", "pppoe")}
    options.update({f"{n}_reverse": getattr(args, f"{n}_reverse") for n in ("rate", "delay", "loss")
                    if getattr(args, f"{n}_reverse") is not None})
    return options


def _spec(args) -> LinkSpec:
    return LinkSpec.parse(**_options(args))


def _link_specs(args) -> dict:
    """``--link`` options → {link name or pattern: LinkSpec}, each starting from the global options."""
    specs = {}
    for text in args.link:
        name, given = parse_link_option(text)
        unknown = sorted(set(given) - set(LINK_KEYS))
        if unknown:
            raise UsageError(f"unknown key(s) {', '.join(unknown)} in --link {text!r}",
                             f"use {', '.join(LINK_KEYS)}")
        specs[name] = LinkSpec.parse(**{**_options(args), **given})
    return specs


def _find(name: str) -> dict:
    found = [e for e in testbeds().values() if e.get("name") == name and e["alive"]]
    if not found:
        raise UsageError(f"no testbed called {name!r} is up", "see `wirelab testbed ls`")
    return found[0]


def _up(args) -> int:
    if not valid_name(args.name):
        raise UsageError(f"testbed name {args.name!r} is not lowercase letters, digits, - or _", "e.g. demo")
    if any(e.get("name") == args.name and e["alive"] for e in testbeds().values()):
        raise UsageError(f"a testbed called {args.name!r} is already up",
                         f"use it, or `wirelab testbed down {args.name}` first")
    spec = _spec(args)
    links = _link_specs(args)
    # start-up: link.keeper only when _up() runs (wirelab --help imports this module)
    from ..link.keeper import topology_for
    topology_for(args.topology, spec, links)          # a --link naming no link fails here, before any work
    config = {"name": args.name, "backend": args.backend, "topology": args.topology,
              "spec": spec.to_dict(), "seed": args.seed, "forward": args.forward,
              "links": {name: s.to_dict() for name, s in links.items()}}
    keeper = subprocess.Popen([sys.executable, "-m", "wirelab.link.keeper", json.dumps(config)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, start_new_session=True)
    ready, _, _ = select.select([keeper.stdout], [], [], UP_TIMEOUT_S)
    line = keeper.stdout.readline() if ready else ""
    info = json.loads(line) if line.startswith("{") else {"error": "the keeper process gave no answer"}
    if "error" in info:
        stop_process(keeper.pid)
        if info.get("usage"):                    # a wrong option: the keeper said which, and the fix
            raise UsageError(info["error"], info.get("fix"))
        why = info["error"] + (f" ({info['fix']})" if info.get("fix") else "")
        raise LinkError(f"testbed {args.name} could not be built: {why}",
                        "see `wirelab testbed caps`; `wirelab testbed down --all` removes leftovers")
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(_render(args.name, info))
    return 0


def _render(name: str, info: dict) -> str:
    if "relays" in info:                       # relays on this machine, no hosts of its own
        lines = [f"testbed {name} ({info['id']}) is up: backend {info['backend']} (no namespaces)",
                 f"  link: {info['link']}"]
        for relay in info.get("relays", []):
            lines.append(f"  {relay['relay']}: send to 127.0.0.1:{relay['listen'][1]} to reach "
                         f"127.0.0.1:{relay['target'][1]} across the link")
            if relay.get("note"):
                lines.append(f"    note: {relay['note']}")
        return "\n".join(lines + [f"  stop: wirelab testbed down {name}"])
    lines = [f"testbed {name} ({info['testbed']}) is up: backend {info['backend']} ({info['emulated_by']})"]
    for host, h in info["hosts"].items():
        lines.append(f"  host {host:<3} namespace {h['namespace']:<24} {', '.join(h['addresses'])}")
    lines.append(f"  link {info['link']}")
    lines.append("  " + info["tc_note"] + ":")
    lines += [f"    {c}" for c in info["tc_commands"]] or ["    (none: an unshaped link)"]
    first = next(iter(info["hosts"]))
    other = [h for h in info["hosts"] if h != first][0]
    lines.append(f"  try:  wirelab testbed exec {name} {other} -- iperf3 -s -1 &")
    lines.append(f"        wirelab testbed exec {name} {first} -- iperf3 -c "
                 f"{info['hosts'][other]['addresses'][0].split('/')[0]}")
    lines.append(f"  stop: wirelab testbed down {name}")
    return "\n".join(lines)


def _exec(args) -> int:
    entry = _find(args.name)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("no command given", f"e.g. wirelab testbed exec {args.name} {args.host} -- ip addr")
    if "relays" in entry:
        argv = command                         # relays: every "host" is this machine
    else:
        hosts = entry.get("hosts", {})
        if args.host not in hosts:
            raise UsageError(f"no host {args.host!r} in testbed {args.name}", f"hosts: {', '.join(hosts)}")
        argv = ["ip", "netns", "exec", hosts[args.host], *command]
    if shutil.which(argv[0]) is None and shutil.which(argv[0], path="/usr/sbin:/sbin") is None:
        raise UsageError(f"{argv[0]} not found", "check the command's spelling or install it")
    sys.stdout.flush()
    os.execvp(argv[0], argv)                   # the command replaces us: its exit status is ours


def _show(args) -> int:
    # start-up: link.inspect only when _show() runs (wirelab --help imports this module)
    from ..link import inspect
    entry = _find(args.name)
    if "relays" in entry:
        raise UsageError(f"testbed {args.name} is relays on this machine: the kernel holds nothing for it",
                         "`wirelab testbed ls --json` shows the relays and their counters")
    hosts = {h: {"interfaces": inspect.interfaces(ns), "qdiscs": inspect.qdiscs(ns)}
             for h, ns in entry.get("hosts", {}).items()}
    if args.json:
        print(json.dumps(hosts, indent=2))
        return 0
    for host, state in hosts.items():
        print(f"host {host} ({entry['hosts'][host]})")
        for i in state["interfaces"]:
            if i["dev"] != "lo":
                print(f"  {i['dev']:<8} mtu {i['mtu']:<6} {i['state']:<5} tx {i['tx_packets']} pkts "
                      f"{i['tx_bytes']} B, rx {i['rx_packets']} pkts {i['rx_bytes']} B, "
                      f"dropped tx {i['tx_dropped']} rx {i['rx_dropped']}")
        for q in state["qdiscs"]:
            if q["dev"] != "lo":
                rate = f" rate {q['rate_bps']:.0f}bit limit {q['limit_bytes']}b" if "rate_bps" in q else ""
                print(f"  qdisc {q['kind']} {q['handle']} on {q['dev']} parent {q['parent']}{rate}: "
                      f"sent {q.get('sent_bytes')} B {q.get('sent_packets')} pkts, dropped {q.get('dropped')}")
    return 0


def _ls(args) -> int:
    entries = sorted(testbeds().values(), key=lambda e: e["id"])
    if args.json:
        print(json.dumps(entries, indent=2, default=str))
        return 0
    if not entries:
        print("no testbeds")
        return 0
    print(f"{'NAME':<12} {'ID':<24} {'BACKEND':<11} {'STATUS':<7} {'AGE':>7}  LINK")
    for e in entries:
        age = f"{time.time() - e['created']:.0f} s" if e.get("created") else "?"
        print(f"{e.get('name', '?'):<12} {e['id']:<24} {e.get('backend') or '?':<11} "
              f"{'up' if e['alive'] else 'stale':<7} {age:>7}  {e.get('link', '')}")
    return 0


def _down(args) -> int:
    if args.all:
        removed = remove_all()
        print(f"removed {len(removed)} testbed(s)" + (f": {', '.join(removed)}" if removed else ""))
        return 0
    if not args.name:
        raise UsageError("which testbed?", "give a NAME or --all")
    matches = [e for e in testbeds().values() if e.get("name", name_of(e["id"])) == args.name]
    if not matches:
        raise UsageError(f"no testbed called {args.name!r}", "see `wirelab testbed ls`")
    for entry in matches:
        if entry.get("keeper_pid") and entry["alive"]:
            stop_process(entry["keeper_pid"], grace_s=10)
        problems = remove(entry)
        if problems:
            raise LinkError(f"could not remove all of {entry['id']}: {'; '.join(problems)}",
                            "try `wirelab testbed down --all`")
        print(f"removed {entry['id']}")
    return 0


def _caps(args) -> int:
    caps = capabilities()
    print(json.dumps(caps.to_dict(), indent=2) if args.json else caps.describe())
    return 0
