"""The process that holds a link made by ``wirelab testbed up``.

A testbed belongs to a live process (its pid is in every name). For the
command line that process is this keeper: it opens the link (``link.open``:
the backend is chosen there, nowhere else), prints one JSON line describing
it, then waits. ``wirelab testbed down NAME`` sends it SIGTERM and it tears
everything down; if it is killed outright, the reaper removes what it left.
On the loopback backend it holds relays in front of the ``forward`` ports.

    python -m wirelab.link.keeper '{"name": "demo", "backend": "auto", "topology": "two_hosts",
                                    "spec": {...}, "forward": ["udp:5201"],
                                    "links": {"b-r*": {...}}}'

``spec`` is every link's; ``links`` (optional) gives single links their own (``with_links``).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

from ..errors import UsageError
from .cleanup import interrupt_in, process_start, state_dir, testbed_id, write_state
from .opened import open_link
from .spec import LinkSpec
from .topology import broker_network, two_hosts, with_links

__all__ = ["main", "TOPOLOGIES", "topology_for"]

TOPOLOGIES = {"two_hosts": lambda spec: two_hosts(spec),
              "broker": lambda spec: broker_network(spec, spec, spec)}


def topology_for(name: str, spec: LinkSpec, links: dict | None = None):
    """The topology ``name`` with ``spec`` on every link, then ``links`` ({name or pattern: LinkSpec})."""
    if name not in TOPOLOGIES:
        raise UsageError(f"unknown topology {name!r}", f"use one of {', '.join(TOPOLOGIES)}")
    topology = TOPOLOGIES[name](spec)
    return with_links(topology, links) if links else topology


def _quiet_stdout() -> None:
    """After the ready line nobody reads our stdout: point it at /dev/null."""
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _forward(link, items: list[str]) -> None:
    """Relays in front of each ``proto:port`` (loopback only: namespaces have hosts to reach)."""
    if link.backend != "loopback":
        if items:
            raise UsageError("--forward is for the loopback backend", "add --backend loopback")
        return
    if not items:
        raise UsageError("the loopback backend relays ports on 127.0.0.1, it has no hosts",
                         "add --forward udp:PORT or --forward tcp:PORT (or run as root for namespaces)")
    for item in items:
        proto, _, port = item.partition(":")
        if proto not in ("tcp", "udp") or not port.isdigit():
            raise UsageError(f"--forward {item!r} is not PROTO:PORT", "e.g. --forward udp:5000")
        link.reach(int(port), proto)


def hold(config: dict) -> int:
    spec = LinkSpec.from_dict(config["spec"])
    links = {name: LinkSpec.from_dict(d) for name, d in (config.get("links") or {}).items()}
    topology = topology_for(config.get("topology", "two_hosts"), spec, links)
    signal.signal(signal.SIGTERM, interrupt_in(os.getpid()))
    extra = {"keeper_pid": os.getpid(), "spec": spec.to_dict(), "cli": True}
    state = None
    try:
        with open_link(topology, backend=config.get("backend", "auto"), seed=config.get("seed"),
                       name=config["name"], extra_state=extra) as link:
            _forward(link, config.get("forward") or [])
            info = {**link.describe(), "name": config["name"], "keeper_pid": os.getpid()}
            if link.backend == "loopback":        # no testbed state of its own: write one for `ls`/`down`
                state = {"id": testbed_id(config["name"], os.getpid()), "name": config["name"],
                         "owner": os.getpid(), "keeper_pid": os.getpid(),
                         "owner_start": process_start(os.getpid()), "backend": "loopback",
                         "namespaces": [], "hosts": {}, "spec": spec.to_dict(), "link": spec.describe(),
                         "relays": [r.describe() for r in link.relays.values()], "created": time.time()}
                write_state(state)
                info.update(id=state["id"], relays=state["relays"])
            print(json.dumps(info), flush=True)
            _quiet_stdout()
            while True:
                signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        if state is not None:
            (state_dir() / f"{state['id']}.json").unlink(missing_ok=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return hold(json.loads(argv[0]))
    except Exception as err:                            # `wirelab testbed up` shows this line
        print(json.dumps({"error": getattr(err, "problem", str(err)), "fix": getattr(err, "fix", None),
                          "usage": isinstance(err, UsageError)}), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
