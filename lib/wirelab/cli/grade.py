"""``wirelab grade``: test PPCB submissions (ppcbc + ppcbs, any language) like an instructor would.

    sudo wirelab grade SUBMISSION...            # folders with ppcbc and ppcbs, or a Makefile; or a .tgz/.zip
    sudo wirelab grade --class DIR --jobs 2     # every sub-folder, archive and patch of DIR
    wirelab grade --class DIR --cluster tcp://10.0.0.1:8786   # on a Dask cluster's workers (root there)
    sudo wirelab grade --public .               # a student checks their own work: public tests only
    wirelab grade --list                        # the catalogue (no root needed)
    wirelab grade --list --course net-2026 --student s1234567   # the links that student is graded on
    sudo wirelab grade --class DIR --format gradescope,gradebook   # also each platform's own file
    wirelab grade --from reports/results.json --format prairielearn  # a saved grading, again (no root)

Each submission runs isolated: every program (and make) in a bubblewrap
sandbox (read-only system, private bounded /tmp, no view of other files),
in network namespaces with no route out, under its own user id, with CPU,
memory (a cgroup), disk, file-size and process limits and a deadline per
test. Without bubblewrap it refuses, unless --trust. Where no network
namespace can be made (a course platform's container), --links auto puts
the tests on 127.0.0.1 and skips the ones on shaped links, each with the
reason (grade/machine.py). Afterwards it checks
that no process and no file of a grading uid is left anywhere, and says so.
Reports go to --out (default ./grade-reports): per submission report.html and
report.json with the reason for every test and the pcapng of each failed one;
for the class index.html, class.csv and class.parquet. --json prints
{"submissions": [{"name", "score", "tests": [{"id", "status", "reason", "points"}]}]}.
--format writes course platforms' files beside them (grade/formats/): per submission
gradescope.json (Gradescope's results.json) and prairielearn.json (PrairieLearn's), for the class
gradebook-canvas.csv and gradebook-moodle.csv, and leaderboard.csv (goodput ÷ model).
Running the same command again resumes, as `wirelab run` does: a submission graded into --out
before is kept when its files, the catalogue, the wirelab version and the sandbox and links are
the same (grade/resume.py), graded again otherwise (it says which and why); --fresh grades all again.
The performance and loss tests run on each student's own link (grade/own_link.py): drawn within
the catalogue's values from --course and the submission's name (its student id), as the labs'
my_link draws a student's link; the reports say which link each test ran on.
Exit status: 0 when every test passed, 1 when some did not, 2 on bad usage.
"""
from __future__ import annotations

from dataclasses import replace
import json
import os
import signal
import sys
from pathlib import Path

from ..errors import NeedsRootError, UsageError


def add_parser(subparsers):
    p = subparsers.add_parser("grade", help="grade PPCB submissions (ppcbc + ppcbs) against the test catalogue",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("submissions", nargs="*", metavar="SUBMISSION", help="submission folders or archives (.tgz, .zip)")
    p.add_argument("--class", dest="class_dir", metavar="DIR",
                   help="grade every sub-folder, archive (.tgz, .zip) and patch (.diff) of DIR")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded in parallel (default 1)")
    p.add_argument("--cluster", metavar="ADDRESS", help="grade on the workers of this Dask scheduler (each "
                   "worker as root; its --nthreads submissions at once), e.g. tcp://10.0.0.1:8786")
    p.add_argument("--public", action="store_true", help="only the public tests (what students may run)")
    p.add_argument("--tests", action="append", default=[], metavar="FILE",
                   help="add the tests of FILE (hidden tests; repeatable)")
    p.add_argument("--catalogue", metavar="FILE", help="use FILE instead of the bundled catalogue")
    p.add_argument("--only", metavar="ID[,ID...]", help="only tests whose id matches (globs: 'server-udpr-*')")
    p.add_argument("--out", default="grade-reports", help="reports folder (default ./grade-reports); grading into "
                   "it again keeps the submissions graded there with the same files, catalogue, wirelab and "
                   "sandbox/links, and grades the rest")
    p.add_argument("--fresh", action="store_true", help="grade every submission again, even those --out holds "
                   "graded with the same files, catalogue, wirelab and sandbox/links")
    p.add_argument("--no-capture", action="store_true", help="keep no pcapng of failed tests (faster)")
    p.add_argument("--expect", metavar="FILE", help="check the failures against FILE (like "
                   "data/example-class/expected.toml); exit 1 on any difference")
    p.add_argument("--format", action="append", default=[], metavar="NAME[,NAME...]",
                   help="also write gradescope, prairielearn and/or gradebook files (repeatable)")
    p.add_argument("--assignment", default="PPCB", help="the gradebook's assignment column (default PPCB)")
    p.add_argument("--from", dest="saved", metavar="RESULTS_JSON",
                   help="grade nothing: write --format files for a saved grading (a report folder's results.json)")
    p.add_argument("--course", metavar="NAME", help="the course's name, as its labs are run with: each student's "
                   "link for the tests that draw one is drawn from it and the student's id (the name of the "
                   "submission's folder or archive), as my_link draws it (default: the catalogue's, else none)")
    p.add_argument("--student", metavar="ID", help="the student id of the one submission given (default: its "
                   "folder's or archive's name); its tests that draw run on this student's link")
    p.add_argument("--list", action="store_true", help="print the tests and exit")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--links", choices=("auto", "namespaces", "loopback"), default="auto",
                   help="where the tests' links are built: namespaces (every test), loopback (127.0.0.1: tests on "
                   "shaped links are skipped, each with the reason); auto (default): namespaces where they work")
    p.add_argument("--trust", action="store_true", help="run the submissions without a sandbox (only for code "
                   "you trust, e.g. where bubblewrap cannot be installed); limits and clean-up stay")
    return p


