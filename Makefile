# wirelab: `make demo` to see it, `make test` to check it, `make lab` to use it.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
FLAGSHIP ?= notebooks/05-predicted-vs-measured.ipynb
# Debian packages for the real tools: tshark+dumpcap, iperf3, and what the link layer drives;
# wirelab grade runs submissions in bubblewrap (bwrap) with setpriv/prlimit/kill and builds C ones with
# make+gcc (libasan8: submissions built with -fsanitize=address);
# chromium for the browser test (Playwright drives it; its own browser download is not used).
APT_PACKAGES := tshark iperf3 iproute2 iptables ethtool util-linux procps bubblewrap make gcc libc6-dev libasan8 chromium
TOOLS := tshark dumpcap iperf3 ip tc iptables ethtool setpriv prlimit unshare kill bwrap make gcc chromium

.PHONY: setup venv tools demo test lab bench clean

setup: venv tools

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "wirelab needs Python 3.11: install python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,cluster]'
	$(PY) -m wirelab.capture.reader.jit    # compile the capture reader's kernels once (numba caches them)
	@touch $@

# Installs the real tools with apt-get when root and missing; otherwise says how.
tools:
	@missing=""; for t in $(TOOLS); do \
	  PATH="$$PATH:/usr/sbin:/sbin" command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -z "$$missing" ]; then echo "tools present: $(TOOLS)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing$$missing with apt-get"; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PACKAGES) >/dev/null; \
	else echo "missing:$$missing -- run: sudo apt-get install -y $(APT_PACKAGES)"; fi

demo: setup
	$(VENV)/bin/wirelab report $(FLAGSHIP) --out reports

test: setup
	$(PY) -m pytest

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

bench: setup
	@for b in bench/bench_*.py; do [ -e "$$b" ] || continue; echo "== $$b"; $(PY) "$$b" || exit 1; done

clean:
	rm -rf $(VENV) reports .pytest_cache
