"""A link between two real hosts: ``b`` is the Dask worker this runs on, ``a`` another worker.

    link = HostsLink(spec, a=Side("pc07", "10.0.0.7", "eth0"), b=Side("pc08", "10.0.0.8", "eth0"),
                     peer=Peer(client, pc07, token), token=token)     # made by a sweep's task on b
    with link:
        with link.inside("b"):                        # here: this process is on b
            server = socket.create_server((link.address("b"), 0))
        link.exec("a", client_argv(...), timeout=30)   # on pc07, through its Dask worker

The same object every backend gives (``opened.OpenLink``), so an engine runs across two PCs
as it runs across two namespaces: its receiver a thread of this process (on b), its sender a
program on a (``Peer.exec``: a task on a's worker; ``sys.executable`` there is that PC's own
Python), sending to b's address. What differs, and is said in ``describe()``:

* **shaping**: the spec's tc (and iptables) on each sender's interface towards the other
  (``hostshaping``), applied as root by a guard on each host (``hostguard``: undone at
  ``close()``, and by the guard itself when its worker dies) — only when both workers are
  root. Otherwise the link goes unshaped and says why (``shaped``, ``unshaped_reason``): a
  run then measures the real path, which the sweep predicts as such. What an interface
  cannot do (delay without netem) makes ``unsupported`` say so: such runs are skipped.
* **two clocks**: a's clock and b's differ. ``clock`` (given by the sweep) is asked before
  the run (``before(link)``: echo rounds on the unshaped path) and after it
  (``after(link)``: rounds again, then the offset and drift fitted through both), and its
  columns go into ``describe()``; ``one_clock`` is False, so the programs correct one-way
  delay with their own echo rounds and goodput stands on the receiver's (b's) clock alone.
* **captures** are taken on b's interface (``capture_point("b")``); host a is reached only
  through programs, never by a socket of this process (``inside("a")`` says so).
"""
from __future__ import annotations

import subprocess
from contextlib import nullcontext

from ..errors import LinkError, UsageError
from .hostshaping import Side, host_commands, refusal
from .opened import OpenLink, wire_of
from .spec import LinkSpec
from .workers import guard_here, popen_here, release_here, run_here

__all__ = ["HostsLink", "Side", "shapes"]


def shapes(spec: LinkSpec) -> bool:
    """Does ``spec`` ask anything of the interfaces (a rate, delay, jitter, loss, ...)?"""
    return wire_of(spec) != "none"


