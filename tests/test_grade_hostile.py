"""A hostile class: each submission a correct program (the example class's correct-python) behind a wrapper
that misbehaves first. Every escape must hold: nothing of the grading left on the machine, no host socket
reached, nothing of another submission or of the hidden tests in any report; the correct one scores 100 %.
A trusted (unsandboxed) run of the snooping ones shows that the probes do reach what they look for."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from wirelab.grade import cgroups
from wirelab.grade.catalogue import load_catalogue
from wirelab.grade.classroom import grade_class
from wirelab.grade.jail import Policy
from wirelab.grade.submission import find_submissions

pytestmark = [pytest.mark.root]

TAG = f"wlhx{os.getpid()}"                 # in the name of everything a hostile program leaves or makes
OTHER = f"other-submission-secret-{os.getpid()}"
HIDDEN = f"hidden-test-secret-{os.getpid()}"
TESTS = ["server-udp-1B", "client-udpr-1B"]

#: What each hostile submission does before it runs the correct program (exit 0) or gives up (exit 1).
MISBEHAVIOURS = {
    "litters": """
for where in ("/tmp", "/var/tmp", "/dev/shm"):
    with open(f"{where}/{TAG}-litter", "wb") as f:
        f.write(b"x" * 1_000_000)
os.makedirs(f"/tmp/{TAG}-dir/deeper", exist_ok=True)
open(f"/tmp/{TAG}-dir/deeper/file", "w").write("left")
""",
    "fills-disk": """
i = 0
try:
    while True:                       # files each under the file-size limit, until the disk is full
        with open(f"/tmp/{TAG}-fill-{i}", "wb") as f:
            f.write(b"x" * 20_000_000)
        i += 1
except OSError as err:
    print(f"after {i} files: {err}", file=sys.stderr)
sys.exit(1)
""",
    "sockets": """
import socket
for family, address in ((socket.AF_UNIX, f"/tmp/{TAG}.sock"), (socket.AF_UNIX, "\\0" + TAG),
                        (socket.AF_INET, ("127.0.0.1", TCP_PORT))):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(address)
        s.sendall(b"escaped")
        print(f"reached {address!r}", file=sys.stderr)
    except OSError as err:
        print(f"{address!r}: {err}", file=sys.stderr)
""",
    "snoops": """
for what in (lambda: os.listdir(CLASS), lambda: open(HIDDEN_FILE).read(), lambda: open(OTHER_FILE).read()):
    try:
        print(str(what())[:80], file=sys.stderr)      # short: the report keeps the last 300 characters
    except OSError as err:
        print(repr(err), file=sys.stderr)
sys.exit(1)
""",
    "forks": """
made = 0
for _ in range(300):                  # daemons that leave their session, as many as the limits allow
    try:
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("python3", ["python3", "-c", "import time; time.sleep(600)", TAG])
            os._exit(0)
        made += 1
    except OSError:
        break
print(f"{made} daemons", file=sys.stderr)
sys.exit(1)
""",
    "hog": """
