"""Grade many submissions, ``jobs`` at a time, losing none: a crashed worker becomes an error row.

With ``jobs=1`` submissions are graded one after another in this process
(a progress bar counts tests). With more, each submission is graded in a
worker process of its own (spawned, so it starts clean; its testbeds, uid
and captures are its own; at nice -5, above the programs it tests), and the
bar counts submissions. On a Dask cluster's workers: ``spread.py``.

A grading resumes as a sweep does (resume.py, for every path alike): each
submission graded is saved at once in ``report_dir/results.json``; run the
same command again and a submission graded there before is kept when its key
(a digest of its files as laid out, a digest of the catalogue as loaded, the
wirelab version, the sandbox and the links) is the same, and graded again
otherwise, or with ``fresh``. Ctrl-C stops the workers, whose testbeds come
down with them, and keeps what was graded (``wirelab grade --from`` makes the
platforms' files of it).

Shared with the sweeps' runner (``experiment``): the progress bar, the words
for a failure of the grader's own (``status.failure``), the links
(``wirelab.link.open``, runner.py), the misbehaving peers (``wirelab.peers``),
and resuming. Apart, on purpose: a grading is not a sweep of the one runner.
Its verdicts (pass, fail, timeout, error, skipped; outcome.py) judge a
student's program against the specification and carry points, where a
sweep's statuses say whether a measurement was made; each test gets a fresh
testbed (nothing of a student's program outlives its test) with a deadline
the instructor wrote in the catalogue, where a sweep keeps its link and
derives deadlines from the model; and a submission is the unit kept or
graded again, whole: its tests are never mixed from two gradings, and a
changed file, catalogue, kit or policy means a new grading of all of them
(the keys answer the fear that a resumed grading could mix two builds of one
submission).
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from dataclasses import replace
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from ..errors import UsageError
from ..experiment.progress import progress_bar
from ..experiment.status import failure
from ..link.cleanup import interrupt_once, remove, testbeds
from .catalogue import Catalogue
from .jail import Policy, require_sandbox
from .outcome import Graded, Outcome
from .resume import Resume, resume
from .runner import grade_submission

__all__ = ["grade_class", "lost_submission", "confined", "keep_graded"]


def _start_worker() -> None:
    """Each worker: the first interrupt starts its cleanup, and nothing cuts that cleanup short."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupt_once)


def _grade_in_worker(name: str, source: str, catalogue: Catalogue, report_dir: str, capture: bool,
                     policy: Policy = Policy(), student: str | None = "") -> dict:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:   # interrupted already: grade nothing more
        raise KeyboardInterrupt("the grading was interrupted")
    try:            # the worker's peers answer the programs under test: they must not wait behind them
        os.setpriority(os.PRIO_PROCESS, 0, -5)
    except OSError:
        pass
    return grade_submission(name, source, catalogue, report_dir, capture=capture, policy=policy,
                            student=student).to_dict()


def lost_submission(name: str, source, catalogue: Catalogue, why: str) -> Graded:
    """Every test of a submission whose grading process died, as an error with the reason."""
    tests = [Outcome(t.id, "error", f"the grader's worker for this submission died: {why}", 0.0, t.points,
                     t.role, t.proto, t.topic, t.public, t.describe_link()) for t in catalogue.tests]
    return Graded(name, tests, source=str(source))


def confined(policy: Policy, submissions: list[tuple[str, Path]], report_dir: Path) -> Policy:
    """``policy`` hiding every submission (and the folder each lies in) and the reports from each program."""
    seen = {str(Path(p).resolve()) for _, source in submissions for p in (source, Path(source).resolve().parent)}
    return replace(policy, hide=tuple(sorted({*policy.hide, *seen, str(Path(report_dir).resolve())})))


