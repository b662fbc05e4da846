"""What a sweep needs of the layer that opens its links, written as a type.

The runner and the plan reach links through a *link layer*: ``wirelab.link`` itself on
one machine, ``hostpairs.HostsLayer`` across real hosts, a test's stand-in
(``tests/fake_links.py``). :class:`LinkLayer` (a ``typing.Protocol``) has the members
every link layer must have::

    backend_for(specs, requested) -> str      the one backend for every link of a sweep
    open(spec, *, backend, seed, name)        a context manager: the opened link
                                              (``wirelab.link.opened.OpenLink``)
    wire_of(spec) -> str                      how the link charges each frame (the model's ``wire``)

:class:`LayerCapabilities` holds them with the optional ones resolved to what the plan
does when a layer lacks them (``layer_capabilities(layer)``: the one place that looks)::

    carriage(backend, proto) -> str           how the backend carries a protocol, for the
                                              model (absent: ``"packets"``)
    meter_bytes(backend, spec) -> int | None  tbf's bucket where the backend meters the rate
                                              (absent: None, it serializes like a cable)
    facts() -> dict                           each host's own facts, for meta.json (absent:
                                              None: one machine, ``meta.collect``'s)
    sender_sysctls() -> dict                  the sending host's sysctls (absent: this machine's)
    path_params(setting) -> (params, wire)    what the model predicts a run on, where it is not
                                              the setting's own link (absent: the setting's)
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable, Protocol, runtime_checkable

__all__ = ["LinkLayer", "LayerCapabilities", "layer_capabilities"]

_ABSENT = object()


@runtime_checkable
class LinkLayer(Protocol):
    """What every link layer has (the module docstring; the optional members: ``LayerCapabilities``)."""

    def backend_for(self, specs, requested): ...  # pragma: no cover

    def open(self, spec, *, backend, seed, name): ...  # pragma: no cover

    def wire_of(self, spec) -> str: ...  # pragma: no cover


def _member(doc: str, default=None, *, required: bool = False):
    return field(default=default, metadata={"doc": doc, "required": required})


def _packets(backend: str, proto: str) -> str:
    return "packets"


def _no_meter(backend: str, spec) -> None:
    return None


@dataclass(frozen=True)
class LayerCapabilities:
    """Every member of the link layer's contract, resolved for one layer (the module docstring);
    ``facts``, ``sender_sysctls`` and ``path_params`` stay None when absent."""
    backend_for: Callable = _member("backend_for(specs, requested) -> str: one backend for the sweep",
                                    required=True)
    open: Callable = _member("open(spec, *, backend, seed, name): the opened link, a context manager",
                             required=True)
    wire_of: Callable = _member("wire_of(spec) -> str: how the link charges each frame", required=True)
    carriage: Callable = _member("carriage(backend, proto) -> str: how the backend carries a protocol; "
                                 "absent: 'packets'", _packets)
    meter_bytes: Callable = _member("meter_bytes(backend, spec) -> int | None: tbf's bucket; absent: None",
                                    _no_meter)
    facts: Callable | None = _member("facts() -> dict: each host's own facts (across hosts); absent: None")
    sender_sysctls: Callable | None = _member("sender_sysctls() -> dict: the sending host's sysctls; "
                                              "absent: None (this machine's)")
    path_params: Callable | None = _member("path_params(setting) -> (params, wire): what the model predicts "
                                           "on; absent: None (the setting's own link)")

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Member → its documentation, required ones said so."""
        return {f.name: ("required: " if f.metadata["required"] else "optional: ") + f.metadata["doc"]
                for f in fields(cls)}


def layer_capabilities(layer) -> LayerCapabilities:
    """``layer``'s members as a ``LayerCapabilities`` record, missing ones at their defaults."""
    found = {f.name: getattr(layer, f.name, _ABSENT) for f in fields(LayerCapabilities)}
    return LayerCapabilities(**{name: value for name, value in found.items() if value is not _ABSENT})
