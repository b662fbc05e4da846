"""A kept testbed made ready for the next run, as a freshly built one would be, and checked.

A sweep keeps its link across its runs (``wirelab.experiment.reuse``): building
a testbed and removing it costs 0.1-0.5 s, more than many short transfers take.
Between two runs ``renew(testbed, seed, topology)`` (``Testbed.renew``) undoes
what a run leaves behind, gives the link another shape when the next run asks
for one (``reshape`` says which changes can be made in place and how to undo
the old shaping), then reads the testbed back and raises ``LinkError`` when it
is not in a fresh testbed's state.

What a run leaves and what is done about it:

* processes it started on the hosts are stopped (not ``lasting`` ones);
* its TCP connections must have ended (only TIME-WAIT left, which sends
  nothing: polled up to ``SETTLE_S``);
* TCP's per-destination metrics cache is emptied on every host (a fresh
  namespace has none, and a cached ssthresh or RTT would change the next
  connection's slow start);
* the link, kernel backend: every qdisc command is replayed (``tc qdisc
  replace`` with the same parameters: tbf starts again with a full bucket and
  an empty queue, as just built); iptables ``statistic`` loss draws from the
  kernel's random numbers, never seeded, so there is nothing to re-seed. A new
  shape there: the old qdiscs and loss rules are removed, the new ones installed;
* the link, userspace backend: once no frame is in flight, it starts afresh with
  new shapers (of the new specs, if any) drawing from ``seed`` (the loss,
  jitter and reordering a new link with that seed would draw) and new counters.

Then read back: no process on any host but the lasting ones, no byte or packet
queued in any qdisc, and the link shaped as its specs say (the userspace
link's shapers; the kernel's qdiscs, tbf rates and loss rules).
"""
from __future__ import annotations

import json
import select
import subprocess
import time
from typing import TYPE_CHECKING

from ..errors import LinkError
from . import commands, reshape
from .netns import inside, namespace_pids
from .topology import Topology

if TYPE_CHECKING:
    from .testbed import Testbed

__all__ = ["renew", "SETTLE_S"]

#: How long ``renew`` waits for a run's TCP connections to finish closing.
SETTLE_S = 3.0
#: TCP's TIME-WAIT state in /proc/net/tcp (include/net/tcp_states.h): it sends nothing.
_TCP_TIME_WAIT = "06"


def renew(tb: Testbed, seed: int | None = None, topology: Topology | None = None) -> dict:
    """Make ``tb``, which carried a run, ready for the next (with ``seed``) as a freshly built
    one, and check it (see the module's docstring for what is done). With ``topology`` (same
    hosts and cables, other specs: ``reshape.refusal`` says which may differ) the link is
    shaped anew for it, as a testbed built for that topology would be. Returns what was read
    back (per host, its qdiscs); raises ``LinkError`` when the testbed is not in that state."""
    if not tb._up or tb.backend not in ("namespaces", "userspace"):
        raise LinkError(f"cannot renew a {tb.backend or 'removed'} testbed for another run",
                        "open a new link for each run")
    reshaping = topology is not None and topology != tb.topology
    if reshaping:
        why = reshape.refusal(tb.topology, topology, backend=tb.backend, netem=tb.netem)
        if why:
            raise LinkError(f"cannot reshape testbed {tb.id} in place: {why}", "open a new link")
    _stop_run_processes(tb)
    for host, ns in tb.namespaces.items():
        _settle(host, ns)
    wanted = topology if reshaping else tb.topology
    if tb.backend == "userspace":
        specs = [link.spec.to_dict() for link in wanted.links]
        answer = tb._ask_link(f"renew {json.dumps({'seed': seed, 'specs': specs})}")
        if answer.get("specs") != specs:
            raise LinkError("the userspace link did not take the new specs", "open a new link")
        tb.seed = seed
    for ns in tb.namespaces.values():
        tb._run(["ip", "-n", ns, "tcp_metrics", "flush", "all"])
    if reshaping:
        tb._shaping_argvs = _reshape(tb, topology)
    else:
        for argv in tb._shaping_argvs:
            if argv[0] == "tc":           # iptables rules: added once, nothing to start again
                tb._run(argv)
    lasting = {p.pid for p in tb._lasting if p.poll() is None}
    found = {}
    for host, ns in tb.namespaces.items():
        strays = [pid for pid in namespace_pids(ns) if pid not in lasting]
        if strays:
            raise LinkError(f"host {host} still runs process(es) {strays} after the run",
                            "open a new link for the next run")
        qdiscs = json.loads(tb._run(commands.qdisc_show_json(ns, stats=True, details=True)).stdout or "[]")
        queued = [q for q in qdiscs if q.get("backlog") or q.get("qlen")]
        if queued:
            raise LinkError(f"host {host}'s {queued[0]['kind']} qdisc on {queued[0].get('dev')} still "
                            f"holds {queued[0].get('backlog')} B", "open a new link for the next run")
        if reshaping:
            _check_shape(tb, ns, qdiscs)
        found[host] = qdiscs
    return found