def _catalogue(args):
    # start-up: grade.catalogue only when _catalogue() runs (wirelab --help imports this module)
    from ..grade import load_catalogue
    cat = load_catalogue(args.catalogue, extra=args.tests)
    if getattr(args, "course", None) is not None:
        cat = replace(cat, assignment=replace(cat.assignment, course=args.course.strip()))
    if args.public:
        cat = cat.public()
    return cat.select(args.only.split(",") if args.only else None)


def _list(cat) -> int:
    a = cat.assignment
    print(f"{len(cat.tests)} tests, {cat.total_points:g} points; MAX_WAIT {a.max_wait_s:g} s, "
          f"MAX_RETRANSMITS {a.max_retransmits}, servers on port {a.port}")
    for t in cat.tests:
        print(f"  {t.id:<34} {'public' if t.public else 'hidden':<7} {t.points:>3g} pt {t.deadline_s:>4g} s  "
              f"{t.describe_link():<38} {t.checks}")
    return 0


def _print_human(graded, files, out: Path) -> None:
    if graded:
        print(f"each program: {graded[0].confinement}")
    for g in graded:
        print(f"{g.name}: {g.score:g} % ({g.points:g}/{g.max_points:g} points"
              + (f"; {g.build_error}" if g.build_error else "") + ")")
        for t in g.tests:
            if t.status != "pass":
                capture = f"  [{out / g.name / t.capture}]" if t.capture else ""
                print(f"  {t.status:<7} {t.id}: {t.reason}{capture}")
    print(f"reports: {files['html']} (per submission: {out}/<name>/report.html)")


def _give_back(folder: Path) -> None:
    """Under sudo, the reports belong to the user who asked for them, not to root."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if not (uid and gid and uid.isdigit() and gid.isdigit()):
        return
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, int(uid), int(gid), follow_symlinks=False)


def _swept(places, *, wait: bool = True):
    """The sweep for leftovers (leftovers.py); after Ctrl-C it does not wait for the search to finish."""
    # start-up: grade.leftovers only when _swept() runs (wirelab --help imports this module)
    from ..grade.leftovers import sweep
    if not wait:
        places.close()
    try:
        return sweep(places)
    finally:
        places.close()


def _platform_files(graded, cat, args, out: Path) -> None:
    """--format: each platform's own files beside the reports (grade/formats/)."""
    if not args.format:
        return
    # start-up: grade.formats only when _platform_files() runs (wirelab --help imports this module)
    from ..grade.formats import write_formats
    written = write_formats(graded, out, cat, args.format, assignment=args.assignment)
    for name, files in written.items():
        shown = files if len(files) <= 3 else [*files[:2], f"... {len(files)} files"]
        print(f"{name}: {', '.join(str(f) for f in shown)}", file=sys.stderr if args.json else sys.stdout)


