"""``wirelab report``: run a notebook headlessly and write an HTML report."""
from __future__ import annotations


def add_parser(subparsers):
    p = subparsers.add_parser("report", help="execute a notebook and write an HTML report",
                              description="Execute a notebook (quick mode by default) and "
                              "write it, figures included, as HTML.")
    p.add_argument("notebook", help="e.g. notebooks/01-overhead-and-goodput.ipynb")
    p.add_argument("--out", default="reports", help="output folder (default reports/)")
    p.add_argument("--full", action="store_true", help="run the full lab, not the quick mode")
    return p


def run(args) -> int:
    from ..report import write_report

    path = write_report(args.notebook, args.out, quick=not args.full)
    print(f"report written to {path}")
    return 0
