"""One link for consecutive runs of a sweep: it does not build and remove a link for each run.

Building a namespaces testbed and removing it costs about 0.1 s, a userspace
link 0.3-0.5 s (and its warm client another 0.1 s), more than many short
transfers take. The runner keeps the link it has for the next run, after the
link made itself ready as a freshly opened one would be and read that back
(links with ``renewable`` true, ``link.renew(seed)``: no process left from the
run, TCP's metrics cache empty, every qdisc replayed with an empty queue, the
userspace link's shapers new and drawing from the run's seed). When the next
run asks for another spec that the link can take in place (``can_reshape``:
same hosts and MTU, the backend carries it; a sweep over rate, delay or loss),
``link.renew(seed, spec)`` shapes it anew and reads that back too (the tbf at
the new rate, the loss rules, the userspace link's new shapers). A link that
cannot (the loopback relays, a test's fake link, another MTU), a run that
ended in an exception, or a renewal that fails: the link is removed and a new
one opened, as before. Whatever happens, ``close()`` removes the link kept
(the runner calls it in a ``finally``, Ctrl-C included).

Each run's row says how it was carried: ``link_runs_before`` is 0 on a
freshly opened link and n for the (n+1)-th run on a kept one (of any spec).

    with KeptLinks(wirelab.link, backend) as links:      # removes the link kept on leaving
        for setting, seed in runs:
            with links.lease(setting.link, seed=seed) as link:
                engine.run(setting, link, ...)
"""
from __future__ import annotations

from contextlib import contextmanager

from ..link.contract import link_capabilities

__all__ = ["KeptLinks"]


class KeptLinks:
    """Opens links through ``link_layer`` and keeps the last one for the next run of its spec."""

    def __init__(self, link_layer, backend: str, *, name: str = "exp", keep: bool = True):
        self.link_layer, self.backend, self.name, self.keep = link_layer, backend, name, keep
        self._link = None
        self._spec = None
        self.runs_on_link = 0          # runs the kept link has carried
        self.opened = 0                # links opened (for tests and the bench)
        self.reshaped = 0              # times the kept link was given another spec

    @contextmanager
    def lease(self, spec, *, seed: int | None):
        """The link for one run of ``spec``: the kept one made ready again, or a new one.
        After the block the link is kept for the next run, or removed if it cannot be."""
        link = self._kept_for(spec, seed)
        if link is None:
            link = self.link_layer.open(spec, backend=self.backend, seed=seed, name=self.name).__enter__()
            self._link, self._spec, self.runs_on_link = link, spec, 0
            self.opened += 1
        try:
            yield link
        except BaseException:
            self.close()                # a run that raised may have left anything behind
            raise
        self.runs_on_link += 1
        if not (self.keep and link_capabilities(link).renewable):
            self.close()                # now: its describe() then holds its final counters

    def _kept_for(self, spec, seed):
        if self._link is None:
            return None
        other, can = self._spec != spec, link_capabilities(self._link)
        if other and not can.can_reshape(spec):
            self.close()
            return None
        try:
            ready = can.renew(seed, spec) if other else can.renew(seed)
        except Exception:           # noqa: BLE001 - not in a fresh link's state: build a new one
            ready = None
        if ready is None:
            self.close()
            return None
        self._spec = spec
        self.reshaped += other
        return self._link

    def __enter__(self) -> "KeptLinks":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove the link kept, if any (safe to call twice)."""
        link, self._link, self._spec = self._link, None, None
        if link is not None:
            link.__exit__(None, None, None)
