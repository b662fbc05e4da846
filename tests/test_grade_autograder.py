"""The Gradescope autograder (grade/autograder/): the zip has what Gradescope's specification asks
at its root; unpacked into a folder shaped like /autograder (under tmp: run_autograder reads
WIRELAB_AUTOGRADER_ROOT, nothing is written to the real /autograder), it grades the submission
placed there and writes a results.json the validator written from Gradescope's documentation
accepts: as root with namespaces (every test), as root in a container without them
(tests/container.py: shaped tests skipped with the reason), and as an unprivileged user (nothing
of the submission runs, every test says why). Times: the zip checks under 2 s, the package
install about 15 s, each run 5 to 25 s."""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from platform_schemas import gradescope_problems
from wirelab.errors import UsageError
from wirelab.grade.autograder import APT_PACKAGES, CONFIG, build_bundle
from wirelab.grade.handin import lay_out

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLASS = ROOT / "data" / "example-class"
SLICE = ["build-*", "client-udpr-1B", "server-udpr-1B", "server-udpr-out-of-order", "client-udpr-100KB-10mbit-10ms",
         "hidden-pair-udpr-50KB-loss10-delay"]
SHAPED = {"client-udpr-100KB-10mbit-10ms", "hidden-pair-udpr-50KB-loss10-delay"}
NOBODY = 65534


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return build_bundle(tmp_path_factory.mktemp("bundle") / "autograder.zip", tests=[CLASS / "hidden.toml"],
                        only=SLICE)


def autograder_folder(bundle: Path, where: Path, submission) -> Path:
    """An /autograder as Gradescope lays it out: source/ (the zip), run_autograder, submission/, results/."""
    root = where / "autograder"
    (root / "submission").mkdir(parents=True)
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():                            # zipfile keeps no modes: as Gradescope does
            os.chmod(root / "source" / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    submission(root / "submission")
    return root


def run(root: Path, prefix: list[str] = (), timeout: float = 300) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "WIRELAB_AUTOGRADER_ROOT": str(root), "WIRELAB_AUTOGRADER_PYTHON": sys.executable}
    done = subprocess.run([*prefix, str(root / "run_autograder")], capture_output=True, text=True,
                          timeout=timeout, env=env)
    results = root / "results" / "results.json"
    assert results.exists(), done.stderr[-3000:]
    return done, json.loads(results.read_text())


def test_the_zip_has_setup_sh_and_run_autograder_at_its_root_and_the_course_tests(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in zf.infolist()}
        setup = zf.read("setup.sh").decode()
        config = zf.read(CONFIG).decode()
    assert {"setup.sh", "run_autograder", CONFIG, "tests/hidden.toml", "wirelab/pyproject.toml",
            "wirelab/lib/wirelab/grade/catalogue.toml"} <= names
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    for script in ("setup.sh", "run_autograder"):
        with zipfile.ZipFile(bundle) as zf:
            assert subprocess.run(["bash", "-n", "/dev/stdin"], input=zf.read(script), capture_output=True).returncode == 0
    assert " ".join(APT_PACKAGES) in setup and "@" not in setup
    makefile = re.search(r"^APT_PACKAGES := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    assert set(APT_PACKAGES) - {"python3", "python3-venv"} <= set(makefile)      # the project's own set-up
    import tomllib
    assert tomllib.loads(config)["only"] == SLICE and tomllib.loads(config)["tests"] == ["hidden.toml"]


def test_a_mistake_in_the_course_tests_is_refused_when_bundling_not_at_the_first_submission(tmp_path):
    broken = tmp_path / "hidden.toml"
    broken.write_text('[[test]]\nid = "x"\nrole = "client"\n')
    with pytest.raises(UsageError, match="missing"):
        build_bundle(tmp_path / "a.zip", tests=[broken])
    assert not (tmp_path / "a.zip").exists()


def test_the_bundled_wirelab_installs_as_a_package_with_its_data(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(tmp_path / "source")
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--target", str(target), str(tmp_path / "source" / "wirelab")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for data in ("grade/catalogue.toml", "grade/autograder/run_autograder", "grade/autograder/setup.sh"):
        assert (target / "wirelab" / data).is_file(), data


def _archive(folder: Path):
    """The assignment's hand-in: one .tgz of the folder."""
    def put(dest: Path) -> None:
        with tarfile.open(dest / "ppcb.tgz", "w:gz") as tar:
            tar.add(folder, arcname=".")
    return put


@pytest.mark.root
@pytest.mark.slow
def test_as_root_with_namespaces_every_test_runs_and_the_results_are_valid(bundle, tmp_path):
    root = autograder_folder(bundle, tmp_path, _archive(CLASS / "correct-python"))
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "s@x.org", "id": 1, "sid": "s7654321"}]}))
    done, results = run(root)
    assert gradescope_problems(results) == [], results
    tests = {t["name"]: t for t in results["tests"]}
    assert set(tests) == {"build-no-warnings", "build-protconst", *SLICE[1:]}
    assert tests["client-udpr-100KB-10mbit-10ms"]["extra_data"]["link"].endswith("(drawn for s7654321)")   # own link
    assert all(t["status"] == "passed" for t in tests.values()), done.stdout
    assert results["score"] == sum(t["max_score"] for t in tests.values())
    assert tests["hidden-pair-udpr-50KB-loss10-delay"]["visibility"] == "after_due_date"
    assert tests["client-udpr-1B"]["visibility"] == "visible"
    assert any(e["name"] == "udpr goodput ÷ model" for e in results["leaderboard"])
    assert oct((root / "source").stat().st_mode & 0o777) == "0o700"        # the hidden tests: root's alone


