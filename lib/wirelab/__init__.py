"""wirelab: predict, run, capture and explain TCP, UDP and UDPR transfers.

Layers (imports point only to earlier ones): model → transfer → link →
capture → experiment → grade → viz → cli. The public API is re-exported here.
"""
from . import units
from .errors import (BackendUnavailableError, CaptureError, ExperimentError, LinkError,
                     MissingToolError, ModelError, NeedsRootError, ProtocolError, SetupError,
                     TransferError, UnitError, UsageError, WirelabError)
from .model import HeaderStack, Prediction, predict

__version__ = "0.1.0"


def __getattr__(name: str):
    # read_capture pulls in numpy and pandas: import it on first use only.
    if name == "read_capture":
        from .capture import read_capture
        return read_capture
    raise AttributeError(f"module 'wirelab' has no attribute {name!r}")

__all__ = [
    "__version__", "units", "predict", "read_capture", "Prediction", "HeaderStack",
    "WirelabError", "UsageError", "UnitError", "ModelError", "SetupError", "NeedsRootError",
    "MissingToolError", "BackendUnavailableError", "LinkError", "TransferError",
    "ProtocolError", "CaptureError", "ExperimentError",
]