hog = bytearray(b"x") * 3_000_000_000   # 3 GB, every page touched
""",
}
WRAPPER = {
    "hog": '#!/bin/sh\nexec python3 "$(dirname "$0")/misbehave.py"\n',      # the hog is the program itself
    "killer": '#!/bin/sh\nkill -9 -1\nexec "$(dirname "$0")/{program}-real" "$@"\n',
}
DEFAULT_WRAPPER = '#!/bin/sh\npython3 "$(dirname "$0")/misbehave.py" || exit 1\nexec "$(dirname "$0")/{program}-real" "$@"\n'


def _lay_out(root: Path, correct: Path, tcp_port: int) -> tuple[Path, Path]:
    """The class folder (world-readable, as a course's would be) and the hidden tests file."""
    classes = root / "class"
    shutil.copytree(correct, classes / "correct")
    (classes / "correct" / "notes.txt").write_text(OTHER)
    hidden = root / "hidden.toml"
    hidden.write_text(f'# {HIDDEN}\n[limits]\ndisk = "64MB"\n\n[[test]]\nid = "{HIDDEN}"\nrole = "server"\n'
                      'proto = "udp"\nsize = "1B"\npoints = 1\ndeadline_s = 10\npublic = false\n'
                      'checks = "an instructor\'s own test"\n')
    constants = (f"import os, sys\nTAG = {TAG!r}\nTCP_PORT = {tcp_port}\nCLASS = {str(classes)!r}\n"
                 f"OTHER_FILE = {str(classes / 'correct' / 'notes.txt')!r}\nHIDDEN_FILE = {str(hidden)!r}\n")
    for name in [*MISBEHAVIOURS, "killer"]:
        folder = classes / name
        shutil.copytree(correct, folder)
        (folder / "misbehave.py").write_text(constants + MISBEHAVIOURS.get(name, ""))
        for program in ("ppcbc", "ppcbs"):
            (folder / program).rename(folder / f"{program}-real")
            (folder / program).write_text(WRAPPER.get(name, DEFAULT_WRAPPER).replace("{program}", program))
            (folder / program).chmod(0o755)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    return classes, hidden


class HostSockets:
    """A pathname unix socket in the host's /tmp (0777), an abstract one and TCP on 127.0.0.1, all listening;
    ``reached()`` lists those that a connection reached (pending connections wait in the backlog)."""

    def __init__(self):
        self.path = f"/tmp/{TAG}.sock"
        self.listeners = {}
        for name, family, address in (("pathname", socket.AF_UNIX, self.path), ("abstract", socket.AF_UNIX, "\0" + TAG),
                                      ("tcp", socket.AF_INET, ("127.0.0.1", 0))):
            s = socket.socket(family, socket.SOCK_STREAM)
            s.bind(address)
            s.listen(64)
            s.setblocking(False)
            self.listeners[name] = s
        os.chmod(self.path, 0o777)
        self.tcp_port = self.listeners["tcp"].getsockname()[1]

    def reached(self) -> list[str]:
        found = []
        for name, s in self.listeners.items():
            try:
                s.accept()[0].close()
                found.append(name)
            except BlockingIOError:
                pass
        return found

    def close(self):
        for s in self.listeners.values():
            s.close()
        os.unlink(self.path)


@pytest.fixture
def hostile(project_root):
    root = Path(tempfile.mkdtemp(prefix="wl-hostile-class-"))
    sockets = HostSockets()
    try:
        classes, hidden = _lay_out(root, project_root / "data" / "example-class" / "correct-python",
                                   sockets.tcp_port)
        yield root, classes, hidden, sockets
    finally:
        sockets.close()
        shutil.rmtree(root, ignore_errors=True)


def _left_on_the_machine() -> list[str]:
    """Files and processes a hostile program made, looked for without the grader's own sweep."""
    files = [str(p) for where in ("/tmp", "/var/tmp", "/dev/shm") for p in Path(where).glob(f"{TAG}*")
             if not p.name.endswith(".sock")]
    processes = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and TAG.encode() in (entry / "cmdline").read_bytes():
                processes.append(entry.name)
        except OSError:
            continue
    return files + processes


def _report_text(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*")
                     if p.is_file() and p.suffix in (".json", ".html", ".csv"))


def test_a_hostile_class_is_held_and_the_correct_submission_beside_it_scores_100(hostile):
    root, classes, hidden, sockets = hostile
    out = root / "reports"
    done = subprocess.run([sys.executable, "-m", "wirelab", "grade", "--class", str(classes), "--jobs", "2",
                           "--tests", str(hidden), "--only", ",".join(TESTS), "--out", str(out), "--json"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:]
    summary = {s["name"]: s for s in json.loads(done.stdout)["submissions"]}
    reasons = {name: " | ".join(t["reason"] for t in s["tests"]) for name, s in summary.items()}
    for name in ("correct", "litters", "sockets", "killer"):       # misbehaved in private, then worked
        assert summary[name]["score"] == 100.0, (name, reasons[name])
    for name in ("fills-disk", "snoops", "forks", "hog"):
        assert summary[name]["score"] == 0.0, (name, reasons[name])
    assert "filled its disk (64 MB for its folder" in reasons["fills-disk"] and "No space left" in reasons["fills-disk"]
    assert "No such file or directory" in reasons["snoops"]        # it looked, and there was nothing to see
    if cgroups.detect()[0] is not None:
        # the client test waits for ppcbc's end: the cgroup's kill; the server test waits 3 s for a
        # listener, which a hog at nice 19 on a loaded machine may not outlast before its kill
        hogged = {t["id"]: t["reason"] for t in summary["hog"]["tests"]}
        assert "killed by SIGKILL (out of memory" in hogged["client-udpr-1B"], reasons["hog"]
        assert "killed by SIGKILL (out of memory" in hogged["server-udp-1B"] or \
            "was not listening" in hogged["server-udp-1B"], reasons["hog"]
    assert sockets.reached() == []
    assert _left_on_the_machine() == []
    assert "left behind: nothing" in done.stderr, done.stderr[-2000:]
    everything = _report_text(out) + done.stdout + done.stderr
    assert OTHER not in everything and HIDDEN not in everything
    assert "bubblewrap" in json.loads((out / "correct" / "report.json").read_text())["confinement"]


def test_unsandboxed_the_same_probes_reach_the_socket_and_the_secrets(hostile, tmp_path):
    """The control: with --trust the wrappers above do read and connect, so the held escapes were real tries."""
    root, classes, hidden, sockets = hostile
    cat = load_catalogue().select(["server-udp-1B"])
    subs = [s for s in find_submissions(class_dir=classes) if s[0] in ("snoops", "sockets")]
    graded = {g.name: g for g in grade_class(subs, cat, tmp_path, jobs=1, progress=False, policy=Policy(trust=True))}
    assert OTHER in graded["snoops"].tests[0].reason and HIDDEN in graded["snoops"].tests[0].reason
    assert graded["sockets"].score == 100.0
    assert sockets.reached() == ["pathname"]      # abstract and 127.0.0.1 belong to the testbed's netns anyway


def test_unsandboxed_litter_is_found_and_removed_by_the_sweep_after_the_grading(hostile):
    """With --trust nothing stops the files: the sweep after the grading finds them, removes them, says so."""
    root, classes, hidden, sockets = hostile
    done = subprocess.run([sys.executable, "-m", "wirelab", "grade", str(classes / "litters"), "--trust",
                           "--only", "server-udp-1B", "--out", str(root / "trusted"), "--no-progress"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "each program: no sandbox (--trust)" in done.stdout
    swept = next(line for line in done.stdout.splitlines() if line.startswith("left behind"))
    assert swept.startswith("left behind and removed now")
    for where in ("/tmp", "/var/tmp", "/dev/shm"):
        assert f"{where}/{TAG}-litter" in swept
    assert f"/tmp/{TAG}-dir" in swept and "NOT removed" not in swept
    assert _left_on_the_machine() == []
