"""Run a command as a course platform's container runs its grader: root, but without the
capabilities Docker withholds from an unprivileged container (CAP_SYS_ADMIN: no mounts, no
namespaces, so no bubblewrap; CAP_NET_ADMIN: no qdiscs), in a network namespace of its own
holding only a loopback interface (so its servers' fixed ports meet nobody else's).

    unshare --net -- python tests/container.py -- CMD ARGS...

``unshare --net`` (run first, with every capability) gives the namespace; this script brings
its ``lo`` up, then execs the command through ``setpriv`` with those capabilities dropped from
the bounding set, so neither the command nor anything it starts can take them back.
"""
from __future__ import annotations

import os
import subprocess
import sys

#: what Docker's default set lacks that a grader would use
WITHHELD = ("sys_admin", "net_admin")


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if os.geteuid() != 0 or not command:
        print("run as root, inside `unshare --net`, with a command after --", file=sys.stderr)
        return 2
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=30)
    os.execvp("setpriv", ["setpriv", "--bounding-set=" + ",".join(f"-{c}" for c in WITHHELD), "--", *command])
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
