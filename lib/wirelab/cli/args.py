"""argparse ``type=`` helpers that read units and fail with one clear line."""
from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import transports, units
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
    convert.__name__ = getattr(parse, "__name__", "value").removeprefix("parse_")
    return convert


rate = _wrap(units.parse_rate)
time = _wrap(units.parse_time)
size = _wrap(units.parse_size, int)
size_float = _wrap(units.parse_size)
fraction = _wrap(units.parse_fraction)


def add_transport_options(parser, *, sweep: bool = False) -> None:
    """Each transport's own options (``transports.Option``) as flags: ``--window 8`` (with ``sweep``:
    text kept for the experiment, lists allowed, ``--window 1,4,16``). Unset: None. A flag the command
    has already (``predict --window``: TCP's window in bytes) is shared: ``transport_options`` reads it."""
    shared = {}
    for option in transports.options().values():
        if sweep and not option.sweep:
            continue
        # argparse keeps its flags in this table (no public lookup): a flag taken is shared, not added twice
        taken = parser._option_string_actions.get(option.cli_flag)
        if taken is not None:
            shared[option.name] = taken.dest
            continue
        owners = ", ".join(t.name for t in transports.transports() if option in t.options)
        parser.add_argument(option.cli_flag, dest=option.name, default=None,
                            type=None if sweep else _wrap(option.parse),
                            metavar="V[,V...]" if sweep else None,
                            help=f"{option.help} ({owners}; default {option.default})")
    parser.set_defaults(_shared_transport_flags=shared)


def _given(args, name: str):
    """The value given for the transport option ``name``, under its own flag or a shared one."""
    value = getattr(args, name, None)
    if value is None:
        dest = getattr(args, "_shared_transport_flags", {}).get(name)
        value = getattr(args, dest, None) if dest else None
    return value


def transport_options(args, proto: str) -> dict:
    """The options ``proto``'s transport has, as given (or their defaults)."""
    transport = transports.get(proto)
    return transport.option_values({o.name: _given(args, o.name) for o in transport.options})


def given_transport_options(args) -> dict:
    """Every transport option given on the command line under its own flag (for an experiment: its axes)."""
    return {name: getattr(args, name) for name in transports.options() if getattr(args, name, None) is not None}