@pytest.mark.root
@pytest.mark.slow
def test_in_a_container_without_namespaces_the_shaped_tests_say_why_and_the_rest_run(bundle, tmp_path):
    root = autograder_folder(bundle, tmp_path, lambda dest: (dest.rmdir(), lay_out(CLASS / "accepts-out-of-order.diff",
                                                                                   dest)))
    done, results = run(root, prefix=["unshare", "--net", "--", sys.executable, str(HERE / "container.py"), "--"])
    assert gradescope_problems(results) == [], results
    tests = {t["name"]: t for t in results["tests"]}
    for name in SHAPED:
        assert "score" not in tests[name] and "status" not in tests[name]
        assert "needs two network namespaces" in tests[name]["output"]
    ran = {n: t for n, t in tests.items() if n not in SHAPED}
    assert {n for n, t in ran.items() if t["status"] == "failed"} == {"server-udpr-out-of-order"}   # its bug
    assert "expected RJT for packet 2" in tests["server-udpr-out-of-order"]["output"]
    earned, possible = sum(t["score"] for t in ran.values()), sum(t["max_score"] for t in ran.values())
    total = possible + 1 + 2                                  # the two skipped tests' points
    assert results["score"] == pytest.approx(earned / possible * total, abs=1e-3)
    assert "the container is the sandbox" in results["output"] and "links on 127.0.0.1" in results["output"]


@pytest.mark.root
@pytest.mark.slow
def test_as_an_unprivileged_user_nothing_of_the_submission_runs_and_every_test_says_why(bundle, tmp_path):
    root = autograder_folder(bundle, tmp_path, lambda dest: shutil.copytree(CLASS / "correct-c", dest,
                                                                            dirs_exist_ok=True))
    for path in [root, *root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    expose = [sys.prefix, sys.base_prefix, str(root)]
    done, results = run(root, prefix=["unshare", "--mount", "--propagation", "private", "--", sys.executable,
                                      str(HERE / "unprivileged.py"), *[f"--expose={p}" for p in expose], "--"])
    assert gradescope_problems(results) == [], results
    assert all("score" not in t and f"ran as uid {NOBODY}, not root" in t["output"] for t in results["tests"])
    assert results["score"] == 0 and "could not run on this machine" in results["output"]
    assert not (root / "submission" / "ppcbc").exists()        # nothing was built: make never ran


def test_a_folder_without_the_bundle_still_gets_a_results_file_that_says_why(tmp_path):
    (tmp_path / "submission").mkdir()
    done = subprocess.run([sys.executable, "-m", "wirelab", "autograder", "run", "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "wirelab-autograder.toml" in done.stderr
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert gradescope_problems(results) == [] and "could not start (no test ran)" in results["output"]
