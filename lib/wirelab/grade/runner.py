"""Grade one submission: build it, then run every test on a fresh testbed, with a capture and a deadline.

For each test: two hosts joined by the test's link, opened with
``wirelab.link.open`` like every run of the kit (links with random loss,
duplication or reordering ask for the userspace link, seeded by the test, so
every submission meets the same pattern; a test that ``draw``s runs on the
student's own link and pattern instead, own_link.py), dumpcap where the link says host a
sees its traffic, a watchdog that kills the submission's programs at the
deadline, then the scenario. Whatever happens the programs are killed, the
uid's processes too, the testbed is removed (Ctrl-C included), and the
outcome is recorded; the pcapng is kept only when the test did not pass.
Where the grading's links are ``loopback`` (machine.py: no network namespaces),
a test on a clean link runs with both hosts on 127.0.0.1 and no capture, and
a test on a shaped link is ``skipped`` with the reason.

A ``Stage`` here is one test's link and capture, built ahead; it is not a sweep's
kept link (``experiment.reuse``): a test never shares a testbed with another, so
nothing a student's program left can reach the next test. A misbehaving peer's
play (``wirelab.peers``) runs on the test's ``TestContext``. A test's deadline is
the catalogue's (the instructor's, stretched to the program's own MAX_WAIT and
MAX_RETRANSMITS: constants.py), not the model's: a student must know it before
the test runs.
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

from .. import link as links
from ..capture import LiveCapture
from ..errors import NeedsRootError, WirelabError
from ..experiment.status import failure
from ..link import LinkSpec, capabilities
from .catalogue import Assignment, Catalogue, GradeTest
from .checks_build import BUILD_CHECKS
from .constants import stretch
from .context import Failed, TestContext, TimedOut
from .jail import Jail, Policy
from .machine import cannot_run
from .outcome import Graded, Outcome
from .own_link import own_links
from .prediction import predict_test
from .readings import describe
from .sandbox import UidLease, kill_uid
from .scenarios import run_scenario
from .submission import Submission, prepare
from .wire_feedback import WireJudge, judge_capture, link_noise

__all__ = ["grade_submission", "run_test"]

#: Bytes of each frame kept in captures of big transfers (headers and the PPCB header survive).
SNAPLEN_BIG = 200


def _backend(test: GradeTest) -> str:
    random_parts = {"loss", "duplicate", "reorder", "jitter"}
    seeded = any(k.removesuffix("_reverse") in random_parts and str(v) not in ("0", "0%")
                 for k, v in test.link.items())
    return "userspace" if seeded else "auto"


def _capture(link, path: Path, test: GradeTest) -> LiveCapture:
    """dumpcap on host a's side of the link. No probe packet: it would cross the seeded link and
    shift its loss pattern; the stage is built well before its test, so dumpcap is long running."""
    interface, prefix = link.capture_point("a")
    return LiveCapture(interface, path, prefix=prefix, snaplen=SNAPLEN_BIG if test.size > 1_000_000 else None)


def _classify(ctx: TestContext, err: BaseException | None) -> tuple[str, str]:
    if err is None:
        return "pass", "ok"
    if isinstance(err, TimedOut):
        return "timeout", str(err)
    if isinstance(err, Failed):
        if ctx.expired.is_set():
            return "timeout", f"the test's deadline ({ctx.test.deadline_s:g} s) passed: {err}"
        return "fail", str(err)
    if isinstance(err, (ConnectionError, socket.timeout)):
        return "fail", f"talking to the submission's program: {err}"
    if isinstance(err, WirelabError):
        return "error", f"the grader could not run this test: {err}"
    return "error", f"the grader failed on this test: {failure(err)}"


class Stage:
    """A link and its running capture for one test, built ahead in a thread (while the previous
    test runs) and taken down in one afterwards: captures take about a second to start and stop.
    ``tb``: the open link (two hosts in namespaces, or both on 127.0.0.1 where the grading's links are
    loopback: the submission's programs run on them)."""

    def __init__(self, test: GradeTest, name: str, pcap: Path, capture: bool, where: str = "namespaces"):
        self.test, self.pcap, self.tb, self.cap, self.error = test, pcap, None, None, None
        self.judge: WireJudge | None = None      # set by its test: what judging its capture needs
        self.loopback = where == "loopback"
        self._thread = threading.Thread(target=self._up, args=(name, capture), daemon=True)
        self._thread.start()

    def _up(self, name: str, capture: bool) -> None:
        try:
            spec = LinkSpec.parse(**self.test.link)
            if self.loopback:            # a clean link only (machine.cannot_run): both hosts on 127.0.0.1
                self.tb = links.open(spec, backend="loopback", seed=self.test.seed, name=name)
                return
            self.tb = links.open(spec, backend=_backend(self.test), seed=self.test.seed, name=name)
            if self.tb.backend == "loopback":        # a student's programs need hosts of their own
                raise NeedsRootError("a testbed of hosts (network namespaces)", "run wirelab grade with sudo, "
                                     "or grade on loopback: --links loopback")
            if capture:
                self.cap = _capture(self.tb, self.pcap, self.test).start()
        except BaseException as err:        # noqa: BLE001 - reported when the test wants its stage
            self.error = err

    def ready(self):
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.tb

    def close(self) -> None:
        """Stop the capture, remove the testbed; safe to call twice and after a failed start."""
        self._thread.join()
        try:
            if self.cap is not None:
                self.cap.stop()
        finally:
            if self.tb is not None:
                self.tb.close()


def used_assignment(sub: Submission, catalogue: Catalogue) -> Assignment:
    """The catalogue's constants as the submission's programs really use them (constants.py)."""
    return sub.constants.applied(catalogue.assignment) if sub.constants else catalogue.assignment


def run_test(test: GradeTest, sub: Submission, jail: Jail, catalogue: Catalogue, report_dir: Path,
             stage: "Stage | None") -> Outcome:
    """One test on its stage; never raises for the submission's faults (only KeyboardInterrupt).
    The caller closes the stage (and keeps ``stage.pcap`` only if the outcome says so)."""
    outcome = Outcome(test.id, "error", "", 0.0, test.points, test.role, test.proto, test.topic, test.public,
                      test.describe_link())
    skipped = cannot_run(test, jail.policy.links)
    if skipped:
        outcome.status, outcome.reason = "skipped", skipped
        return outcome
    if sub.error:
        outcome.reason = sub.error
        return outcome
    if test.role == "build":                     # read from the build: no testbed
        outcome.status, outcome.reason = BUILD_CHECKS[test.scenario](sub)
        outcome.points = test.points if outcome.status == "pass" else 0.0
        return outcome
    assignment = used_assignment(sub, catalogue)
    test = stretch(test, catalogue.assignment, assignment)
    started, uid = time.monotonic(), jail.uid
    work = jail.scratch / "tests" / test.id           # the grader's files: inputs, the programs' output
    work.mkdir(parents=True, exist_ok=True)
    err = full = None
    try:
        tb = stage.ready()
        ctx = TestContext(test, tb, sub, uid, catalogue.limits, assignment, work, jail)
        watchdog = threading.Timer(test.deadline_s, _expire, (ctx,))
        watchdog.daemon = True
        watchdog.start()
        try:
            run_scenario(ctx)
        except (Failed, OSError, WirelabError) as caught:
            err = caught
        finally:
            watchdog.cancel()
            ended_wall, exited = _ended(ctx)
            ctx.stop_programs()
            kill_uid(uid)
        if stage.cap is not None:
            stage.judge = WireJudge(test.role, test.proto, assignment.port, assignment.max_wait_s,
                                    assignment.max_retransmits, ended_wall, exited,
                                    *link_noise(LinkSpec.parse(**test.link)))
        outcome.status, outcome.reason = _classify(ctx, err)
        outcome.points = test.points if outcome.status == "pass" else 0.0
        outcome.details = dict(ctx.measured)
        taken = outcome.details.pop("readings", None)
        outcome.reading = describe(taken) if taken else None
    except KeyboardInterrupt:
        raise
    except Exception as problem:                 # noqa: BLE001 - the grader's own failure: record it, go on
        said = problem if isinstance(problem, WirelabError) else failure(problem)
        outcome.status, outcome.reason = "error", f"the grader could not run this test: {said}"
    finally:
        kill_uid(uid)
        full = jail.full()
        jail.clear(test.id)
        shutil.rmtree(work, ignore_errors=True)
    if full:
        outcome.details["disk"] = full
        if outcome.status != "pass":
            outcome.reason += f"; {full}"
    outcome.duration_s = round(time.monotonic() - started, 3)
    _measure(outcome, test, assignment)
    if stage.cap is not None and outcome.status != "pass" and stage.pcap.exists():
        outcome.capture = str(stage.pcap.relative_to(report_dir))
    return outcome


def _ended(ctx: TestContext) -> tuple[float, bool]:
    """When the student's programs could send no more (wall clock) and whether its client ended on its
    own (it gave up or finished): the wire's judge tells silence from a capture cut short by it."""
    clients = [p for p in list(ctx.programs) if p.name == "ppcbc"]
    exited = bool(clients) and not ctx.expired.is_set() and all(p.poll() is not None for p in clients)
    wall, now = time.time(), time.monotonic()
    return wall - (now - max(p.ended for p in clients)) if exited else wall, exited


def _expire(ctx: TestContext) -> None:
    ctx.expired.set()
    ctx.stop_programs()


def _measure(outcome: Outcome, test: GradeTest, assignment: Assignment) -> None:
    details = outcome.details
    if outcome.status == "pass" and "goodput_bps" in details:
        for name in ("goodput_bps", "goodput_at", "completion_s", "completion_at", "data_bytes"):
            setattr(outcome, name, details.pop(name, None))
    if outcome.status == "pass" or test.scenario == "transfer":
        pred = predict_test(test, assignment, outcome.data_bytes)
        outcome.pred_goodput_bps, outcome.pred_binding, outcome.pred_note, outcome.link_limit_bps = (
            pred["pred_goodput_bps"], pred["pred_binding"], pred["pred_note"], pred["link_limit_bps"])
    limit = outcome.link_limit_bps
    if outcome.goodput_bps is not None and limit is not None and outcome.goodput_bps > limit:
        outcome.goodput_flag = (f"measured {outcome.goodput_bps / 1e6:.3g} Mbit/s, above the {limit / 1e6:.3g} Mbit/s "
                                "the link can carry (η·C with tbf's bucket): a measurement error, not a result")


def grade_submission(name: str, source: str | Path, catalogue: Catalogue, report_dir: str | Path, *,
                     capture: bool = True, on_test=None, policy: Policy = Policy(), student: str | None = "") -> Graded:
    """Build ``source`` and run every test of ``catalogue`` on it, confined as ``policy`` says (jail.py);
    artefacts go to ``report_dir``. ``on_test(outcome)`` is called after each test (a progress bar).
    ``student``: whose links the tests that draw run on (own_link.py); "" the submission's ``name``, None
    nobody's (the catalogue's links)."""
    report_dir = Path(report_dir)
    (report_dir / "captures").mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    capabilities()           # probe once, here: stages are built in threads and must not probe at once
    with UidLease() as lease:
        scratch = Path(tempfile.mkdtemp(prefix="wirelab-grade-"))
        if policy.trust:
            os.chmod(scratch, 0o755)             # unsandboxed, the submission's uid must reach its own folders
        jail: Jail | None = None
        stages: list[Stage] = []
        closing: list[threading.Thread] = []
        ran: list[tuple[Stage, Outcome]] = []    # each test's stage, its capture judged once all have run
        tests = own_links(catalogue.tests, name if student == "" else student, catalogue.assignment)
        on_testbed = [i for i, t in enumerate(tests)                        # build tests need none
                      if t.role != "build" and not cannot_run(t, policy.links)]

        def stage(n: int) -> Stage | None:
            if n >= len(on_testbed):
                return None
            i = on_testbed[n]
            made = Stage(tests[i], f"g{lease.uid}-{i}", report_dir / "captures" / f"{tests[i].id}.pcapng",
                         capture and policy.links != "loopback", policy.links)
            stages.append(made)
            return made
        try:
            current, n = stage(0), 0             # the first testbed comes up while the submission builds
            jail = Jail(lease.uid, catalogue.limits, scratch, policy)
            sub = prepare(name, Path(source), jail, catalogue.assignment)
            outcomes = []
            for test in tests:
                if sub.error or test.role == "build" or cannot_run(test, policy.links):   # each says why
                    outcome = run_test(test, sub, jail, catalogue, report_dir, None)
                else:
                    n += 1
                    upcoming = stage(n)
                    outcome = run_test(test, sub, jail, catalogue, report_dir, current)
                    judged = current.judge is not None and current.judge.due(outcome)
                    closing.append(_close_later(current, keep=outcome.capture is not None, judged=judged))
                    ran.append((current, outcome))
                    current = upcoming
                outcomes.append(outcome)
                if on_test is not None:
                    on_test(outcome)
            for thread in closing:
                thread.join()
            _judge_captures(ran)
        finally:
            kill_uid(lease.uid)
            for thread in closing:
                thread.join()
            for made, outcome in ran:           # a passed test's capture goes, judged or not (Ctrl-C)
                if outcome.capture is None:
                    made.pcap.unlink(missing_ok=True)
            for made in stages:                  # what Ctrl-C or an error left standing
                made.close()
            confinement = jail.describe() if jail is not None else ""
            if jail is not None:
                jail.close()
            shutil.rmtree(scratch, ignore_errors=True)
    return Graded(name, outcomes, sub.language, sub.error, sub.build_log, round(time.monotonic() - started, 2),
                  str(source), constants=sub.constants.to_dict() if sub.constants else {},
                  warnings=list(sub.warnings), confinement=confinement)


def _judge_captures(ran: list[tuple[Stage, Outcome]]) -> None:
    """Every stopped capture due for it judged (wire_feedback.py), once the submission's tests have all run:
    reading captures beside a running test would take the grader's CPU (and its process's GIL) from the
    transfers it times."""
    for stage, outcome in ran:
        if stage.judge is not None and stage.judge.due(outcome) and stage.pcap.exists():
            judge_capture(stage.pcap, outcome, stage.judge)


def _close_later(stage: Stage, *, keep: bool, judged: bool) -> threading.Thread:
    """Take the stage down in a thread; its capture stays if ``keep`` (the test did not pass) or until it is
    ``judged`` (after the last test)."""
    def close():
        try:
            stage.close()
        except Exception:                        # noqa: BLE001 - a leftover is reaped by the next testbed
            pass
        if not keep and not judged:
            stage.pcap.unlink(missing_ok=True)
        elif keep and stage.pcap.exists():
            stage.pcap.chmod(0o644)              # dumpcap writes 0600; the report is for reading
    thread = threading.Thread(target=close, daemon=True)
    thread.start()
    return thread
