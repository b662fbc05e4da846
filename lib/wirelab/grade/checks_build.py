"""Tests read from the build, with no testbed: the compiler's warnings and ``protconst.h``.

The assignment asks for programs that compile "without warnings" and for
MAX_WAIT and MAX_RETRANSMITS in a ``protconst.h`` holding nothing else, so
that the grader can set them. Each check takes the prepared ``Submission``
and returns (status, reason); the catalogue gives them points like any test
(``role = "build"``, ``scenario`` one of ``BUILD_CHECKS``).
"""
from __future__ import annotations

__all__ = ["BUILD_CHECKS"]


def no_warnings(sub) -> tuple[str, str]:
    if not sub.built:
        return "pass", "nothing was compiled (no Makefile), so no compiler warning"
    if sub.warnings:
        more = f" (and {len(sub.warnings) - 1} more)" if len(sub.warnings) > 1 else ""
        return "fail", f"make printed {len(sub.warnings)} compiler warning(s); the assignment asks for none: " \
                       f"{sub.warnings[0][:200]}{more}"
    return "pass", "make printed no compiler warning"


def protconst(sub) -> tuple[str, str]:
    constants = sub.constants
    if constants is None:
        return "error", "the submission was not laid out"
    return ("pass" if constants.settable else "fail"), constants.note


BUILD_CHECKS = {"no_warnings": no_warnings, "protconst": protconst}