def grade_class(submissions: list[tuple[str, Path]], catalogue: Catalogue, report_dir: str | Path, *,
                jobs: int = 1, capture: bool = True, progress: bool = True, policy: Policy = Policy(),
                fresh: bool = False, students: dict | None = None) -> list[Graded]:
    """Grade every (name, folder), each confined as ``policy`` says (jail.py); per-submission artefacts go
    to ``report_dir/<name>/``. Each submission's tests that draw run on its student's own link (own_link.py):
    ``students`` maps a name to its student id (None: no id, the catalogue's links); a name it lacks is
    its own student id (a class folder's sub-folders and archives are named by the students' ids).
    Submissions graded there before with the same key are kept (resume.py;
    ``fresh``: none is). Returns the results, kept and new, in the order given."""
    if jobs < 1:
        raise UsageError(f"--jobs must be 1 or more, not {jobs}", "e.g. --jobs 2")
    if jobs > 1 and policy.links == "loopback":        # every server would listen on the same 127.0.0.1 port
        raise UsageError(f"on loopback the submissions' servers all listen on 127.0.0.1:{catalogue.assignment.port}, "
                         "so two cannot be graded at once", "grade them one after another: --jobs 1")
    require_sandbox(policy)
    report_dir = Path(report_dir)
    plan = resume(submissions, catalogue, policy, report_dir, fresh=fresh, students=students)
    policy = confined(policy, submissions, report_dir)
    if jobs == 1:
        bar = progress_bar(len(plan.todo) * len(catalogue.tests), unit="test", enabled=progress)
        try:
            for name, source in plan.todo:
                bar.set_description(name)
                plan.record(grade_submission(name, source, catalogue, report_dir / name, capture=capture,
                                             on_test=lambda _: bar.update(), policy=policy,
                                             student=(students or {}).get(name, "")))
        except KeyboardInterrupt:
            keep_graded(plan)
            raise
        finally:
            bar.close()
        return plan.results()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_worker) as pool:
        futures = {pool.submit(_grade_in_worker, name, str(source), catalogue, str(report_dir / name), capture,
                               policy, (students or {}).get(name, "")):
                   (name, source) for name, source in plan.todo}
        bar = progress_bar(len(futures), unit="submission", enabled=progress)
        try:
            for future in as_completed(futures):
                name, source = futures[future]
                try:
                    plan.record(Graded.from_dict(future.result()))
                except BrokenProcessPool as err:
                    plan.record(lost_submission(name, source, catalogue, f"{err}"), lost=True)
                except KeyboardInterrupt:
                    raise
                except Exception as err:     # noqa: BLE001 - one submission's disaster is not the class's
                    plan.record(lost_submission(name, source, catalogue, failure(err)), lost=True)
                bar.update()
        except KeyboardInterrupt:            # workers clean up their testbeds and uids, then stop
            workers = [process.pid for process in list(getattr(pool, "_processes", {}).values())]
            for pid in workers:
                try:
                    os.kill(pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
            pool.shutdown(wait=True, cancel_futures=True)
            _remove_workers_testbeds(workers)
            keep_graded(plan)
            raise
        finally:
            bar.close()
    return plan.results()


def _remove_workers_testbeds(workers: list[int]) -> None:
    """After the workers ended: any testbed one of them still owns. A worker interrupted while it
    built a testbed can end before its own cleanup knew of the namespace being made (CI once:
    wl-g61001-0-8144-a and -b left after Ctrl-C with --jobs 2)."""
    left = [entry for entry in testbeds().values() if entry.get("owner") in workers and not entry["alive"]]
    for entry in left:
        remove(entry)
    if left:
        print(f"wirelab: removed {len(left)} testbed(s) an interrupted worker left: "
              f"{', '.join(e['id'] for e in left)}", file=sys.stderr)


def keep_graded(plan: Resume) -> None:
    """On Ctrl-C: the submissions graded so far (and kept), saved where the class's results go."""
    graded = plan.results()
    if graded:
        path = plan.save()
        print(f"wirelab: interrupted; the {len(graded)} submission(s) graded so far ({len(plan.kept)} kept from "
              f"before) are in {path}; the same command again grades only the rest", file=sys.stderr)
