#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (wirelab autograder bundle).
# It installs what grading needs and wirelab itself, from the copy inside this bundle, into a venv.
set -euo pipefail
ROOT="${WIRELAB_AUTOGRADER_ROOT:-/autograder}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# the grader's tools: ip/tc (iproute2), iptables, ethtool, setpriv/prlimit/unshare (util-linux), kill (procps),
# bwrap (bubblewrap), and make + gcc for submissions in C
apt-get install -y -qq --no-install-recommends @APT_PACKAGES@
# wirelab needs Python 3.11 or newer (Ubuntu 22.04's python3 is 3.10: its python3.11 package then)
PYTHON=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv
    PYTHON=python3.11
fi
"$PYTHON" -m venv "$ROOT/venv"
"$ROOT/venv/bin/python" -m pip install --quiet --upgrade pip
"$ROOT/venv/bin/python" -m pip install --quiet "$ROOT/source/wirelab"
