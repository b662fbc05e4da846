"""The hosts of a sweep across machines: its pairs, what each side is, and the link layer they make.

    pairs = find_pairs(client, experiment)      # by worker name, address or IP; facts; a probe each
    layer = HostsLayer(pairs)                   # the plan's link layer (backend "hosts")
    hosts_table(load_meta(folder))              # each side's facts, one row a host (for a notebook)

``find_pairs`` is the set-up of ``cluster.Cluster``: the workers of each pair (a PC that is
missing is an error that names it and the command that starts it), each side's facts
collected on its own worker (``meta.host_facts``), each pair probed end to end (echo rounds
both ways round: its round trip), and one warning for a pair that cannot be shaped (a worker
not root): its runs go unshaped and are predicted for the real path
(``HostsLayer.path_params``: the NIC's speed, a cable's 38 B a frame, the probed round trip).
``HostsLayer`` answers what the plan asks of a link layer and, bound to one pair for one run
on b's worker, opens its ``link.hosts.HostsLink``.
"""
from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass

import pandas as pd

from .. import link as links
from ..errors import LinkError, UsageError
from ..link import workers
from ..link.commands import GSO_MAX_SEGS
from ..link.hosts import HostsLink
from ..link.hostshaping import ROOT, Side
from ..transfer.clockrounds import ClockRounds
from .meta import host_facts

__all__ = ["Pair", "HostsLayer", "find_pairs", "hosts_table", "SETUP_TIMEOUT_S"]

SETUP_TIMEOUT_S = 120.0


@dataclass
class Pair:
    """Two hosts, a sends to b: their workers, each side's facts, the probed round trip."""
    a: workers.Worker
    b: workers.Worker
    facts: dict
    rtt_s: float | None = None
    scheduler: str | None = None          # its address: its port stays unshaped where it lives on a or b

    def side(self, key: str) -> Side:
        worker, facts = (self.a, self.facts["a"]) if key == "a" else (self.b, self.facts["b"])
        ours = facts.get("root_handle") == ROOT          # another sweep's run on this host, in flight
        segments = facts.get("gso_max_segs")
        ip = facts.get("address") or worker.ip
        keep = [_port(worker.address)]               # Dask's own packets between the two stay unshaped
        if self.scheduler and _host(self.scheduler) in (ip, worker.ip):
            keep.append(_port(self.scheduler))
        return Side(worker.name, ip, facts.get("interface") or "eth0",
                    netem=bool(facts.get("netem")), root_qdisc=None if ours else facts.get("root_qdisc"),
                    gso_max_segs=GSO_MAX_SEGS if ours or segments in (None, 1) else int(segments),
                    keep=tuple(p for p in keep if p))

    @property
    def root(self) -> dict:
        return {"a": bool(self.facts["a"].get("root")), "b": bool(self.facts["b"].get("root"))}

    @property
    def label(self) -> str:
        return f"{self.a.name} → {self.b.name}"

    @property
    def nic_bps(self) -> float | None:
        speeds = [f.get("nic_speed_bps") for f in self.facts.values() if f.get("nic_speed_bps")]
        return min(speeds) if speeds else None

    def summary(self) -> dict:
        return {"a": self.a.name, "b": self.b.name, "root": self.root, "path_rtt_s": self.rtt_s,
                "nic_speed_bps": self.nic_bps, "facts": self.facts}


class HostsLayer:
    """The link layer of a sweep across hosts: what the plan asks (``backend_for``, ``wire_of``,
    ``carriage``, ``facts``, ``sender_sysctls``, ``path_params``) and, bound to a pair for one run
    on b's worker (``bound``), ``open``."""

    backend = "hosts"
    wire_of = staticmethod(links.wire_of)

    def __init__(self, pairs: list[Pair], *, pair: Pair | None = None, token: str | None = None):
        self.pairs, self.pair, self.token = pairs, pair, token

    def bound(self, pair: Pair, token: str) -> "HostsLayer":
        return HostsLayer([pair], pair=pair, token=token)

    def backend_for(self, specs, requested: str = "auto", caps=None) -> str:
        if requested not in ("auto", "hosts"):
            raise UsageError(f"a sweep across hosts runs on the hosts backend, not {requested}",
                             "leave the backend unset")
        return "hosts"

    @staticmethod
    def carriage(backend: str, proto: str) -> str:
        return "packets"          # the programs' own packets cross the path

    def meter_bytes(self, backend: str, spec) -> int | None:
        """tbf's bucket where the pair shapes ``spec`` (root on both hosts: ``hostshaping``),
        None where it runs unshaped on the real path (``path_params``)."""
        if self.pair is not None and not all(self.pair.root.values()):
            return None
        return links.meter_bytes("hosts", spec)

    def facts(self) -> dict:
        return {"pairs": [p.summary() for p in self.pairs]}

    def sender_sysctls(self) -> dict:
        """The sysctls of the (first) sending host: its TCP timestamps and congestion control."""
        return self.pairs[0].facts["a"].get("sysctls") or {}

    def path_params(self, setting) -> tuple[dict, str]:
        """What the model predicts a run of ``setting`` on: its own link, or where the pair cannot
        be shaped (not root) the real path: the NIC's speed, a cable's framing, the probed RTT."""
        pair = self.pair
        if pair is None or all(pair.root.values()) or links.wire_of(setting.link) == "none":
            return setting.params, links.wire_of(setting.link)
        half = (pair.rtt_s or 0.0) / 2
        return ({**setting.params, "rate_bps": pair.nic_bps, "rate_reverse_bps": None, "delay_s": half,
                 "jitter_s": None, "loss": 0.0, "loss_reverse": None, "link_wire": "real"},
                "real" if pair.nic_bps else "none")

    def open(self, spec, *, backend: str = "hosts", seed=None, name: str = "run"):
        if self.pair is None:
            raise UsageError("a link across hosts opens on host b's worker, within a sweep",
                             "run the experiment (wirelab.experiment.run) with hosts and cluster")
        if not isinstance(spec, links.LinkSpec):
            raise UsageError(f"across hosts a run has one link, not a {type(spec).__name__}",
                             "run topologies (the five-node network) in namespaces on one machine")
        # optional: distributed (the [cluster] extra)
        from distributed import get_client
        pair = self.pair
        return HostsLink(spec, a=pair.side("a"), b=pair.side("b"), peer=workers.Peer(get_client(), pair.a, self.token),
                         token=self.token, root=pair.root, clock=ClockRounds())