def _stop_run_processes(tb: Testbed) -> None:
    """Stop what the run started on the hosts (``Testbed.popen``), all but the lasting helpers."""
    for proc in tb._procs:
        if proc not in tb._lasting and proc.poll() is None:
            proc.terminate()
    for proc in [p for p in tb._procs if p not in tb._lasting]:
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=3)
    tb._procs = [p for p in tb._procs if p in tb._lasting]


def _settle(host: str, ns: str) -> None:
    """Wait until ``host`` has no socket but TCP's TIME-WAIT (which sends nothing)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        busy = _open_sockets(ns)
        if not busy:
            return
        if time.monotonic() > deadline:
            raise LinkError(f"host {host} still has sockets open {SETTLE_S:g} s after the run: "
                            f"{busy[0]}", "open a new link for the next run")
        select.select([], [], [], 0.01)     # poll again in 10 ms


def _open_sockets(ns: str) -> list[str]:
    """``ss -tuan`` in ``ns`` without a process: every UDP socket and every TCP socket not in
    TIME-WAIT, read from /proc/thread-self/net (this thread's namespace, entered for it)."""
    found = []
    with inside(ns):
        for proto in ("tcp", "udp"):
            with open(f"/proc/thread-self/net/{proto}") as table:
                for line in list(table)[1:]:
                    fields = line.split()
                    if proto == "udp" or fields[3] != _TCP_TIME_WAIT:
                        found.append(f"{proto} {fields[1]} → {fields[2]} state {fields[3]}")
    return found


def _reshape(tb: Testbed, topology: Topology) -> list[list[str]]:
    """Shape ``tb``'s links as ``topology`` says (after ``reshape.refusal`` allowed it): the old
    qdiscs and loss rules removed, the new ones installed (kernel backend), what the
    testbed says of itself updated. Returns the kernel's shaping commands."""
    for argv in reshape.undo_shaping(tb._shaping_argvs):
        tb._run(argv)
    tb.topology, tb.tc_commands, installed = topology, [], []
    for link in topology.links:
        argvs = tb._shaping(link)
        tb.tc_commands += [" ".join(a) for a in argvs]
        if tb.backend == "namespaces":
            for argv in argvs:
                tb._run(argv)
            installed += argvs
    tb._save_state()
    return installed


def _check_shape(tb: Testbed, ns: str, qdiscs: list[dict]) -> None:
    """Namespace ``ns`` is shaped by exactly the kernel commands of the new shape: its qdiscs
    of our kinds (tbf at its rate and with its size table's overhead, netem) and its loss
    rules; else ``LinkError``."""
    ours = [a for a in tb._shaping_argvs if a[0] == "tc" and a[2] == ns]
    expected = sorted((a[a.index("dev") + 1], kind, round(float(a[a.index("rate") + 1][:-3])) // 8
                       if kind == "tbf" else None, int(a[a.index("overhead") + 1]) if "stab" in a else 0)
                      for a in ours for kind in ("tbf", "netem") if kind in a)
    shown = sorted((q.get("dev"), q["kind"], (q.get("options") or {}).get("rate") if q["kind"] == "tbf" else None,
                    (q.get("stab") or {}).get("overhead", 0))
                   for q in qdiscs if q["kind"] in ("tbf", "netem"))
    if shown != expected:
        raise LinkError(f"{ns} is shaped by {shown or 'nothing'}, not {expected or 'nothing'}",
                        "open a new link")
    rules = [a for a in tb._shaping_argvs if "iptables" in a and a[3] == ns]
    listed = tb._run(commands.netns_exec(ns, ["iptables", "-t", "raw", "-S", "PREROUTING"])).stdout
    if listed.count("statistic") != len(rules):
        raise LinkError(f"{ns} has {listed.count('statistic')} loss rule(s), not {len(rules)}",
                        "open a new link")