class HostsLink(OpenLink):
    """Two real hosts (see the module docstring)."""

    backend = "hosts"
    one_clock = False

    def __init__(self, spec: LinkSpec, *, a: Side, b: Side, peer, token: str, root: dict | None = None,
                 clock=None):
        super().__init__(spec)
        self.a, self.b, self.peer, self.token, self.clock = a, b, peer, token, clock
        root = root if root is not None else {"a": True, "b": True}
        self.refusal = refusal(spec, a, b) if shapes(spec) else None
        not_root = [side.name for key, side in (("a", a), ("b", b)) if not root.get(key)]
        self.unshaped_reason = None
        if shapes(spec) and not_root:
            self.unshaped_reason = (f"{' and '.join(not_root)} {'is' if len(not_root) == 1 else 'are'} not root: "
                                    "the run goes unshaped and measures the real path (start the worker as root "
                                    "to shape: sudo dask worker ...)")
        self.commands = host_commands(spec, a, b) if shapes(spec) and not (not_root or self.refusal) \
            else {"a": {"apply": [], "undo": []}, "b": {"apply": [], "undo": []}}
        self._clock_columns: dict = {}
        self._final: dict | None = None
        try:
            if clock is not None:
                clock.before(self)
            self._shape()
        except BaseException:
            self.close()
            raise

    def _shape(self) -> None:
        for key in ("b", "a"):
            plan = self.commands[key]
            if not plan["apply"]:
                continue
            error = guard_here(self.token, plan["apply"], plan["undo"]) if key == "b" else \
                self.peer.guard(plan["apply"], plan["undo"])
            if error:
                raise LinkError(f"shaping {self._side(key).name}'s {self._side(key).device} failed: {error}",
                                "is the worker root, and are tc and iptables installed there?")

    def _side(self, host: str) -> Side:
        return {"a": self.a, "b": self.b}[self._host(host)]

    @property
    def shaped(self) -> bool:
        return any(self.commands[k]["apply"] for k in ("a", "b"))

    def close(self) -> None:
        """Undo the shaping on both hosts, end their programs, then the clock's last rounds."""
        if self._final is not None:
            return
        problems = []
        for release in (lambda: self.peer.release(), lambda: release_here(self.token)):
            try:
                release()
            except Exception as err:     # noqa: BLE001 - a lost host: its guard undoes by itself
                problems.append(f"{type(err).__name__}: {err}")
        if self.clock is not None:
            try:
                self._clock_columns = self.clock.after(self)
            except Exception as err:     # noqa: BLE001 - the run stands; its clock fit is missing
                self._clock_columns = {"clock_error": f"{type(err).__name__}: {err}"}
        self._final = self.describe()
        if problems:
            self._final["release_problems"] = "; ".join(problems)

    # -- what every link offers -----------------------------------------------------------
    def address(self, host: str, peer: str | None = None) -> str:
        return self._side(host).ip

    def reach(self, port: int, kind="tcp") -> tuple[str, int]:
        return self.b.ip, int(port)

    def inside(self, host: str):
        if self._host(host) == "a":
            raise UsageError(f"host a ({self.a.name}) is another machine: a socket of this process cannot live there",
                             "run a program there with link.exec('a', argv)")
        return nullcontext()

    def exec(self, host: str, argv: list[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess:
        if self._host(host) == "a":
            return self.peer.exec(argv, timeout=timeout)
        return run_here(self.token, argv, timeout)

    def call(self, host: str, fn, *args, timeout: float = 60.0):
        """``fn(*args)`` run on ``host`` in its worker's own process (here for b), and its result:
        for short exchanges that need no program of their own (the clock's echo rounds)."""
        if self._host(host) == "a":
            return self.peer.call(fn, *args, timeout=timeout)
        return fn(*args)

    def popen(self, host: str, argv: list[str], *, lasting: bool = False, **kwargs) -> subprocess.Popen:
        if self._host(host) == "a":
            raise UsageError(f"a background program on host a ({self.a.name}) cannot be held from here",
                             "run it to its end with link.exec('a', argv)")
        return popen_here(self.token, argv, **kwargs)

    def capture_point(self, host: str = "b") -> tuple[str, list[str]]:
        if self._host(host) == "a":
            raise UsageError(f"capturing on host a ({self.a.name}) across machines is not possible from here",
                             "capture on host b, where the receiver runs")
        return self.b.device, []

    def unsupported(self, proto: str) -> str | None:
        return self.refusal

    def describe(self) -> dict:
        if self._final is not None:
            return dict(self._final)
        lines = [f"{self._side(k).name}# {' '.join(argv)}" for k in ("a", "b") for argv in self.commands[k]["apply"]]
        return {"backend": "hosts", "link": self.spec.describe() if self.shaped else
                ("unshaped: the real path" if shapes(self.spec) else self.spec.describe()),
                "host_a": self.a.name, "host_b": self.b.name, "address_a": self.a.ip, "address_b": self.b.ip,
                "device_a": self.a.device, "device_b": self.b.device, "shaped": self.shaped,
                "unshaped_reason": self.unshaped_reason or self.refusal,
                "tc_commands": lines,
                "tc_note": "run as root on each sender's interface, for packets to the other host only; "
                           "removed after the run (by a guard process on each host, a lost worker included)",
                "emulated_by": (f"tc on {self.a.name}'s {self.a.device} (a → b) and {self.b.name}'s {self.b.device} "
                                "(b → a)" if self.shaped else "nothing: the real path"),
                "clocks": "two: goodput on b's clock (the receiver's own start and end); one-way delay corrected by "
                          "an offset and drift fitted to echo rounds",
                **self._clock_columns}
