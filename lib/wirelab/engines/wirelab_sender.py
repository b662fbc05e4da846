"""``WirelabEngine``'s sending end: the client call's arguments (``client.py`` runs it in its
own process on host ``a``), running it, and reading the ``Result`` it prints."""
from __future__ import annotations

import json

from .. import transports
from ..errors import TransferError
from ..transfer import Result
from ..transfer.client import WarmClient, client_argv, run_client

__all__ = ["client_config", "run_client_process", "send"]


def client_config(how: dict, setting, host: str, port: int, *, size: int, seed: int,
                  max_wait: float, retransmits: int, sndbuf, same_clock: bool, **measure) -> dict:
    """The arguments of the client call (``client.py`` runs it in its own process); ``measure``:
    more arguments of a measurement (pacing, end markers)."""
    proto = setting.proto
    transport = transports.get(proto)
    if how["call"] == "measure":
        return {"call": "measure", "proto": transport.socket, "host": host,
                "port": port, "mode": how["mode"], "time_s": how.get("time_s", 1.0),
                "rate_bps": how.get("rate_bps"), "packet": how["packet"],
                "count": how.get("count", 100), "echo_interval_s": how.get("echo_interval_s", 0.0),
                "max_wait": max_wait,
                "max_retransmits": retransmits, "sndbuf": sndbuf, "congestion": setting["cc"],
                "same_clock": same_clock, "size_bytes": how.get("size_bytes"), **measure}
    # the transport's own sender (client.py's "send"): a stream's takes a congestion control, a datagram's
    # resends; its own options come from the setting's columns
    own = {"congestion": setting["cc"]} if transport.stream else {"max_retransmits": retransmits}
    return {"call": "send", "proto": proto, "host": host, "port": port, "size": size, "seed": seed,
            "max_wait": max_wait, "chunk": how["chunk"], "sndbuf": sndbuf, **own,
            **transport.option_values({o.column: setting.get(o.column) for o in transport.options})}


def run_client_process(link, config: dict, deadline: float, warm: WarmClient | None = None) -> dict:
    """Run the client process on host ``a`` (forked by ``warm`` when given and free: flows side by
    side on one link each need a client at once) and read its Result JSON."""
    argv = client_argv(config)
    what, fix = f"the {config.get('proto', 'tcp')} client", "raise the experiment's timeout or lower size / MAX_WAIT"
    if warm is not None and warm.busy.acquire(blocking=False):
        try:
            done = warm.run(config, deadline, what=what, fix=fix)
        finally:
            warm.busy.release()
    else:
        done = run_client(link, argv, deadline, what=what, fix=fix)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr or done.stdout).strip().splitlines()
        raise TransferError(f"the client printed no Result ({tail[-1] if tail else 'no output'})",
                            f"run {' '.join(argv[:3])} '<config>' by hand to see why") from None


def send(link, config: dict, deadline: float, warm: WarmClient | None, events):
    """(sender's Result, the progress it reported): the client run; its reports join ``events``."""
    sender = Result.from_dict(run_client_process(link, config, deadline, warm))
    reported = sender.metadata.pop("progress", None) or []
    if events is not None:     # what the live path missed, from the sender's own list
        events.absorb(reported)
    return sender, reported
