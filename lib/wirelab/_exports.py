"""Package fronts: every subpackage exports its public names the same way, imported on first use.

    _EXPORTS = {"LinkSpec": "spec", "open": "opened:open_link"}   # name → "module" or "module:attribute"
    __all__ = list(_EXPORTS)
    __getattr__, __dir__ = lazy(__name__, _EXPORTS)

Why lazy: ``wirelab send`` must start fast and ``python -m wirelab.transfer.tcp``
must not pull in pandas; a name costs its import only when someone uses it.

A front never exports a name that is also one of its modules (``predict`` the
function lives in ``model/prediction.py``): importing a module sets the package's
attribute of that name, which would then shadow the exported one.
tests/test_packaging.py checks it.
"""
from __future__ import annotations

import importlib

__all__ = ["lazy", "MODULE"]

#: ``"units": "units:" + MODULE`` exports the module itself rather than an attribute of it.
MODULE = "__module__"


def lazy(package: str, exports: dict[str, str]):
    """Module ``__getattr__`` and ``__dir__`` for ``package`` resolving ``exports`` on first use."""
    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = exports[name].partition(":")
        found = importlib.import_module(f".{module}", package)
        value = found if attribute == MODULE else getattr(found, attribute or name)
        setattr(importlib.import_module(package), name, value)     # next time: no lookup
        return value

    def __dir__():
        return sorted(set(importlib.import_module(package).__dict__) | set(exports))

    return __getattr__, __dir__
