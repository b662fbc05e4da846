"""The process that holds a testbed made by ``wirelab testbed up``.

A testbed belongs to a live process (its pid is in every name). For the
command line that process is this keeper: it builds the testbed, prints one
JSON line describing it, then waits. ``wirelab testbed down NAME`` sends it
SIGTERM and it tears everything down; if it is killed outright, the reaper
removes what it left. With ``backend == "loopback"`` it runs relays instead.

    python -m wirelab.link.keeper '{"name": "demo", "backend": "auto", "topology": "two_hosts",
                                    "spec": {...}, "forward": ["udp:5201"]}'
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

from .capabilities import choose_backend
from .cleanup import process_start, state_dir, testbed_id, write_state
from .relay import TcpRelay, UdpRelay
from .spec import LinkSpec
from .testbed import Testbed
from .topology import broker_network, two_hosts

__all__ = ["main", "TOPOLOGIES"]

TOPOLOGIES = {"two_hosts": lambda spec: two_hosts(spec),
              "broker": lambda spec: broker_network(spec, spec, spec)}


def _quiet_stdout() -> None:
    """After the ready line nobody reads our stdout: point it at /dev/null."""
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _interrupt(*_):
    raise KeyboardInterrupt


def _wait_for_signal() -> None:
    while True:
        signal.pause()


def hold_loopback(config: dict, spec: LinkSpec) -> int:
    tid = testbed_id(config["name"], os.getpid())
    relays = []
    try:
        for item in config.get("forward") or []:
            proto, port = item.split(":")
            cls = UdpRelay if proto == "udp" else TcpRelay
            relays.append(cls(spec, ("127.0.0.1", int(port)), seed=config.get("seed")).start())
        state = {"id": tid, "name": config["name"], "owner": os.getpid(), "keeper_pid": os.getpid(),
                 "owner_start": process_start(os.getpid()), "backend": "loopback", "namespaces": [],
                 "hosts": {}, "spec": spec.to_dict(), "link": spec.describe(),
                 "relays": [r.describe() for r in relays], "created": time.time()}
        write_state(state)
        print(json.dumps(state), flush=True)
        _quiet_stdout()
        signal.signal(signal.SIGTERM, _interrupt)
        _wait_for_signal()
    except KeyboardInterrupt:
        pass
    finally:
        for relay in relays:
            relay.close()
        (state_dir() / f"{tid}.json").unlink(missing_ok=True)
    return 0


def hold_testbed(config: dict, spec: LinkSpec) -> int:
    topology = TOPOLOGIES[config.get("topology", "two_hosts")](spec)
    extra = {"keeper_pid": os.getpid(), "spec": spec.to_dict(), "cli": True}
    try:
        with Testbed(topology, name=config["name"], backend=config.get("backend", "auto"),
                     seed=config.get("seed"), extra_state=extra) as tb:
            print(json.dumps({**tb.describe(), "name": config["name"], "keeper_pid": os.getpid()}), flush=True)
            _quiet_stdout()
            _wait_for_signal()
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        config = json.loads(argv[0])
        spec = LinkSpec.from_dict(config["spec"])
        if choose_backend(spec, config.get("backend", "auto")) == "loopback":
            return hold_loopback(config, spec)
        return hold_testbed(config, spec)
    except Exception as err:                            # `wirelab testbed up` shows this line
        print(json.dumps({"error": str(err)}), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
