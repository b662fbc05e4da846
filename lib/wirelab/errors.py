"""The one error tree of wirelab.

Every error says what went wrong *and* what to do about it::

    WirelabError
    ├── UsageError (also ValueError)   bad input: a value, a unit, a combination
    │   ├── UnitError                  "10 parsecs" is not a rate
    │   └── ModelError                 physically impossible: MTU below the headers
    ├── SetupError                     this machine cannot do it (yet)
    │   ├── NeedsRootError             namespaces, qdiscs, raw capture
    │   ├── MissingToolError           tshark, dumpcap, iperf3, ip, tc not installed
    │   └── BackendUnavailableError    the chosen link backend cannot run here
    ├── LinkError                      a link or testbed could not be built or torn down
    ├── TransferError                  a transfer failed (timeout, refused, closed)
    │   └── ProtocolError              the peer broke the PPCB protocol
    ├── CaptureError                   not a capture, or capture failed
    └── ExperimentError                a sweep could not be planned, saved or reloaded
"""
from __future__ import annotations

__all__ = [
    "WirelabError", "UsageError", "UnitError", "ModelError", "SetupError",
    "NeedsRootError", "MissingToolError", "BackendUnavailableError", "LinkError",
    "TransferError", "ProtocolError", "CaptureError", "ExperimentError",
]


class WirelabError(Exception):
    """Base of every wirelab error: ``str(err)`` is "<problem>: <fix>"."""

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(problem if not fix else f"{problem}: {fix}")


class UsageError(WirelabError, ValueError):
    """A value given to wirelab is wrong; the message names it and a right one."""


class UnitError(UsageError):
    """A quantity could not be read (unknown unit, negative, out of range)."""


class ModelError(UsageError):
    """The parameters describe something no network can carry."""


class SetupError(WirelabError):
    """This machine lacks something the request needs."""


class NeedsRootError(SetupError):
    """Root (or CAP_NET_ADMIN) is required."""

    def __init__(self, what: str, fix: str = "run with sudo or use the loopback backend"):
        super().__init__(f"needs root for {what}", fix)


class MissingToolError(SetupError):
    """An external program (tshark, dumpcap, iperf3, tc, ip) is not installed."""

    def __init__(self, tool: str, package: str | None = None):
        package = package or tool
        super().__init__(f"{tool} is not installed",
                         f"run `make setup` or `sudo apt-get install {package}`")


class BackendUnavailableError(SetupError):
    """The requested link backend cannot run on this machine."""


class LinkError(WirelabError):
    """Building, changing or removing a link failed."""


class TransferError(WirelabError):
    """A transfer did not complete."""


class ProtocolError(TransferError):
    """The peer sent something the PPCB protocol does not allow."""


class CaptureError(WirelabError):
    """A capture could not be taken or the file is not a capture."""


class ExperimentError(WirelabError):
    """An experiment could not be planned, run, saved or reloaded."""
