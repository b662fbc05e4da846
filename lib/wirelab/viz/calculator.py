"""The overhead calculator: widgets in, a table and a stacked bar out (predictions)."""
from __future__ import annotations

import pandas as pd

from .. import transports, units
from ..errors import WirelabError
from ..model import predict
from .offscreen import new_figure, show_figure
from .overhead import plot_header_bytes

__all__ = ["prediction_table", "overhead_calculator"]


def prediction_table(**settings) -> pd.DataFrame:
    """One prediction as a two-column table (quantity, value) for display."""
    p = predict(**settings)
    rows = [("payload per write", f"{p.payload_bytes} B"),
            ("bytes on the wire", f"{p.wire_bytes} B in {p.fragments} packet(s)"),
            ("efficiency η", f"{p.efficiency:.4f}")]
    rows += [(f"limit: {name}" + (" (binds)" if name == p.binding else ""), units.format_rate(v))
             for name, v in p.limits.items()]
    rows.append(("predicted goodput", units.format_rate(p.goodput_bps)))
    return pd.DataFrame(rows, columns=["quantity", "predicted"])


def overhead_calculator(*, proto: str = "tcp", mtu: int = 1500, payload: int = 0,
                        ip_version: int = 4, tcp_options: int = 12, rate: str = "10mbit"):
    """An ipywidgets panel; payload 0 means a full packet. Returns the widget."""
    # start-up: ipywidgets, IPython only when overhead_calculator() runs
    import ipywidgets as w
    from IPython.display import display

    controls = {
        "proto": w.Dropdown(options=list(transports.names()), value=proto, description="protocol"),
        "mtu": w.IntSlider(value=mtu, min=576, max=9000, step=4, description="MTU (B)"),
        "payload": w.IntText(value=payload, description="payload (B)"),
        "ip_version": w.ToggleButtons(options=[4, 6], value=ip_version, description="IP"),
        "tcp_options": w.IntSlider(value=tcp_options, min=0, max=40, step=4, description="TCP opts"),
        "rate": w.Text(value=rate, description="rate"),
    }
    output = w.Output()

    def update(_=None):
        output.clear_output(wait=True)
        with output:
            try:
                is_tcp = transports.get(controls["proto"].value).stream       # TCP options: a stream's
                settings = dict(proto=controls["proto"].value, mtu=controls["mtu"].value,
                                payload=controls["payload"].value or None,
                                ip_version=controls["ip_version"].value,
                                tcp_options=controls["tcp_options"].value if is_tcp else 0,
                                rate_bps=units.parse_rate(controls["rate"].value))
                display(prediction_table(**settings))
                stack = predict(**settings).stack
                figure = new_figure(figsize=(8, 2.2))      # off pyplot: see offscreen
                plot_header_bytes({f"{stack.proto.upper()}/IPv{stack.ip_version}": stack},
                                  ax=figure.subplots())
                show_figure(figure)
            except WirelabError as err:
                print(f"⚠ {err}")

    for control in controls.values():
        control.observe(update, names="value")
    update()
    return w.VBox([w.HBox([controls["proto"], controls["ip_version"]]),
                   w.HBox([controls["mtu"], controls["payload"]]),
                   w.HBox([controls["tcp_options"], controls["rate"]]), output])
