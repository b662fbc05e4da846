"""Build a Gradescope autograder: the zip its "Autograder Specifications" ask for.

    wirelab autograder bundle gradescope --tests hidden.toml --out autograder.zip

The zip holds, at its root (Gradescope extracts it to ``/autograder/source``):

* ``setup.sh``: run once when Gradescope builds the image: the grader's Debian/Ubuntu
  packages (``APT_PACKAGES``, a subset of the Makefile's), Python ≥ 3.11, and wirelab from
  ``wirelab/`` into ``/autograder/venv``;
* ``run_autograder``: run for every submission: ``wirelab autograder run`` (run.py);
* ``wirelab/``: this wirelab's source (``lib/wirelab``, ``pyproject.toml``, ``README.md``),
  so the grader that built the bundle is the one that grades;
* ``wirelab-autograder.toml``: the course's choices (its catalogue, hidden tests, ``--only``,
  links and sandbox), and ``tests/``: copies of the course's catalogue and test files.

Nothing in it is specific to a machine: the same zip grades with namespaces in a privileged
container and on loopback in Gradescope's usual one (run.py says which it found).
"""
from __future__ import annotations

import json
import shutil
import zipfile
from importlib import resources
from pathlib import Path

from ...errors import UsageError
from ..catalogue import load_catalogue

__all__ = ["build_bundle", "APT_PACKAGES", "CONFIG", "PLATFORMS"]

PLATFORMS = ("gradescope",)
CONFIG = "wirelab-autograder.toml"
#: what grading needs from the system (the Makefile's APT_PACKAGES hold them all; tests check it)
APT_PACKAGES = ("iproute2", "iptables", "ethtool", "util-linux", "procps", "bubblewrap", "make", "gcc", "libc6-dev",
                "python3", "python3-venv")
SANDBOX = ("auto", "always", "never")
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.nbi", "*.nbc")


def _package_root() -> Path:
    """The wirelab source tree this module runs from (lib/wirelab's parent's parent holds pyproject.toml)."""
    here = Path(__file__).resolve().parents[3]           # .../lib
    top = here.parent
    if not (top / "pyproject.toml").is_file():
        raise UsageError(f"wirelab's source tree is not at {top} (no pyproject.toml), so it cannot be bundled",
                         "run this from a clone of wirelab (pip install -e .)")
    return top


def _toml_list(items) -> str:
    return "[" + ", ".join(json.dumps(str(i)) for i in items) + "]"


def build_bundle(out: str | Path, *, platform: str = "gradescope", catalogue: str | Path | None = None,
                 tests: list | tuple = (), only: list[str] | None = None, links: str = "auto",
                 sandbox: str = "auto") -> Path:
    """Write the autograder zip to ``out``; the catalogue and test files are checked first (a mistake in
    them is a ``UsageError`` here, not at the first student's submission)."""
    if platform not in PLATFORMS:
        raise UsageError(f"no autograder for {platform!r}", f"choose one of {', '.join(PLATFORMS)}")
    if sandbox not in SANDBOX:
        raise UsageError(f"unknown --sandbox {sandbox!r}", f"choose one of {', '.join(SANDBOX)}")
    load_catalogue(catalogue, extra=list(tests)).select(only)          # fails now if anything is wrong
    top, out = _package_root(), Path(out)
    named = [Path(f) for f in [catalogue, *tests] if f]
    if len({f.name for f in named}) != len(named):
        raise UsageError("two test files share a name", "rename one: the bundle keeps them side by side in tests/")
    config = "\n".join([
        f"# written by `wirelab autograder bundle {platform}`: what run_autograder grades with",
        f"platform = {json.dumps(platform)}",
        f"catalogue = {json.dumps(Path(catalogue).name if catalogue else '')}   # empty: wirelab's own",
        f"tests = {_toml_list(Path(t).name for t in tests)}",
        f"only = {_toml_list(only or [])}",
        f"links = {json.dumps(links)}       # auto: namespaces where the container has them, else loopback",
        f"sandbox = {json.dumps(sandbox)}     # auto: bubblewrap where it runs, else the container is the sandbox",
        ""])
    scripts = resources.files(__package__)
    setup = scripts.joinpath("setup.sh").read_text().replace("@APT_PACKAGES@", " ".join(APT_PACKAGES))
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add(zf, "setup.sh", setup.encode(), executable=True)
        _add(zf, "run_autograder", scripts.joinpath("run_autograder").read_bytes(), executable=True)
        _add(zf, CONFIG, config.encode())
        for f in named:
            _add(zf, f"tests/{f.name}", f.read_bytes())
        for name in ("pyproject.toml", "README.md"):
            _add(zf, f"wirelab/{name}", (top / name).read_bytes())
        lib = top / "lib" / "wirelab"
        for path in sorted(lib.rglob("*")):
            if path.is_file() and not _SKIP(str(path.parent), [path.name]) and \
                    not any(part in ("__pycache__",) or part.endswith(".egg-info") for part in path.parts):
                _add(zf, f"wirelab/lib/wirelab/{path.relative_to(lib).as_posix()}", path.read_bytes(),
                     executable=bool(path.stat().st_mode & 0o111))
    return out


def _add(zf: zipfile.ZipFile, name: str, data: bytes, *, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))      # the same bytes for the same sources
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)
