"""Resume a grading as a sweep resumes: what was graded into the report folder before is kept, unless
something that decides its grade changed.

    plan = resume(submissions, catalogue, policy, "reports")    # plan.todo: what to grade now
    plan.record(grade_submission(...))                          # saved at once to reports/results.json
    plan.results()                                              # kept and new, in the order given

A submission's ``key`` names everything that decides its grade:

* ``source``: a digest of the submission as the grader lays it out (``handin.lay_out``): for a
  folder, every file's path, bytes and executable bit (a link's target), except what the grader
  never copies (``handin.IGNORED``: ``.git``, ``__pycache__``, ``*.pyc``, ``.ipynb_checkpoints``);
  for an archive its bytes; for a patch its bytes and its base folder's digest. The grader builds
  in a copy, never in the source folder, so its own build products never reach the digest; a
  program a student built and handed in (``ppcbc`` beside the Makefile) is laid out, may be run as
  it is, and so counts.
* ``catalogue``: a digest of the catalogue as loaded (every field of every test, hidden tests and
  the ``--public``/``--only`` choice included; the assignment's constants; the limits).
* ``kit``: the wirelab version.
* ``policy``: the sandbox (bubblewrap or ``--trust``) and the links (namespaces or loopback; on a
  cluster, what the workers were asked for).

A submission whose saved key equals its key now is kept; any other is graded again (``decide``
says why), and so is every one with ``fresh``. The store is ``results.json`` (``save_graded``),
written after every submission graded, so a Ctrl-C, or a kill, loses none; a file written before
keys were kept still loads and simply means a full regrading. A submission whose grading was lost
(its worker died) is saved without a key: it is graded again next time, as a sweep runs a lost run
again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from datetime import datetime, timezone
from fnmatch import fnmatch
from pathlib import Path

from .. import __version__
from ..errors import UsageError
from .catalogue import Catalogue
from .handin import IGNORED, kind_of, patch_base
from .jail import Policy
from .outcome import Graded, load_graded, save_graded

__all__ = ["Resume", "resume", "key_of", "decide", "source_digest", "catalogue_digest"]

#: The parts of a key, in the words the summary uses.
PARTS = {"source": "source", "catalogue": "catalogue", "kit": "kit", "policy": "policy"}


def _ignored(name: str) -> bool:
    return any(fnmatch(name, pattern) for pattern in IGNORED)


def _folder_digest(folder: Path, digest) -> None:
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(_ignored(part) for part in relative.parts):
            continue
        if path.is_symlink():
            digest.update(f"link {relative} {path.readlink()}\n".encode())
        elif path.is_file():
            executable = "x" if path.stat().st_mode & 0o111 else "-"
            digest.update(f"file {relative} {executable} {path.stat().st_size}\n".encode())
            digest.update(path.read_bytes())
        elif path.is_dir():
            digest.update(f"dir {relative}\n".encode())


def source_digest(source: str | Path) -> str:
    """The submission at ``source`` as the grader lays it out (see the module docstring), as a sha256."""
    source = Path(source)
    digest = hashlib.sha256()
    try:
        kind = kind_of(source)
        digest.update(f"{kind}\n".encode())
        if kind == "folder":
            _folder_digest(source, digest)
        elif kind is not None:
            digest.update(source.read_bytes())
            if kind == "patch":
                try:
                    _folder_digest(patch_base(source), digest)
                except UsageError as err:          # no base: grading says so; the patch alone keys it
                    digest.update(f"no base: {err}".encode())
    except OSError as err:                         # unreadable: grading will say so too
        return f"unreadable: {err}"
    return digest.hexdigest()


def catalogue_digest(catalogue: Catalogue) -> str:
    """Every field of the catalogue as loaded, as a sha256."""
    text = json.dumps(dataclasses.asdict(catalogue), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def key_of(source: str | Path, catalogue: Catalogue, policy: Policy, *, catalogue_key: str | None = None) -> dict:
    """What decides the grade of the submission at ``source``."""
    return {"source": source_digest(source), "catalogue": catalogue_key or catalogue_digest(catalogue),
            "kit": f"wirelab {__version__}",
            "policy": f"{'trust' if policy.trust else 'bubblewrap'}, links {policy.links}"}


def decide(earlier: Graded | None, key: dict, *, fresh: bool = False) -> str | None:
    """None when ``earlier`` may be kept for a submission whose key is now ``key``; else why not."""
    if fresh:
        return "--fresh"
    if earlier is None:
        return "not graded before"
    if not earlier.key:
        return "no key saved (an older wirelab's results.json, or a grading that was lost)"
    changed = [PARTS[part] for part in PARTS if earlier.key.get(part) != key[part]]
    if not changed:
        return None
    words = " and ".join([", ".join(changed[:-1]), changed[-1]] if len(changed) > 1 else changed)
    if changed == ["kit"]:
        return f"kit changed ({earlier.key.get('kit')} → {key['kit']})"
    if changed == ["policy"]:
        return f"policy changed ({earlier.key.get('policy')} → {key['policy']})"
    return f"{words} changed"


def _some(names: list[str], shown: int = 6) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _earlier(path: Path) -> dict[str, Graded]:
    if not path.is_file():
        return {}
    try:
        return {g.name: g for g in load_graded(path)}
    except (ValueError, KeyError, TypeError) as err:      # damaged: graded again, and said
        print(f"wirelab grade: {path} cannot be read ({err}); grading every submission again", file=sys.stderr)
        return {}


class Resume:
    """One grading into one report folder: what is kept, what to grade, and the store."""

    def __init__(self, submissions: list[tuple[str, Path]], report_dir: Path, keys: dict[str, dict],
                 earlier: dict[str, Graded], fresh: bool):
        self.report_dir = Path(report_dir)
        self.path = self.report_dir / "results.json"
        self.names = [name for name, _ in submissions]
        self.keys = keys
        self.earlier = earlier
        self.why = {name: decide(earlier.get(name), keys[name], fresh=fresh) for name in self.names}
        self.kept = {name: earlier[name] for name in self.names if self.why[name] is None}
        self.todo = [(name, source) for name, source in submissions if self.why[name] is not None]
        self.new: dict[str, Graded] = {}

    def record(self, graded: Graded, *, lost: bool = False) -> Graded:
        """A submission graded now: keyed (unless its grading was ``lost``), timed, saved at once."""
        graded.key = {} if lost else self.keys[graded.name]
        graded.graded_at = datetime.now(timezone.utc).isoformat()
        self.new[graded.name] = graded
        self._prune(graded)
        self.save()
        return graded

    def _prune(self, graded: Graded) -> None:
        """A grading's captures are its own: an earlier grading's that it did not make again go."""
        folder = self.report_dir / graded.name / "captures"
        if not folder.is_dir():
            return
        own = {(self.report_dir / graded.name / t.capture).resolve() for t in graded.tests if t.capture}
        for path in folder.iterdir():
            if path.is_file() and path.resolve() not in own:
                path.unlink(missing_ok=True)

    def results(self) -> list[Graded]:
        """Every submission kept or graded now, in the order given."""
        return [self.new.get(name) or self.kept[name] for name in self.names if name in self.new or name in self.kept]

    def save(self) -> Path:
        """results.json: the submissions kept and graded now, and, until each is graded again, the earlier
        record of the others (its key says it is out of date: nothing graded is lost)."""
        records = [self.new.get(name) or self.kept.get(name) or self.earlier.get(name) for name in self.names]
        self.report_dir.mkdir(parents=True, exist_ok=True)
        return save_graded([g for g in records if g is not None], self.path)

    def summary(self) -> str | None:
        """What was kept and why the others are graded again (None when nothing was graded before)."""
        if not self.earlier:
            return None
        regraded = [name for name, _ in self.todo]
        if regraded and all(self.why[name] == "--fresh" for name in self.names):
            return f"--fresh: grading all {len(regraded)} again"
        if regraded and all(not g.key for g in self.earlier.values()) and not self.kept:
            return (f"{self.path} holds no keys (written by an older wirelab): grading all "
                    f"{len(regraded)} again")
        by_reason: dict[str, list[str]] = {}
        for name in regraded:
            by_reason.setdefault(self.why[name], []).append(name)
        reasons = "; ".join(f"{why} ({_some(names)})" for why, names in by_reason.items())
        if not self.kept:
            return f"grading all {len(regraded)} again: {reasons}"
        kept = f"kept {len(self.kept)} graded before (same source, catalogue, kit and policy)"
        return f"{kept}; grading {len(regraded)}: {reasons}" if regraded else kept


def resume(submissions: list[tuple[str, Path]], catalogue: Catalogue, policy: Policy, report_dir: str | Path, *,
           fresh: bool = False, students: dict | None = None) -> Resume:
    """Decide, for each (name, source), whether its earlier grading in ``report_dir`` is kept; says so on
    stderr when something was graded there before. ``students``: a submission's student id where it is not
    its name (own_link.py): the links its tests meet, so part of its catalogue's key."""
    report_dir = Path(report_dir)
    catalogue_key = catalogue_digest(catalogue)

    def links_of(name: str) -> str:
        student = (students or {}).get(name, name)
        return catalogue_key if student == name else f"{catalogue_key}, links of {student!r}"
    keys = {name: key_of(source, catalogue, policy, catalogue_key=links_of(name)) for name, source in submissions}
    plan = Resume(submissions, report_dir, keys, _earlier(report_dir / "results.json"), fresh)
    said = plan.summary()
    if said:
        print(f"wirelab grade: {said}", file=sys.stderr)
    return plan