def _export(args, cat) -> int:
    """--from: a saved grading in the platforms' shapes; no submission runs, so no root is needed."""
    # start-up: grade.outcome, grade.formats only when _export() runs (wirelab --help imports this module)
    from ..grade import load_graded
    from ..grade.formats import parse_formats
    if not parse_formats(args.format):
        raise UsageError("--from writes platform files and needs --format", "e.g. --format gradescope,gradebook")
    graded = load_graded(args.saved)
    known = {t.id for t in cat.tests}
    cat = cat if all(t.id in known for g in graded for t in g.tests) else None   # graded by another catalogue
    out = Path(args.out)
    _platform_files(graded, cat, args, out)
    _give_back(out)
    if args.json:
        # start-up: grade.outcome only when _export() runs (wirelab --help imports this module)
        from ..grade import json_summary
        print(json.dumps(json_summary(graded), indent=1))
    return 0


def run(args) -> int:
    cat = _catalogue(args)
    if args.list:
        if args.student:                      # the links this student's tests run on: the key says which
            # start-up: grade.own_link only when run() runs (wirelab --help imports this module)
            from ..grade.own_link import own_links
            cat = replace(cat, tests=tuple(own_links(cat.tests, args.student, cat.assignment)))
        return _list(cat)
    if args.saved:
        return _export(args, cat)
    if args.format:
        # start-up: grade.formats only when run() runs (wirelab --help imports this module)
        from ..grade.formats import parse_formats
        parse_formats(args.format)            # a misspelt format is said before anything is graded
    if not args.submissions and not args.class_dir:
        raise UsageError("nothing to grade", "give submission folders, or --class DIR (see --help)")
    if args.student and (args.class_dir or len(args.submissions) != 1):
        raise UsageError("--student names one student, and more than one submission is given",
                         "give one submission with --student; a class folder's names are its students' ids")
    if os.geteuid() != 0 and not args.cluster:
        raise NeedsRootError("grading (network namespaces, and a user id of its own for each submission)",
                             "run it with sudo: sudo wirelab grade ...")
    # start-up: grade.expected, grade.jail, grade.leftovers only when run() runs (wirelab --help imports this module)
    from ..grade import check_expected, find_submissions, grade_class, json_summary, load_expected, write_reports
    from ..grade.jail import Policy, require_sandbox
    from ..grade.leftovers import Places
    submissions = find_submissions(args.submissions, class_dir=args.class_dir)
    students = {submissions[0][0]: args.student.strip()} if args.student else None
    expected = load_expected(args.expect) if args.expect else None
    out = Path(args.out)
    # start-up: grade.machine only when run() runs (wirelab --help imports this module)
    from ..grade.machine import links_for
    # on a cluster each worker finds its own links and checks its own sandbox (grade/spread.py)
    policy = Policy(trust=args.trust, hide=tuple(str(Path(f).resolve()) for f in [*args.tests, args.catalogue] if f),
                    links=args.links if args.cluster else links_for(args.links))
    if not args.cluster:
        require_sandbox(policy)
    # start-up: link (its front loads the model) only when run() runs; `wirelab grade --help` loads 5 modules
    from ..link.cleanup import interrupt_in
    previous = signal.signal(signal.SIGTERM, interrupt_in(os.getpid()))   # `kill` cleans up like Ctrl-C does
    places = Places()                         # the world-writable folders, found while the grading runs
    try:
        options = dict(capture=not args.no_capture, progress=not args.no_progress and not args.json, policy=policy,
                       fresh=args.fresh)
        if args.cluster:
            # start-up: grade.spread only when run() runs (wirelab --help imports this module)
            from ..grade.spread import grade_across
            graded = grade_across(submissions, cat, out, cluster=args.cluster, **options)
        else:
            graded = grade_class(submissions, cat, out, jobs=args.jobs, students=students, **options)
    except BaseException:                     # Ctrl-C included: nothing of a grading uid outlives it
        print(_swept(places, wait=False).summary(), file=sys.stderr)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    swept = _swept(places)
    files = write_reports(graded, out, cat)
    _platform_files(graded, cat, args, out)
    _give_back(out)
    if args.json:
        print(json.dumps(json_summary(graded), indent=1))
        print(swept.summary(), file=sys.stderr)
    else:
        _print_human(graded, files, out)
        print(swept.summary())
    status = 0 if all(not g.failed() for g in graded) else 1
    if expected is not None:
        problems = check_expected(graded, expected)
        for line in problems:
            print(f"not as expected: {line}", file=sys.stderr)
        status = 1 if problems else 0
    return status
