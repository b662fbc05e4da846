"""Where a grading runs, and so which tests it can run: the links this machine can build.

An instructor's machine (root, network namespaces) runs every test on a testbed of two
namespaces joined by the test's link. A course platform's container (Gradescope's, a
PrairieLearn grader's) usually runs as root but without the capabilities namespaces need
(Docker gives no CAP_SYS_ADMIN or CAP_NET_ADMIN unless run privileged): there the grader
puts both hosts on 127.0.0.1 (the loopback link, ``link.opened.LoopbackLink``) and runs the
tests whose link is clean. A test on a shaped link (rate, delay, loss, duplication,
reordering) needs the kernel's qdiscs or wirelab's userspace link between two namespaces: on
loopback it is ``skipped`` with that reason, never a silent zero (outcome.py).

    links_for("auto")            # 'namespaces' where they work here, else 'loopback'
    cannot_run(test, "loopback") # None, or why the test cannot run on that link
"""
from __future__ import annotations

from ..errors import BackendUnavailableError, UsageError
from ..link import capabilities
from .catalogue import GradeTest

__all__ = ["LINKS", "links_for", "cannot_run", "why_no_namespaces"]

#: the kinds of link a grading can put its tests on ("auto": the best this machine has)
LINKS = ("auto", "namespaces", "loopback")


def why_no_namespaces() -> str | None:
    """None where two-host testbeds can be built here, else the reason (the kernel's own words)."""
    caps = capabilities()
    if not caps.root:
        return caps.reasons["root"]
    if not (caps.netns and caps.veth):
        return f"network namespaces cannot be made here ({caps.reasons['netns'] if not caps.netns else caps.reasons['veth']})"
    return None


def links_for(requested: str = "auto") -> str:
    """The links a grading uses: ``namespaces`` or ``loopback`` (``auto``: namespaces where they work)."""
    if requested not in LINKS:
        raise UsageError(f"unknown --links {requested!r}", f"choose one of {', '.join(LINKS)}")
    if requested == "loopback":
        return requested
    why = why_no_namespaces()
    if why is None:
        return "namespaces"
    if requested == "namespaces":
        raise BackendUnavailableError(f"the graders' testbeds need network namespaces: {why}",
                                      "run as root on a machine (or a privileged container) that has them, "
                                      "or grade on loopback: --links loopback (tests on shaped links are skipped)")
    return "loopback"


def cannot_run(test: GradeTest, links: str) -> str | None:
    """Why ``test`` cannot run on ``links``, or None when it can."""
    if links == "namespaces" or test.role == "build" or not test.shaped:
        return None
    return (f"its link ({test.describe_link()}) needs two network namespaces joined by an emulated "
            "link, and this machine gives the grader none, so only tests on a clean link ran (on 127.0.0.1)")
