"""wirelab: predict, run, capture and explain TCP, UDP and UDPR transfers.

Layers (an import points only to an earlier layer)::

    wire                       the wire's facts, once: PPCB's packet table, header sizes
    transports                 one module per transport (tcp, udp, udpr): its facts, its options,
                               its programs and model by name; everyone asks it, nobody compares names
    model                      pure functions: headers, efficiency, TCP/UDPR limits, delay
      ├── transfer             the programs: PPCB tcp/udp/udpr, measurement modes, Result
      ├── link                 where bytes travel: link.open(spec) → namespaces, userspace link
      │                        or loopback relays
      └── capture              dumpcap, the fast loader, Wireshark's analysis
    (transfer, link and capture sit side by side: none imports another)
    peers                      document 001 §5's misbehaving peers, once
    engines                    the programs a sweep runs (the kit's own, iperf3) → the same columns
    experiment                 sweeps: Setting → engine → link.open → Result rows + pred_* columns
    analysis                   a sweep read back: residuals, goodput over time, latency, datasets
    labs                       one module per source document: its sweeps, tables, figures
    grade                      a course's PPCB submissions against the kit, isolated
    viz                        figures and widget panels
    cli                        the `wirelab` command

Every package front exports its names the same way, imported on first use
(``_exports.lazy``): ``import wirelab`` costs almost nothing.

No import circle between files (tests/test_packaging.py refuses one). Imports sit at
the top of a module; one inside a function counts the same, unless it is there to keep
start-up fast (pandas, scapy, numba only when needed) and a comment beside it says
"start-up": then the test leaves it out.
"""
from ._exports import lazy

__version__ = "0.1.0"

_EXPORTS = {
    "units": "units:__module__", "predict": "model", "Prediction": "model", "HeaderStack": "model",
    "read_capture": "capture", "open_capture": "capture", "explore": "viz",
    "WirelabError": "errors", "UsageError": "errors", "UnitError": "errors", "ModelError": "errors",
    "SetupError": "errors", "NeedsRootError": "errors", "MissingToolError": "errors",
    "BackendUnavailableError": "errors", "LinkError": "errors", "TransferError": "errors",
    "ProtocolError": "errors", "CaptureError": "errors", "ExperimentError": "errors",
}
__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = lazy(__name__, _EXPORTS)
