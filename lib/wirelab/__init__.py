"""wirelab: predict, run, capture and explain TCP, UDP and UDPR transfers.

Layers (an import points only to an earlier layer)::

    model                      pure functions: headers, efficiency, TCP/UDPR limits, delay
      ├── transfer             the programs: PPCB tcp/udp/udpr, measurement modes, Result
      ├── link                 where bytes travel: link.open(spec) → namespaces, userspace link
      │                        or loopback relays
      └── capture              dumpcap, the fast loader, Wireshark's analysis
    (transfer, link and capture sit side by side: none imports another)
    experiment                 sweeps: Setting → engine → link.open → Result rows + pred_* columns
    grade                      a course's PPCB submissions against the kit, isolated
    viz                        figures and widget panels
    cli                        the `wirelab` command

Every package front exports its names the same way, imported on first use
(``_exports.lazy``): ``import wirelab`` costs almost nothing.
"""
from ._exports import lazy

__version__ = "0.1.0"

_EXPORTS = {
    "units": "units:__module__", "predict": "model", "Prediction": "model", "HeaderStack": "model",
    "read_capture": "capture",
    "WirelabError": "errors", "UsageError": "errors", "UnitError": "errors", "ModelError": "errors",
    "SetupError": "errors", "NeedsRootError": "errors", "MissingToolError": "errors",
    "BackendUnavailableError": "errors", "LinkError": "errors", "TransferError": "errors",
    "ProtocolError": "errors", "CaptureError": "errors", "ExperimentError": "errors",
}
__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
