"""``wirelab autograder``: wirelab's grader as a course platform's autograder (Gradescope).

    wirelab autograder bundle gradescope --tests hidden.toml --out autograder.zip
    wirelab autograder run                  # what the bundle's run_autograder calls, in /autograder

``bundle`` needs no root: it checks the catalogue and test files, then writes the zip (setup.sh,
run_autograder, this wirelab, the course's tests); upload it as the assignment's autograder.
``run`` grades /autograder/submission (or --root DIR, or $WIRELAB_AUTOGRADER_ROOT) and writes
/autograder/results/results.json; where the container has no network namespaces the tests on
shaped links are skipped with the reason, and where bubblewrap cannot run the container is the
sandbox (lib/wirelab/grade/autograder/run.py says what still confines each program).
"""
from __future__ import annotations


def add_parser(subparsers):
    p = subparsers.add_parser("autograder", help="build or run a Gradescope autograder made of wirelab's grader",
                              description=__doc__.split("\n\n")[0])
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    b = verbs.add_parser("bundle", help="write the autograder zip for a platform")
    b.add_argument("platform", choices=("gradescope",))
    b.add_argument("--out", default="autograder.zip", help="the zip to write (default ./autograder.zip)")
    b.add_argument("--catalogue", metavar="FILE", help="grade with FILE instead of the bundled catalogue")
    b.add_argument("--tests", action="append", default=[], metavar="FILE", help="hidden tests to add (repeatable)")
    b.add_argument("--only", metavar="ID[,ID...]", help="only tests whose id matches (globs)")
    b.add_argument("--links", choices=("auto", "namespaces", "loopback"), default="auto",
                   help="auto (default): namespaces where the container has them, else loopback")
    b.add_argument("--sandbox", choices=("auto", "always", "never"), default="auto",
                   help="auto (default): bubblewrap where it runs, else the container is the sandbox")
    r = verbs.add_parser("run", help="grade the submission in an /autograder folder (run_autograder calls this)")
    r.add_argument("--root", help="the /autograder folder (default $WIRELAB_AUTOGRADER_ROOT, else /autograder)")
    return p


def run(args) -> int:
    if args.verb == "bundle":
        # start-up: grade.autograder only when run() runs (wirelab --help imports this module)
        from ..grade.autograder import build_bundle
        out = build_bundle(args.out, platform=args.platform, catalogue=args.catalogue, tests=args.tests,
                           only=args.only.split(",") if args.only else None, links=args.links, sandbox=args.sandbox)
        print(f"{out}: upload it as the assignment's autograder (Gradescope: Configure Autograder → zip file)")
        return 0
    # start-up: grade.autograder only when run() runs (wirelab --help imports this module)
    from ..grade.autograder import run_autograder
    run_autograder(args.root)
    return 0
