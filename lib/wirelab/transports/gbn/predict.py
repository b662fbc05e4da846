"""Go-Back-N's model as the registry calls it (``Transport.model``): ``wirelab.model.predict``'s
parameters by name, the window among them; the formulas and their sources are in ``model.py``."""
from __future__ import annotations

from ...errors import ModelError
from ...model.prediction import Prediction, finish
from ...model.tcp import binding_limit
from ...model.transfer_time import TransferTime
from .model import SOURCES, GbnTransfer, gbn_transfer, go_back_n

__all__ = ["gbn_model", "as_transfer_time", "SOURCES"]


def gbn_model(stack, packets, rate_bps, *, notes, rtt_s, loss, loss_reverse, size, loss_unit, max_wait_s,
              max_retransmits, meter_bytes=None, window_packets=8, window_bytes=None, **_) -> Prediction:
    """min(η·C, N DATA per cycle, Go-Back-N under loss), and with ``size`` the whole file's time."""
    reverse = loss if loss_reverse is None else loss_reverse
    if loss >= 1 or reverse >= 1:
        raise ModelError(f"{stack.proto} cannot deliver anything at 100 % loss", "use a loss below 100 %")
    if rtt_s is None:
        notes.append("no --rtt given: Go-Back-N's cycle assumes zero propagation delay")
    if window_bytes is not None:
        notes.append("a window in bytes (--window) is TCP's socket window: Go-Back-N's is counted in DATA "
                     f"(--window-packets), here {window_packets}")
    if meter_bytes is not None:
        notes.append("the link is a meter (tbf): Go-Back-N is predicted as on a wire (its bucket not modelled)")
    args = dict(window=window_packets, stack=stack, loss_forward=loss, loss_reverse=reverse, timeout_s=max_wait_s,
                max_retransmits=max_retransmits, loss_unit=loss_unit)
    steady = go_back_n(packets.payload_bytes, rate_bps, rtt_s or 0.0, **args)
    link = packets.efficiency * rate_bps
    limits = {"link": link, "window": 8.0 * window_packets * packets.payload_bytes / steady.cycle_s}
    if loss or reverse:
        limits["go_back_n"] = steady.goodput_bps
    binding, goodput = binding_limit(limits)
    notes.append(f"Go-Back-N, window {window_packets}: {SOURCES['window']}"
                 + (f"; under loss {SOURCES['go_back_n']}" if loss or reverse else ""))
    transfer = None
    if size is not None:
        transfer = as_transfer_time(gbn_transfer(size, rate_bps, rtt_s or 0.0, chunk_bytes=packets.payload_bytes,
                                                 **args))
    return finish(stack.proto, rate_bps, stack, packets, limits, binding, goodput, notes, rtt_s=rtt_s, loss=loss,
                  transfer=transfer)


def as_transfer_time(t: GbnTransfer) -> TransferTime:
    """A ``gbn_transfer`` by phase and cause, as every transport's transfer time is shown."""
    data = {name: seconds for name, seconds in (("link", t.link_s), ("window", t.window_s),
                                                ("propagation", t.propagation_s), ("timeouts", t.timeouts_s))
            if seconds > 0}
    return TransferTime("gbn", t.size_bytes, {"conn": t.handshake_s}, data, {"rcvd": t.rcvd_s},
                        std_s=t.std_s, extras={"datagrams": t.packets, "window_packets": t.window,
                                               "give_up_probability": t.give_up_probability})