def _probe_pair(layer: HostsLayer) -> dict:
    """On b's worker: an unshaped link to a and back, for the pair's round trip and clocks."""
    with layer.open(links.LinkSpec()) as link:
        pass
    return link.describe()


def _host(address: str) -> str:
    return address.split("://")[-1].rsplit(":", 1)[0]


def _port(address: str) -> int | None:
    tail = address.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _submit(client, worker, fn, *args):
    return client.submit(fn, *args, workers=[worker.address], allow_other_workers=False, pure=False)


def find_pairs(client, experiment) -> list[Pair]:
    """The pairs of ``experiment.hosts`` on the cluster of ``client`` (see the module docstring)."""
    found = workers.find(client, sorted({h for pair in experiment.hosts for h in pair}))
    ends = [(found[a], found[b]) for a, b in experiment.hosts]
    facts = [{"a": _submit(client, a, host_facts, b.ip), "b": _submit(client, b, host_facts, a.ip)} for a, b in ends]
    pairs = [Pair(a, b, {k: f.result(timeout=SETUP_TIMEOUT_S) for k, f in got.items()},
                  scheduler=client.scheduler.address) for (a, b), got in zip(ends, facts)]
    probes = [_submit(client, p.b, _probe_pair, HostsLayer([p]).bound(p, f"probe-{uuid.uuid4().hex[:8]}"))
              for p in pairs]
    for pair, probe in zip(pairs, probes):
        try:
            described = probe.result(timeout=SETUP_TIMEOUT_S)
        except Exception as err:       # noqa: BLE001 - said with the pair's names
            raise LinkError(f"{pair.a.name} cannot run a program against {pair.b.name} ({err})",
                            "check both workers run wirelab (make setup) and that nothing blocks "
                            "UDP between them") from None
        pair.rtt_s = described.get("path_rtt_s")
    shaping = any(links.wire_of(s.link) != "none" for s in experiment.settings())
    for pair in pairs:
        if shaping and not all(pair.root.values()):
            who = " and ".join(w.name for w, key in ((pair.a, "a"), (pair.b, "b")) if not pair.root[key])
            speed = f"{pair.nic_bps / 1e6:g} Mbit/s" if pair.nic_bps else "an unknown speed"
            print(f"wirelab: {who} is not root: runs {pair.label} go unshaped and are predicted for the real "
                  f"path ({speed} NIC, {1e3 * (pair.rtt_s or 0):.2f} ms round trip); start the worker "
                  "with sudo to shape", file=sys.stderr)
    return pairs


def hosts_table(meta: dict) -> pd.DataFrame:
    """Each host of a sweep's pairs (meta.json's last session, ``store.ResultStore.meta()``), one row a
    side: what it is and what it could do, as ``meta.host_facts`` recorded it on its own worker."""
    session = (meta.get("sessions") or [{}])[-1]
    rows = []
    for pair in (session.get("hosts") or {}).get("pairs", []):
        for side in ("a", "b"):
            f = pair["facts"][side]
            rows.append({"pair": f"{pair['a']} → {pair['b']}", "side": side, "host": pair[side],
                         "hostname": f.get("host"), "kernel": f.get("kernel"),
                         "congestion_control": (f.get("sysctls") or {}).get("net.ipv4.tcp_congestion_control"),
                         "interface": f.get("interface"), "address": f.get("address"),
                         "nic_speed_bps": f.get("nic_speed_bps"), "root_qdisc": f.get("root_qdisc"),
                         "offloads_on": ", ".join(k for k, v in ((f.get("offloads") or {}).get(f.get("interface"))
                                                                 or {}).items() if v),
                         "root": f.get("root"), "netem": f.get("netem"), "wirelab": f.get("wirelab_version"),
                         "path_rtt_s": pair.get("path_rtt_s")})
    return pd.DataFrame(rows)
