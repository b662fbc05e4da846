"""Read and write quantities the way network people type them.

Inside wirelab every quantity is an SI float: rates in bit/s, sizes in bytes,
times in seconds, loss as a fraction. This module is the one place that
converts. It follows tc(8)'s spellings (``10mbit``, ``100kbit``, ``64kb``)
with one deliberate refusal: tc reads ``mbps`` as megaBYTES per second, which
almost nobody means, so wirelab asks you to write ``mbit`` or ``MB/s``.

    >>> parse_rate("10mbit"), parse_rate("1.5Gbit/s"), parse_rate("5MB/s")
    (10000000.0, 1500000000.0, 40000000.0)
    >>> parse_time("20ms"), parse_size("64KB"), parse_size("64KiB"), parse_fraction("1%")
    (0.02, 64000.0, 65536.0, 0.01)
"""
from __future__ import annotations

import math
import re

from .errors import UnitError

__all__ = [
    "parse_rate", "parse_size", "parse_time", "parse_fraction",
    "format_rate", "format_size", "format_time", "format_fraction",
]

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")

_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
           "ki": 1024.0, "mi": 1024.0 ** 2, "gi": 1024.0 ** 3, "ti": 1024.0 ** 4}

_TIME = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
         "s": 1.0, "sec": 1.0, "secs": 1.0, "min": 60.0, "h": 3600.0}


def _split(text: object, kind: str, example: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise UnitError(f"{text!r} is not a {kind}", f"write it like {example}")
    if isinstance(text, (int, float)):
        value, unit = float(text), ""
    else:
        match = _NUMBER.match(str(text))
        if not match:
            raise UnitError(f"cannot read {text!r} as a {kind}", f"write it like {example}")
        value, unit = float(match.group(1)), match.group(2)
    if not math.isfinite(value):
        raise UnitError(f"{text!r} is not a finite {kind}", f"write it like {example}")
    if value < 0:
        raise UnitError(f"a {kind} cannot be negative ({text!r})", f"write it like {example}")
    return value, unit


def parse_rate(text: object) -> float:
    """A rate → bit/s. ``10mbit``, ``10Mbit/s``, ``10Mb/s``, ``1.5Gbit/s``,
    ``5MB/s`` (bytes!), ``100kbit``; a bare number is bit/s."""
    value, unit = _split(text, "rate", "10mbit, 1.5Gbit/s or 5MB/s")
    if unit == "":
        return value
    low = unit.lower()
    if low in ("bps", "kbps", "mbps", "gbps", "tbps"):
        raise UnitError(f"{unit!r} is ambiguous (tc reads it as bytes/s, most people as bits/s)",
                        f"write {value:g}{low[0] if low != 'bps' else ''}bit for bits or "
                        f"{value:g}{low[0].upper() if low != 'bps' else ''}B/s for bytes")
    per_second = unit[:-2] if unit.endswith("/s") else unit
    match = re.fullmatch(r"([kKmMgGtT]i?)?(bits?|b|B)", per_second)
    if not match:
        raise UnitError(f"unknown rate unit {unit!r} in {text!r}",
                        "use bit, kbit, mbit, gbit (bits/s) or B/s, KB/s, MB/s (bytes/s)")
    prefix, base = (match.group(1) or "").lower(), match.group(2)
    per_byte = 8.0 if base == "B" else 1.0
    return value * _PREFIX[prefix] * per_byte


def parse_size(text: object) -> float:
    """A size → bytes. ``1500B``, ``1500``, ``64KB`` (64000), ``64KiB`` (65536),
    ``1MB``, ``100kbit`` (12500 bytes, as tbf's burst)."""
    value, unit = _split(text, "size", "1500B, 64KB or 1MiB")
    if unit == "":
        return value
    match = re.fullmatch(r"([kKmMgGtT]i?)?(B|b|bytes?|bit|bits)", unit)
    if not match:
        raise UnitError(f"unknown size unit {unit!r} in {text!r}",
                        "use B, KB, MB, GB (powers of 1000), KiB, MiB (powers of 1024) or kbit")
    prefix, base = (match.group(1) or "").lower(), match.group(2)
    # tc writes "kb" for kilobytes, so a lone lowercase b means bytes here.
    per_byte = 1 / 8 if base in ("bit", "bits") else 1.0
    return value * _PREFIX[prefix] * per_byte


def parse_time(text: object) -> float:
    """A duration → seconds. ``20ms``, ``1.5s``, ``250us``, ``2min``; a bare number is seconds."""
    value, unit = _split(text, "time", "20ms, 1.5s or 250us")
    if unit == "":
        return value
    factor = _TIME.get(unit.lower())
    if factor is None:
        raise UnitError(f"unknown time unit {unit!r} in {text!r}", "use ns, us, ms, s or min")
    return value * factor


def parse_fraction(text: object) -> float:
    """A loss or probability → fraction in [0, 1]. ``1%`` → 0.01; ``0.01`` → 0.01."""
    value, unit = _split(text, "loss or probability", "1% or 0.01")
    if unit == "%":
        value /= 100.0
    elif unit != "":
        raise UnitError(f"unknown unit {unit!r} in {text!r}", "write a percentage like 1% or a fraction like 0.01")
    elif value > 1:
        raise UnitError(f"{text!r} is more than 1 as a fraction",
                        f"write {value:g}% if you meant percent")
    if value > 1:
        raise UnitError(f"{text!r} is more than 100 %", "a loss is between 0% and 100%")
    return value


def _scaled(value: float, units: list[tuple[float, str]], digits: int) -> str:
    for factor, name in units:
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {name}"
    factor, name = units[-1]
    return f"{value / factor:.{digits}g} {name}"


def format_rate(bps: float, digits: int = 4) -> str:
    """bit/s → ``9.41 Mbit/s``."""
    return _scaled(bps, [(1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s")], digits)


def format_size(nbytes: float, digits: int = 4) -> str:
    """bytes → ``64 kB``, ``1500 B``."""
    return _scaled(nbytes, [(1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")], digits)


def format_time(seconds: float, digits: int = 4) -> str:
    """seconds → ``20 ms``."""
    if seconds == 0:
        return "0 s"
    return _scaled(seconds, [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")], digits)


def format_fraction(fraction: float, digits: int = 3) -> str:
    """fraction → ``1 %``."""
    return f"{fraction * 100:.{digits}g} %"
