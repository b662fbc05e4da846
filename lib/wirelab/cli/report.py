"""``wirelab report``: run a notebook headlessly and write an HTML report."""
from __future__ import annotations

import ast
import sys


def add_parser(subparsers):
    p = subparsers.add_parser("report", help="execute a notebook and write an HTML report",
                              description="Execute a notebook (quick mode by default) and "
                              "write it, figures included, as HTML.")
    p.add_argument("notebook", help="e.g. notebooks/01-overhead-and-goodput.ipynb")
    p.add_argument("--out", default="reports", help="output folder (default reports/)")
    p.add_argument("--full", action="store_true", help="run the full lab, not the quick mode")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="set a parameter of the notebook (a Python literal, else a string), e.g. "
                   "-p SIZE 100KB -p RATES '[\"10mbit\"]'; it wins over quick mode's value")
    return p


def literal(text: str):
    """``-p`` values: a Python literal (5, 0.5, True, ["a"]) when the text is one, else the text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return text


def without_iri_grammar() -> None:
    """jsonschema (under nbformat and papermill) imports rfc3987_syntax when it is installed, which
    builds a Lark grammar for IRIs as it is imported: 3 s of every report (python-jsonschema/jsonschema
    #1428). Nothing here checks an IRI format (nbformat validates without format checks), so this
    process goes without it: jsonschema skips the two formats it would serve."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)      # None: its import raises ImportError


def run(args) -> int:
    without_iri_grammar()
    # start-up: report only when run() runs (wirelab --help imports this module)
    from ..report import write_report

    parameters = {name: literal(value) for name, value in args.parameter}
    path = write_report(args.notebook, args.out, quick=not args.full, parameters=parameters)
    print(f"report written to {path}")
    return 0
