"""Grade many submissions, ``jobs`` at a time, losing none: a crashed worker becomes an error row.

With ``jobs=1`` submissions are graded one after another in this process
(a progress bar counts tests). With more, each submission is graded in a
worker process of its own (spawned, so it starts clean; its testbeds, uid
and captures are its own; at nice -5, above the programs it tests), and the
bar counts submissions. Ctrl-C stops the workers, whose testbeds come down
with them, and keeps what was graded: the submissions already done are saved
in ``report_dir/results.json`` (``load_graded``; ``wirelab grade --from`` makes
the platforms' files of them), as a sweep keeps its finished runs. On a Dask
cluster's workers: ``spread.py``.

Shared with the sweeps' runner (``experiment``): the progress bar, the words
for a failure of the grader's own (``status.failure``), the links
(``wirelab.link.open``, runner.py), and the misbehaving peers (``wirelab.peers``).
Apart, on purpose: a grading is not a sweep of the one runner. Its verdicts
(pass, fail, timeout, error, skipped; outcome.py) judge a student's program
against the specification and carry points, where a sweep's statuses say
whether a measurement was made; each test gets a fresh testbed (nothing of a
student's program outlives its test) with a deadline the instructor wrote in
the catalogue, where a sweep keeps its link and derives deadlines from the
model; and a class is graded whole, not resumed (a resumed grading could mix
two builds of one submission).
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
from ..link.cleanup import interrupt_once
from .catalogue import Catalogue
from .jail import Policy, require_sandbox
from .outcome import Graded, Outcome, save_graded
from .runner import grade_submission

__all__ = ["grade_class", "lost_submission", "confined", "keep_graded"]


def _start_worker() -> None:
    """Each worker: the first interrupt starts its cleanup, and nothing cuts that cleanup short."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupt_once)


def _grade_in_worker(name: str, source: str, catalogue: Catalogue, report_dir: str, capture: bool,
                     policy: Policy = Policy()) -> dict:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:   # interrupted already: grade nothing more
        raise KeyboardInterrupt("the grading was interrupted")
    try:            # the worker's peers answer the programs under test: they must not wait behind them
        os.setpriority(os.PRIO_PROCESS, 0, -5)
    except OSError:
        pass
    return grade_submission(name, source, catalogue, report_dir, capture=capture, policy=policy).to_dict()


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
                jobs: int = 1, capture: bool = True, progress: bool = True, policy: Policy = Policy()) -> list[Graded]:
    """Grade every (name, folder), each confined as ``policy`` says (jail.py); per-submission artefacts go
    to ``report_dir/<name>/``. Returns the results in the order given."""
    if jobs < 1:
        raise UsageError(f"--jobs must be 1 or more, not {jobs}", "e.g. --jobs 2")
    if jobs > 1 and policy.links == "loopback":        # every server would listen on the same 127.0.0.1 port
        raise UsageError(f"on loopback the submissions' servers all listen on 127.0.0.1:{catalogue.assignment.port}, "
                         "so two cannot be graded at once", "grade them one after another: --jobs 1")
    require_sandbox(policy)
    report_dir = Path(report_dir)
    policy = confined(policy, submissions, report_dir)
    if jobs == 1:
        results = []
        bar = progress_bar(len(submissions) * len(catalogue.tests), unit="test", enabled=progress)
        try:
            for name, source in submissions:
                bar.set_description(name)
                results.append(grade_submission(name, source, catalogue, report_dir / name, capture=capture,
                                                on_test=lambda _: bar.update(), policy=policy))
        except KeyboardInterrupt:
            keep_graded(results, report_dir)
            raise
        finally:
            bar.close()
        return results
    found: dict[str, Graded] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_worker) as pool:
        futures = {pool.submit(_grade_in_worker, name, str(source), catalogue, str(report_dir / name), capture,
                               policy):
                   (name, source) for name, source in submissions}
        bar = progress_bar(len(futures), unit="submission", enabled=progress)
        try:
            for future in as_completed(futures):
                name, source = futures[future]
                try:
                    found[name] = Graded.from_dict(future.result())
                except BrokenProcessPool as err:
                    found[name] = lost_submission(name, source, catalogue, f"{err}")
                except KeyboardInterrupt:
                    raise
                except Exception as err:     # noqa: BLE001 - one submission's disaster is not the class's
                    found[name] = lost_submission(name, source, catalogue, failure(err))
                bar.update()
        except KeyboardInterrupt:            # workers clean up their testbeds and uids, then stop
            for process in list(getattr(pool, "_processes", {}).values()):
                try:
                    os.kill(process.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
            pool.shutdown(wait=True, cancel_futures=True)
            keep_graded([found[name] for name, _ in submissions if name in found], report_dir)
            raise
        finally:
            bar.close()
    return [found[name] for name, _ in submissions]


def keep_graded(graded: list[Graded], report_dir: Path) -> None:
    """On Ctrl-C: the submissions graded so far, saved where the class's results go."""
    if graded:
        report_dir.mkdir(parents=True, exist_ok=True)
        path = save_graded(graded, report_dir / "results.json")
        print(f"wirelab: interrupted; the {len(graded)} submission(s) graded so far are in {path}",
              file=sys.stderr)
