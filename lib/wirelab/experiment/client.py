"""Run one wirelab client in its own process and print its Result as JSON.

    python -m wirelab.experiment.client '{"call": "send_tcp", "host": "10.77.0.2", "port": 5000, ...}'

Why a process: the receiver runs as a thread of the experiment; a sender in
another thread of the same process would share its interpreter lock, and a
paced sender that spins for sub-millisecond gaps starves the receiver, which
then loses datagrams no link dropped. In its own process (inside host ``a``
via ``ip netns exec``) the sender cannot disturb the receiver. Both processes
read the same system clock, so one-way delays stay exact.

``call`` is ``send_tcp``, ``send_udp`` or ``measure``; the other keys are that
function's arguments; file data is ``size`` reproducible random bytes from ``seed``.
"""
from __future__ import annotations

import json
import sys

__all__ = ["main", "client_argv"]


def client_argv(config: dict) -> list[str]:
    """The argv that runs ``config`` in a new Python process."""
    return [sys.executable, "-m", "wirelab.experiment.client", json.dumps(config)]


def main(argv: list[str] | None = None) -> int:
    from ..transfer import Result
    from ..transfer.measure_client import measure
    from ..transfer.run import make_data
    from ..transfer.tcp import send_tcp
    from ..transfer.udp_client import send_udp

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    config = json.loads(argv[0])
    call = config.pop("call")
    try:
        if call == "measure":
            result = measure(config.pop("proto"), config.pop("host"), config.pop("port"), **config)
        else:
            data = make_data(config.pop("size"), config.pop("seed", 0))
            send = {"send_tcp": send_tcp, "send_udp": send_udp}[call]
            result = send(config.pop("host"), config.pop("port"), data, **config)
    except Exception as err:     # noqa: BLE001 - reported as a failed Result
        result = Result(config.get("proto", "tcp"), error=f"{type(err).__name__}: {err}")
    print(result.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
