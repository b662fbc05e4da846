"""How a run was made: kernel, sysctls, qdiscs, offloads, tools, versions.

Like flent's ``metadata.py``: every results folder records the machine it was
measured on, so a number can be explained next year. Collection never fails:
what cannot be read is recorded as ``None``. The parsers of ``tc -j`` and
``ethtool -k`` output are plain functions, tested on recorded text.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .. import __version__
from ..link import capabilities

__all__ = ["collect", "host_facts", "read_sysctls", "parse_tc_qdiscs", "parse_ethtool_offloads",
           "parse_ethtool_speed", "git_revision", "SYSCTLS", "tcp_timestamps_enabled"]

#: sysctls that change transport results (read from /proc/sys, no root needed).
SYSCTLS = [
    "net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_sack",
    "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_ecn", "net.ipv4.tcp_no_metrics_save",
    "net.core.default_qdisc",
]
OFFLOADS = ("tcp-segmentation-offload", "generic-segmentation-offload",
            "generic-receive-offload", "large-receive-offload", "rx-checksumming", "tx-checksumming")


def read_sysctls(names=SYSCTLS, root: str | Path = "/proc/sys") -> dict:
    """sysctl name → its value as text (``None`` if this kernel has no such sysctl)."""
    out = {}
    for name in names:
        try:
            out[name] = " ".join((Path(root) / name.replace(".", "/")).read_text().split())
        except OSError:
            out[name] = None
    return out


def tcp_timestamps_enabled(sysctls: dict | None = None) -> bool:
    """True when Linux adds the 12 B timestamp option to every TCP segment (the default)."""
    value = (sysctls or read_sysctls(["net.ipv4.tcp_timestamps"])).get("net.ipv4.tcp_timestamps")
    return value is None or value.strip() not in ("0",)


def parse_tc_qdiscs(text: str) -> list[dict]:
    """``tc -j qdisc show`` → [{dev, kind, handle, parent, options}]."""
    try:
        items = json.loads(text or "[]")
    except json.JSONDecodeError:
        return []
    return [{"dev": q.get("dev"), "kind": q.get("kind"), "handle": q.get("handle"),
             "parent": q.get("parent", "root" if q.get("root") else None),
             "options": q.get("options", {})} for q in items if isinstance(q, dict)]


def parse_ethtool_offloads(text: str) -> dict:
    """``ethtool -k DEV`` → {feature: True/False} for the segmentation/receive offloads."""
    out = {}
    for line in (text or "").splitlines():
        name, _, rest = line.strip().partition(":")
        if name in OFFLOADS and rest.strip():
            out[name] = rest.split()[0] == "on"
    return out


def parse_ethtool_speed(text: str) -> float | None:
    """``ethtool DEV`` → the link speed in bit/s (``Speed: 1000Mb/s``), None when unknown."""
    for line in (text or "").splitlines():
        name, _, rest = line.strip().partition(":")
        if name == "Speed" and rest.strip().lower().endswith("mb/s"):
            try:
                return float(rest.strip()[:-4]) * 1e6
            except ValueError:
                return None
    return None


def _run(argv: list[str], timeout: float = 5.0) -> str | None:
    exe = shutil.which(argv[0]) or shutil.which(argv[0], path="/usr/sbin:/sbin")
    if not exe:
        return None
    try:
        done = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_revision(path: str | Path | None = None) -> str | None:
    """The commit the code ran from (``+dirty`` when changed), or None outside git."""
    where = str(path or Path(__file__).resolve().parent)
    rev = _run(["git", "-C", where, "rev-parse", "--short=12", "HEAD"])
    if not rev:
        return None
    dirty = _run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"])
    return rev.strip() + ("+dirty" if dirty else "")


def tool_version(tool: str) -> str | None:
    text = _run([tool, "-V" if tool == "tc" else "--version"])
    return text.splitlines()[0].strip() if text else None


def collect(devices: tuple[str, ...] = ("lo",), extra: dict | None = None) -> dict:
    """Everything about this machine a result depends on (no root needed)."""

    uname = platform.uname()
    meta = {
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": uname.node,
        "kernel": f"{uname.system} {uname.release}",
        "kernel_build": uname.version,
        "machine": uname.machine,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "wirelab_version": __version__,
        "git_revision": git_revision(),
        "root": hasattr(os, "geteuid") and os.geteuid() == 0,
        "sysctls": read_sysctls(),
        "qdiscs": parse_tc_qdiscs(_run(["tc", "-j", "qdisc", "show"]) or ""),
        "offloads": {dev: parse_ethtool_offloads(_run(["ethtool", "-k", dev]) or "") for dev in devices},
        "tools": {tool: tool_version(tool) for tool in ("iperf3", "tc", "dumpcap")},
    }
    meta.update(extra or {})
    return meta


def host_facts(peer: str) -> dict:
    """This host's facts for runs with ``peer`` (an IP): ``collect`` for the interface that
    reaches it, with that interface's name, address, NIC speed (``ethtool``: what a real path
    is predicted at), MTU, root qdisc and ``gso_max_segs``, whether wirelab may shape it (root)
    and what the kernel can (tbf, netem: ``link.detect``, probed as root). Each side of
    a pair across hosts records its own (run on its Dask worker)."""
    route = json.loads(_run(["ip", "-j", "route", "get", peer]) or "[{}]") or [{}]
    device, address = route[0].get("dev"), route[0].get("prefsrc")
    facts = collect(devices=(device,) if device else ())
    shown = json.loads(_run(["ip", "-j", "-d", "link", "show", "dev", device]) or "[{}]") if device else [{}]
    roots = [q for q in facts["qdiscs"] if q["dev"] == device and q["parent"] in ("root", None)]
    facts.update(interface=device, address=address, peer=peer,
                 nic_speed_bps=parse_ethtool_speed(_run(["ethtool", device]) or "") if device else None,
                 mtu=(shown or [{}])[0].get("mtu"), gso_max_segs=(shown or [{}])[0].get("gso_max_segs"),
                 root_qdisc=roots[0]["kind"] if roots else None, root_handle=roots[0]["handle"] if roots else None)
    if facts["root"]:
        caps = capabilities()
        facts.update(tbf=caps.tbf, netem=caps.netem, iptables_statistic=caps.iptables_statistic)
    else:
        facts.update(tbf=None, netem=None, iptables_statistic=None)
    return facts
