"""Grade a class on a Dask cluster: each submission on one worker, graded there as here.

    graded = grade_across(submissions, catalogue, "reports", cluster="tcp://10.0.0.1:8786")

A submission travels as bytes (its folder, archive, or patch with the folder it applies
to), is graded on a worker by ``grade_submission`` in a process of its own, exactly as
``--jobs`` grades it on one machine (its own namespaces, uid and captures, at nice -5, a
Ctrl-C reaching it), and comes back as its ``Graded`` record and its report folder; after
a Ctrl-C the submissions already graded are kept, as on one machine (``keep_graded``), and a
grading resumes as there: only the submissions not graded before with the same key travel
(``resume.py``, the one decision for every path). Dask
places each submission on a free worker thread (a worker's ``--nthreads`` is how many it
grades at once) and moves a lost worker's submissions to another; one that cannot be graded
anywhere becomes an error row, as a crashed worker does on one machine. Only workers that
run as root (with bubblewrap, unless ``trust``) grade; the others are named and left out.

    python -m wirelab.grade.spread       # the grading process on a worker (a pickle on stdin)
"""
from __future__ import annotations

import contextlib
import io
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import uuid
from dataclasses import replace
from pathlib import Path

from ..errors import UsageError
from ..experiment.progress import progress_bar
from ..experiment.status import failure
from ..link import workers
from .catalogue import Catalogue
from .classroom import confined, keep_graded, lost_submission, _grade_in_worker, _start_worker
from .handin import kind_of, patch_base
from .jail import Policy
from .machine import links_for
from .outcome import Graded
from .resume import resume

__all__ = ["grade_across", "pack", "unpack"]

_LOCK = threading.Lock()
#: On loopback every submission's server listens on one 127.0.0.1 port: one grading at a time.
_LOOPBACK = threading.Lock()
_CHILDREN: dict[str, list[subprocess.Popen]] = {}


def pack(paths: list[Path], root: Path) -> bytes:
    """A gzipped tar of ``paths``, named relative to ``root``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in paths:
            tar.add(path, arcname=str(Path(path).relative_to(root)))
    return buffer.getvalue()


def unpack(data: bytes, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(into, filter="data")


def _shipment(source: Path) -> bytes:
    """A submission as bytes: itself, and for a patch the folder it applies to."""
    source = Path(source).resolve()
    items = [source] + ([patch_base(source).resolve()] if kind_of(source) == "patch" else [])
    return pack(items, source.parent)


def _here_ready(trust: bool) -> str | None:
    """On a worker: why it cannot grade (not root, no bubblewrap), or None."""
    if os.geteuid() != 0:
        return "not root (grading needs namespaces and uids of its own)"
    if not trust and shutil.which("bwrap") is None:
        return "no bubblewrap (apt-get install bubblewrap)"
    return None


def _grade_remote(name: str, source_name: str, shipment: bytes, catalogue: Catalogue, capture: bool,
                  policy: Policy, token: str) -> dict:
    """On a worker: lay the submission out, grade it in a process of its own, send back the record
    and the report folder."""
    # this worker's own links (namespaces, or loopback where it has none: one submission at a time there)
    policy = replace(policy, links=links_for(policy.links))
    scratch = Path(tempfile.mkdtemp(prefix="wirelab-grade-cluster-"))
    one_at_a_time = _LOOPBACK if policy.links == "loopback" else contextlib.nullcontext()
    try:
        unpack(shipment, scratch / "class")
        reports = scratch / "reports" / name
        policy = replace(policy, hide=tuple(sorted({*policy.hide, str(scratch)})))
        job = pickle.dumps((name, str(scratch / "class" / source_name), catalogue, str(reports), capture, policy))
        out = scratch / "graded.pickle"
        child = subprocess.Popen([sys.executable, "-m", "wirelab.grade.spread", str(out)], stdin=subprocess.PIPE)
        with _LOCK:
            _CHILDREN.setdefault(token, []).append(child)
        try:
            with one_at_a_time:
                child.communicate(job)
        finally:
            with _LOCK:
                _CHILDREN.get(token, []).remove(child)
        if child.returncode != 0 or not out.is_file():
            raise RuntimeError(f"the grading process ended with status {child.returncode}")
        graded = pickle.loads(out.read_bytes())
        reports.mkdir(parents=True, exist_ok=True)
        return {"graded": graded, "reports": pack([reports], reports.parent)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _interrupt_here(token: str) -> int:
    """On a worker: Ctrl-C to its grading processes of ``token`` (each cleans up, then ends)."""
    with _LOCK:
        children = list(_CHILDREN.get(token, []))
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    return len(children)


def grade_across(submissions: list[tuple[str, Path]], catalogue: Catalogue, report_dir: str | Path, *,
                 cluster: str, capture: bool = True, progress: bool = True, policy: Policy = Policy(),
                 fresh: bool = False) -> list[Graded]:
    """Grade every (name, source) on the cluster's workers (see the module docstring); reports to
    ``report_dir/<name>/`` as on one machine, and what was graded there before with the same key is
    kept (``fresh``: nothing is). Returns the results, kept and new, in the order given."""
    # optional: distributed (the [cluster] extra)
    from distributed import as_completed

    report_dir = Path(report_dir)
    plan = resume(submissions, catalogue, policy, report_dir, fresh=fresh)
    if not plan.todo:                         # every submission kept: no worker is needed
        return plan.results()
    policy = confined(policy, submissions, report_dir)
    client = workers.connect(cluster)
    token = uuid.uuid4().hex[:12]
    try:
        why = client.run(_here_ready, policy.trust)
        ready = [address for address, reason in why.items() if reason is None]
        for address, reason in why.items():
            if reason is not None:
                print(f"wirelab grade: the worker at {address} does not grade: {reason}", file=sys.stderr)
        if not ready:
            raise UsageError(f"no worker of {cluster} can grade", "start the workers as root: sudo dask worker ...")
        futures = {client.submit(_grade_remote, name, Path(source).resolve().name, _shipment(source), catalogue,
                                 capture, policy, token, workers=ready, pure=False,
                                 key=f"wirelab-grade-{name}-{token}"): (name, source) for name, source in plan.todo}
        bar = progress_bar(len(futures), unit="submission", enabled=progress)
        try:
            for future in as_completed(futures, loop=client.loop):
                name, source = futures[future]
                try:
                    got = future.result()
                    unpack(got["reports"], report_dir)
                    plan.record(Graded.from_dict(got["graded"]))
                except Exception as err:      # noqa: BLE001 - one submission's disaster is not the class's
                    plan.record(lost_submission(name, source, catalogue, failure(err)), lost=True)
                bar.update()
        except KeyboardInterrupt:             # the grading processes clean up their testbeds and uids
            client.run(_interrupt_here, token, workers=ready)
            client.cancel(list(futures))
            keep_graded(plan)
            raise
        finally:
            bar.close()
        return plan.results()
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    """The grading process: ``(name, source, catalogue, report_dir, capture, policy)`` pickled on
    stdin; the ``Graded`` record, as a dict, pickled to the file named first."""
    argv = sys.argv[1:] if argv is None else argv
    _start_worker()
    graded = _grade_in_worker(*pickle.loads(sys.stdin.buffer.read()))
    Path(argv[0]).write_bytes(pickle.dumps(graded))
    return 0


if __name__ == "__main__":
    sys.exit(main())
