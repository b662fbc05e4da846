"""wirelab: predict, run, capture and explain TCP, UDP and UDPR transfers.

Layers (imports point only to earlier ones): model → transfer → link →
capture → experiment → viz → cli. The public API is re-exported here.
"""
from . import units
from .errors import (BackendUnavailableError, CaptureError, ExperimentError, LinkError,
                     MissingToolError, ModelError, NeedsRootError, ProtocolError, SetupError,
                     TransferError, UnitError, UsageError, WirelabError)
from .model import HeaderStack, Prediction, predict

__version__ = "0.1.0"

__all__ = [
    "__version__", "units", "predict", "Prediction", "HeaderStack",
    "WirelabError", "UsageError", "UnitError", "ModelError", "SetupError", "NeedsRootError",
    "MissingToolError", "BackendUnavailableError", "LinkError", "TransferError",
    "ProtocolError", "CaptureError", "ExperimentError",
]
