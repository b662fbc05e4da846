"""Figures for header overhead: where each byte of a packet goes, and η
against payload size with the fragmentation steps. Predictions only."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import HeaderStack, packetize, predict
from ..wire.headers import udp_payload

__all__ = ["efficiency_table", "plot_efficiency", "header_table", "plot_header_bytes",
           "plot_delivery"]


def efficiency_table(stacks: dict[str, HeaderStack], payloads) -> pd.DataFrame:
    """One row per (stack label, payload): packets, wire bytes, η (predicted)."""
    rows = []
    for label, stack in stacks.items():
        for payload in payloads:
            pk = packetize(stack, int(payload))
            rows.append({"stack": label, "payload_bytes": int(payload), "packets": pk.packets,
                         "wire_bytes": pk.wire_bytes, "efficiency": pk.efficiency,
                         "fragmented": pk.fragmented})
    return pd.DataFrame(rows)


def plot_efficiency(table: pd.DataFrame, ax=None, *, mark_mtu: int | None = 1500):
    """η against payload, one predicted line per stack; a dotted line at MTU − 28."""
    # start-up: matplotlib, seaborn only when plot_efficiency() runs
    import matplotlib.pyplot as plt
    import seaborn as sns

    ax = ax or plt.subplots(figsize=(8, 4))[1]
    sns.lineplot(data=table, x="payload_bytes", y="efficiency", hue="stack", ax=ax,
                 drawstyle="steps-post", errorbar=None)
    if mark_mtu:
        ax.axvline(udp_payload(mark_mtu), color="grey", linestyle=":", linewidth=1)
        ax.annotate(f"MTU − 28 = {udp_payload(mark_mtu)} B", (udp_payload(mark_mtu), ax.get_ylim()[0]),
                    xytext=(4, 6), textcoords="offset points", color="grey", fontsize=8)
    ax.set(xlabel="application payload per write/datagram (B)", ylabel="efficiency η (predicted)",
           title="Predicted efficiency: each IP fragment or segment pays its own headers")
    ax.legend(title="predicted")
    return ax


def header_table(stacks: dict[str, HeaderStack]) -> pd.DataFrame:
    """Bytes per full packet by layer (tidy: stack, part, bytes), payload included."""
    rows = []
    for label, stack in stacks.items():
        pk = packetize(stack)
        rows.append({"stack": label, "part": "payload", "bytes": pk.payload_bytes})
        rows += [{"stack": label, "part": part, "bytes": n} for part, n in stack.layers().items()]
    return pd.DataFrame(rows)


#: Bottom of the stack first, so every bar reads wire → application.
_LAYER_ORDER = ["preamble+SFD", "ethernet", "FCS", "inter-frame gap", "802.1Q", "PPPoE",
                "IPv4", "IPv6", "TCP", "TCP options", "UDP", "PPCB DATA", "payload"]


def plot_header_bytes(stacks: dict[str, HeaderStack], ax=None, *, include_payload: bool = False):
    """Stacked horizontal bar: the header bytes each full packet carries, by layer."""
    # start-up: matplotlib only when plot_header_bytes() runs
    import matplotlib.pyplot as plt

    table = header_table(stacks)
    if not include_payload:
        table = table[table.part != "payload"]
    wide = table.pivot_table(index="stack", columns="part", values="bytes", aggfunc="sum",
                             sort=False).fillna(0)
    wide = wide.loc[list(stacks), sorted(wide.columns, key=_LAYER_ORDER.index)]
    ax = ax or plt.subplots(figsize=(8, 0.6 * len(stacks) + 1.5))[1]
    left = np.zeros(len(wide))
    colors = plt.get_cmap("tab20").colors
    for i, part in enumerate(wide.columns):
        ax.barh(wide.index, wide[part], left=left, label=part, color=colors[i % len(colors)])
        left += wide[part].to_numpy()
    for y, total in enumerate(left):
        ax.text(total + 0.5, y, f"{int(total)} B", va="center", fontsize=8)
    ax.set(xlabel="bytes per packet" + (" (payload included)" if include_payload else " of headers"),
           title="Where the bytes of one full packet go")
    ax.invert_yaxis()
    ax.legend(ncol=4, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    return ax


def plot_delivery(payloads, loss: float, ax=None, *, mtu: int = 1500):
    """Predicted UDP delivery probability (1 − p)^k against payload (k fragments)."""
    # start-up: matplotlib only when plot_delivery() runs
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(8, 3))[1]
    probability = [predict("udp", 1e9, mtu=mtu, payload=int(n), loss=loss).delivery_probability
                   for n in payloads]
    ax.step(list(payloads), probability, where="post", label=f"predicted, loss {loss:.0%} per packet")
    ax.set(xlabel="UDP payload (B)", ylabel="P(datagram delivered)",
           title="One lost fragment loses the whole datagram")
    ax.legend()
    return ax
