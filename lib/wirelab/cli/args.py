"""argparse ``type=`` helpers that read units and fail with one clear line."""
from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import units
from ..errors import UsageError


def _wrap(parse: Callable[[str], float], cast=float) -> Callable[[str], float]:
    def convert(text: str):
        try:
            value = parse(text)
        except UsageError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        if cast is int:
            if value != int(value):
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes")
            return int(value)
        return value
    convert.__name__ = parse.__name__.removeprefix("parse_")
    return convert


rate = _wrap(units.parse_rate)
time = _wrap(units.parse_time)
size = _wrap(units.parse_size, int)
size_float = _wrap(units.parse_size)
fraction = _wrap(units.parse_fraction)
