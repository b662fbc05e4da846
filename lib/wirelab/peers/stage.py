"""What a play needs of whoever runs it: a ``Stage``, and the kit's own client on it.

A play is written once and runs on two stages. Host ``a`` is the clients' side,
host ``b`` the servers'; the *program under test* is what the misbehaving peer
plays against:

* the grader's (``grade.context.TestContext``): the student's ``ppcbs``/``ppcbc``,
  sandboxed; its endings are *judged* (exit status, ``ERROR`` on stderr, the bytes on
  stdout; a reading refused where a test is strict);
* the lab's (``labs.peers``): the kit's own server and client (``wirelab.transfer``);
  its endings are *measured* (how long it took to notice, against the protocol's
  bound) and recorded.

Every wait of a play is bounded by ``stage.left()``, the deadline.
"""
from __future__ import annotations

import threading
from typing import Protocol

from .. import transports
from ..transfer import make_data
from .exchange import Failed, TimedOut

__all__ = ["Stage", "Job", "kit_client", "next_client_served", "delivered_after"]


class Stage(Protocol):                                # pragma: no cover - a description
    proto: str                  # tcp, udp or udpr: what the program under test speaks
    seed: int                   # for the bytes a play sends (the same ones every time)
    max_wait: float             # MAX_WAIT and MAX_RETRANSMITS the program under test uses
    retransmits: int
    give_up_s: float            # how long a udpr peer keeps trying: wire.ppcb.give_up_s
    chunk: int                  # DATA size of the kit's own client
    server_address: tuple[str, int]     # where a client on host a sends to reach the server
    measured: dict              # what a play measured on the way (seconds, counts), for the report

    def left(self) -> float: ...                   # seconds to the deadline
    def udp(self, host: str = "a"): ...            # a bound UDP socket on a host
    def tcp(self, host: str = "a"): ...            # a TCP connection from a host to the server
    def listener(self, kind: str): ...             # a socket on host b where the server would listen
    def in_host(self, host: str, fn, *args, **kwargs): ...   # fn in a thread on a host; ``.result()``
    def wait_connections(self, count: int, timeout: float = 2.0) -> None: ...   # TCP connections to the server
    def start_server(self): ...                    # the server under test, listening (``.poll()``)
    def start_client(self, data: bytes): ...       # the client under test, sending ``data`` (``.poll()``, ``.runtime_s``)
    def gives_up(self, client, bound_s: float, why: str) -> None: ...   # it must end with an error by bound_s
    def finishes(self, client) -> None: ...        # it must end well (after RCVD)
    def delivered(self, server, data: bytes, *, offset: int = 0) -> None: ...   # its output, from offset on, is data
    def take(self, point: str, form: str) -> None: ...     # where the assignment leaves a choice: the one taken


class Job:
    """``fn(*args, **kwargs)`` in a thread whose sockets live on a host (``inside``: the link's
    ``inside(host)``); ``.result()`` joins it, never past the stage's deadline. A stage's ``in_host``."""

    def __init__(self, stage: Stage, inside, fn, args=(), kwargs=None):
        self.value, self.error, self._stage = None, None, stage

        def body():
            try:
                with inside:
                    self.value = fn(*args, **(kwargs or {}))
            except BaseException as err:      # noqa: BLE001 - handed to the caller in result()
                self.error = err
        self._thread = threading.Thread(target=body, name="wirelab-peer", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(max(timeout, 0.0))

    def result(self, timeout: float | None = None):
        left = self._stage.left()
        self._thread.join(left if timeout is None else min(timeout, left))
        if self._thread.is_alive():
            raise TimedOut("wirelab's peer was still waiting at the test's deadline")
        if self.error is not None:
            raise self.error
        return self.value


def kit_client(stage: Stage, data: bytes, *, patience: float = 1.0):
    """The kit's own client on host a sending ``data`` to the server (it waits ``patience`` × MAX_WAIT):
    a background job, ``.result()`` its ``Result``."""
    host, port = stage.server_address
    transport = transports.get(stage.proto)
    own = {} if transport.stream else {"max_retransmits": stage.retransmits}   # a datagram sender resends
    return stage.in_host("a", transport.send, host, port, data, max_wait=stage.max_wait * patience,
                         chunk=stage.chunk, **own)


def next_client_served(stage: Stage, server, size: int = 2000, *, earlier: list[bytes] = ()) -> None:
    """The kit's client must complete a transfer, and the server's output end with its bytes (``earlier``:
    what a misbehaving client may have had delivered before them)."""
    data = make_data(size, seed=size)
    result = kit_client(stage, data).result()
    if not result.ok:
        raise Failed(f"the next client was not served: wirelab's client says {result.error}")
    delivered_after(stage, server, data, earlier)


def delivered_after(stage: Stage, server, data: bytes, earlier=()) -> None:
    """The server's output ends with ``data``, after nothing or after one of ``earlier`` (bytes a
    misbehaving client may have had delivered first)."""
    for offset in sorted({len(e) for e in earlier} | {0}):
        try:
            stage.delivered(server, data, offset=offset)
            return
        except Failed as err:
            last = err
    raise Failed(f"after the misbehaving client, {last}")
