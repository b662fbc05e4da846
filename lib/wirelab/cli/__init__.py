"""The ``wirelab`` command. Each subcommand is one module in this package with
``add_parser(subparsers)`` and ``run(args) -> int``; it is found by itself
(COMMANDS only fixes the order ``wirelab --help`` lists them in).

Errors from wirelab become one line on stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from ..errors import WirelabError

__all__ = ["main", "build_parser"]

#: The order of subcommands in ``wirelab --help``; others follow alphabetically.
COMMANDS = ["predict", "serve", "send", "testbed", "capture", "analyze", "wireshark", "run", "report",
            "grade"]
#: Modules of this package that are helpers, not subcommands.
HELPERS = {"args"}


def command_modules() -> list[str]:
    found = {m.name for m in pkgutil.iter_modules(__path__)} - HELPERS
    return [c for c in COMMANDS if c in found] + sorted(found - set(COMMANDS))


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line and exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only the subcommand ``only`` (what ``main`` needs when the
    command is named: importing every command's module is most of a short command's start-up)."""
    parser = OneLineParser(prog="wirelab", description="Predict, run, capture and explain "
                           "TCP, UDP and UDPR transfers.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name in command_modules():
        if only is None or name == only:
            module = importlib.import_module(f".{name}", __name__)
            sub = module.add_parser(subparsers)
            sub.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    named = argv[0] if argv and argv[0] in command_modules() else None
    parser = build_parser(named)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except WirelabError as err:
        print(f"wirelab {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"wirelab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
