"""What ``run_autograder`` does for each submission (``wirelab autograder run``), inside the platform's
container, in Gradescope's layout:

    /autograder/source/      the bundle (bundle.py): wirelab-autograder.toml, tests/, wirelab/
    /autograder/submission/  the student's files: a folder with a Makefile (or ppcbc and ppcbs), or
                             one .tgz/.zip as the assignment asks
    /autograder/results/results.json   what this writes, always (a grader that fails says so in it)
    /autograder/submission_metadata.json   who handed it in: the tests that draw run on that student's
                             own link, in the catalogue's course (own_link.py); without it, the catalogue's

How the container is used, decided here and said in the results' output:

* **root, network namespaces** (a privileged container): every test, as ``sudo wirelab grade``.
* **root, no namespaces** (Gradescope's usual container: Docker withholds CAP_SYS_ADMIN and
  CAP_NET_ADMIN): the tests on a clean link run on 127.0.0.1, the ones on shaped links are
  skipped with the reason (machine.py) and count on neither side of the score.
* **sandbox** ``auto``: bubblewrap where it runs; where it cannot (no CAP_SYS_ADMIN, no user
  namespaces), ``--trust``: the container itself is the sandbox. That is sound there and only
  there: the container holds this one submission and nothing of other students, and is thrown
  away afterwards. What the grader still does: each program runs under a user id of its own with
  the limits (CPU, processes, file size, open files; memory by a cgroup or RLIMIT_AS), is killed
  with everything that uid owns after each test, and cannot read ``/autograder/source`` (the
  hidden tests: made root's alone, mode 0700, before anything of the submission runs) nor write
  the results. ``always``: refuse to grade without bubblewrap (every test an error saying so).
* **not root**: no untrusted program runs at all: without a user id of its own a submission's
  program could end the grader (``kill -1``) or rewrite its results. Every test is skipped with
  that reason, and the output says how to run the autograder as root.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import tomllib
import traceback
from pathlib import Path

from ...errors import UsageError, WirelabError
from ..catalogue import Catalogue, load_catalogue
from ..classroom import grade_class
from ..formats import gradescope
from ..handin import ARCHIVES
from ..jail import Policy, bwrap_version
from ..machine import links_for
from ..outcome import Graded, Outcome
from ..own_link import student_of_metadata
from .bundle import CONFIG

__all__ = ["run_autograder", "load_config", "locate_submission", "ROOT_ENV"]

ROOT_ENV = "WIRELAB_AUTOGRADER_ROOT"


def load_config(source: Path) -> dict:
    path = source / CONFIG
    if not path.is_file():
        raise UsageError(f"no {CONFIG} in {source}", "unpack a bundle made by `wirelab autograder bundle` there")
    return tomllib.loads(path.read_text())


def catalogue_of(config: dict, source: Path) -> Catalogue:
    tests = source / "tests"
    main = tests / config["catalogue"] if config.get("catalogue") else None
    return load_catalogue(main, extra=[tests / t for t in config.get("tests", [])]).select(config.get("only") or None)


def locate_submission(folder: Path) -> Path:
    """The hand-in inside the platform's submission folder: the folder itself (a Makefile, or ppcbc and
    ppcbs), or the one archive in it."""
    if not folder.is_dir():
        raise UsageError(f"no submission folder {folder}", "the platform puts the student's files there")
    names = {p.name for p in folder.iterdir()}
    if names & {"Makefile", "makefile", "GNUmakefile"} or {"ppcbc", "ppcbs"} <= names:
        return folder
    archives = [p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(ARCHIVES)]
    if len(archives) == 1:
        return archives[0]
    raise UsageError(f"the submission holds {', '.join(sorted(names)) or 'nothing'}: neither a Makefile (or "
                     "ppcbc and ppcbs) nor exactly one archive",
                     "hand in one .tgz whose root has the Makefile that builds ppcbc and ppcbs")


def _unrun(catalogue: Catalogue, status: str, reason: str) -> Graded:
    """Every test with the same status and reason (nothing of the submission ran)."""
    tests = [Outcome(t.id, status, reason, 0.0, t.points, t.role, t.proto, t.topic, t.public, t.describe_link())
             for t in catalogue.tests]
    return Graded("submission", tests, build_error=reason if status == "error" else None)


def _grade(root: Path, config: dict, catalogue: Catalogue) -> Graded:
    if os.geteuid() != 0:
        return _unrun(catalogue, "skipped",
                      f"the autograder ran as uid {os.geteuid()}, not root, so no program of the submission was "
                      "started: without a user id of its own it could end the grader or rewrite its results "
                      "(run run_autograder as root, as Gradescope does)")
    try:
        handed_in = locate_submission(root / "submission")
    except UsageError as err:
        return _unrun(catalogue, "error", str(err))
    sandbox = config.get("sandbox", "auto")
    if sandbox == "always" and bwrap_version() is None:
        return _unrun(catalogue, "error", "the autograder asks for bubblewrap (sandbox = \"always\") and it cannot "
                      "run in this container: bundle with --sandbox auto to let the container be the sandbox")
    source = root / "source"
    os.chmod(source, 0o700)                  # the hidden tests: root's alone, before any program starts
    trust = sandbox == "never" or bwrap_version() is None
    policy = Policy(trust=trust, hide=(str(source.resolve()), str((root / "results").resolve())),
                    links=links_for(config.get("links", "auto")))
    student = student_of_metadata(root / "submission_metadata.json")
    with tempfile.TemporaryDirectory(prefix="wirelab-autograder-") as reports:
        graded, = grade_class([("submission", handed_in)], catalogue, reports, capture=False, progress=False,
                              policy=policy, students={"submission": student})
    if trust:
        graded.confinement += ("; the container is the sandbox: bubblewrap cannot run here" if sandbox == "auto"
                               else "; the container is the sandbox (sandbox = \"never\")")
    return graded


def run_autograder(root: str | Path | None = None) -> Path:
    """Grade ``root``/submission and write ``root``/results/results.json (Gradescope's); returns its path.
    ``root``: the argument, else $WIRELAB_AUTOGRADER_ROOT, else /autograder."""
    root = Path(root or os.environ.get(ROOT_ENV) or "/autograder")
    if not root.is_dir():
        raise UsageError(f"no autograder folder {root}", f"give --root DIR or set {ROOT_ENV}")
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    target = results / "results.json"
    started = time.monotonic()
    try:
        config = load_config(root / "source")
        catalogue = catalogue_of(config, root / "source")
    except WirelabError as err:               # the bundle is broken, not the submission: say so, and stop
        target.write_text(json.dumps({"score": 0.0, "tests": [],
                                      "output": f"The autograder could not start (no test ran): {err}"}))
        raise
    try:
        graded = _grade(root, config, catalogue)
    except (WirelabError, OSError) as err:    # the grader's own failure: said in the results, not a bare zero
        traceback.print_exc()
        graded = _unrun(catalogue, "error", f"the grader failed, not the submission: {err}")
    graded.duration_s = graded.duration_s or round(time.monotonic() - started, 2)
    data = gradescope.results(graded, catalogue.total_points)
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"{graded.score:g} % ({graded.points:g} of {graded.max_points:g} points); "
          f"{', '.join(f'{n} {s}' for s, n in graded.counts().items() if n)}; {graded.confinement or 'nothing ran'}")
    for t in graded.tests:
        if t.status != "pass":
            print(f"  {t.status:<7} {t.id}: {t.reason}")
    print(f"results: {target}", file=sys.stderr)
    return target
