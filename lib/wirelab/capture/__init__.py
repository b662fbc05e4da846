"""Capture and analysis: dumpcap in, a fast loader, Wireshark's TCP analysis, overhead from the wire."""
from .loader import read_capture

__all__ = ["read_capture"]
