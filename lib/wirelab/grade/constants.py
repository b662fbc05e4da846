"""MAX_WAIT and MAX_RETRANSMITS as a submission will really use them, set by the grader where it can.

The assignment asks for both constants in ``protconst.h``, "with no other
definitions or declarations", so that whoever grades can set them. Before
``make``, ``settle`` looks at every ``protconst.h`` of the submission:

* it holds the two declarations and nothing else (include guards, includes,
  comments and blank lines are fine): the catalogue's values are written
  into it, each in the student's own form (``#define`` or ``const``, whole
  number or not). A whole-number MAX_WAIT gets the catalogue's value rounded
  up to whole seconds: writing 0.5 where a program stores seconds in an
  integer (``tv_sec = MAX_WAIT``) would give it 0, a wait without end;
* it holds other definitions too: it is left as it is (rewriting it would
  change the program) and the values it declares are read from it.

Without a usable ``protconst.h`` the grader learns the values another way
and says which: the program reads ``PPCB_MAX_WAIT`` (the catalogue's values
reach it through the environment), or its sources define ``MAX_WAIT`` as a
number. The tests then expect those values, and their deadlines stretch to
them. Failing all three, the tests expect the catalogue's values and the
report says the grader could not learn the program's.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .catalogue import Assignment, GradeTest

__all__ = ["Constants", "settle", "parse_protconst", "rewrite_protconst", "stretch", "ENV_NAME"]

HEADER = "protconst.h"
ENV_NAME = "PPCB_MAX_WAIT"
NAMES = ("MAX_WAIT", "MAX_RETRANSMITS")
SOURCES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".py", ".rs", ".go", ".java")
_LITERAL = r"[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?[uUlLfF]*"
_TAIL = r"\s*(?://.*|/\*.*\*/)?\s*$"
_DEFINE = re.compile(rf"^\s*#\s*define\s+(?P<name>MAX_WAIT|MAX_RETRANSMITS)\s+\(?\s*(?P<num>{_LITERAL})\s*\)?{_TAIL}")
_CONST = re.compile(rf"^\s*(?P<type>(?:static\s+|inline\s+)*const(?:expr)?\s[^=;{{]*?)\b"
                    rf"(?P<name>MAX_WAIT|MAX_RETRANSMITS)\s*[={{]\s*\(?\s*(?P<num>{_LITERAL})\s*\)?\s*}}?\s*;{_TAIL}")
_HARMLESS = re.compile(r"^\s*(?:$|//|/\*|\*|#\s*(?:ifndef|endif|pragma\s+once|include)\b"
                       r"|#\s*define\s+\w+\s*(?://.*)?$)")
#: Anywhere in a program's sources: MAX_WAIT (or MAX_RETRANSMITS) given a number.
_ANY = re.compile(rf"\b(?P<name>MAX_WAIT|MAX_RETRANSMITS)\b\s*(?::\s*[\w:<>]+\s*)?(?:=|\{{|\s)\s*\(?\s*(?P<num>{_LITERAL})")


@dataclass(frozen=True)
class Constants:
    """The values a submission's programs use, how the grader knows them, and what the report says."""
    max_wait_s: float
    max_retransmits: int
    how: str                 # written | environment | read | sources | measured | assumed
    note: str
    settable: bool = True    # False: the grader could not set them, as the assignment intends it can

    def applied(self, assignment: Assignment) -> Assignment:
        return replace(assignment, max_wait_s=self.max_wait_s, max_retransmits=self.max_retransmits)

    def to_dict(self) -> dict:
        return dict(vars(self))


@dataclass
class Declaration:
    name: str
    value: float
    whole: bool              # stored as a whole number (an integer literal and no floating type)
    line: int
    span: tuple[int, int]    # where the number is in its line


def parse_protconst(text: str) -> tuple[dict[str, Declaration], list[str]]:
    """The declarations of MAX_WAIT/MAX_RETRANSMITS in a header, and every other line that defines
    or declares something (none in a header as the assignment asks for)."""
    found, other = {}, []
    in_comment = False
    for number, line in enumerate(text.splitlines()):
        if in_comment:
            in_comment = "*/" not in line
            continue
        match = _DEFINE.match(line) or _CONST.match(line)
        if match:
            literal = match.group("num")
            whole = not re.search(r"[.eE]|[fF]$", literal) and not re.search(r"\b(?:double|float)\b",
                                                                             match.groupdict().get("type") or "")
            value = float(literal.rstrip("uUlLfF"))
            found[match.group("name")] = Declaration(match.group("name"), value, whole, number,
                                                     (match.start("num"), match.end("num")))
        elif line.strip().startswith("/*") and "*/" not in line:
            in_comment = True
        elif not _HARMLESS.match(line):
            other.append(line.strip())
    return found, other


def _format(value: float, whole: bool) -> str:
    return str(int(value)) if whole else repr(float(value))


def rewrite_protconst(text: str, assignment: Assignment) -> tuple[str, float, int]:
    """``text`` with the catalogue's values in place of the student's; (text, max_wait, retransmits)
    as they now stand (a whole-number MAX_WAIT is rounded up)."""
    found, _ = parse_protconst(text)
    lines = text.splitlines(keepends=True)
    wait = found["MAX_WAIT"]
    values = {"MAX_WAIT": math.ceil(assignment.max_wait_s) if wait.whole else assignment.max_wait_s,
              "MAX_RETRANSMITS": assignment.max_retransmits}
    for name, decl in found.items():
        start, end = decl.span
        line = lines[decl.line]
        lines[decl.line] = line[:start] + _format(values[name], decl.whole or name == "MAX_RETRANSMITS") + line[end:]
    return "".join(lines), float(values["MAX_WAIT"]), int(values["MAX_RETRANSMITS"])


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCES and p.stat().st_size < 2_000_000)


def settle(folder: Path, assignment: Assignment) -> Constants:
    """Write the catalogue's constants into ``folder``'s protconst.h where the assignment allows it;
    otherwise learn the values the programs will use. Never guesses silently: ``note`` says how."""
    headers = sorted(folder.rglob(HEADER))
    cat_wait, cat_tries = assignment.max_wait_s, assignment.max_retransmits
    problems = []
    for header in headers:
        text = header.read_text(encoding="utf-8", errors="replace")
        found, other = parse_protconst(text)
        where = header.relative_to(folder)
        if set(found) != set(NAMES):
            problems.append(f"{where} does not declare both MAX_WAIT and MAX_RETRANSMITS as numbers")
        elif other:
            problems.append(f"{where} holds other definitions too ({other[0][:60]!r}), against the assignment")
    clean = [h for h in headers if not any(str(h.relative_to(folder)) in p for p in problems)]
    if clean and not problems:
        for header in clean:
            text, wait, tries = rewrite_protconst(header.read_text(encoding="utf-8", errors="replace"), assignment)
            header.write_text(text, encoding="utf-8")
        rounded = f"; it declares MAX_WAIT as a whole number of seconds, so the catalogue's {cat_wait:g} s " \
                  f"became {wait:g} s" if wait != cat_wait else ""
        return Constants(wait, tries, "written", f"the catalogue's values were written into "
                         f"{', '.join(str(h.relative_to(folder)) for h in clean)} before make{rounded}")
    reads_env = any(ENV_NAME in p.read_text(encoding="utf-8", errors="replace") for p in _sources(folder))
    if reads_env and not headers:
        return Constants(cat_wait, cat_tries, "environment",
                         f"the programs read {ENV_NAME} and PPCB_MAX_RETRANSMITS, which the grader sets")
    why = "; ".join(problems) if problems else f"no {HEADER} in the submission"
    values = _declared(headers) or _declared(_sources(folder))
    if values is not None:
        wait, tries, where = values
        return Constants(wait, tries, "read" if headers else "sources",
                         f"{why}: the grader could not set MAX_WAIT and MAX_RETRANSMITS, and read the values "
                         f"the programs are built with from {where}; the tests wait for them", settable=False)
    return Constants(cat_wait, cat_tries, "assumed",
                     f"{why}, and no number for MAX_WAIT and MAX_RETRANSMITS in the sources: the tests expect "
                     "the catalogue's values, which the programs may not use", settable=False)


def _declared(files: list[Path]) -> tuple[float, int, str] | None:
    """(MAX_WAIT, MAX_RETRANSMITS, where) from the first files that give both a number, else None."""
    seen: dict[str, tuple[float, str]] = {}
    for path in files:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _ANY.search(line)
            if match and match.group("name") not in seen:
                seen[match.group("name")] = (float(match.group("num").rstrip("uUlLfF")), path.name)
        if len(seen) == 2:
            return seen["MAX_WAIT"][0], int(seen["MAX_RETRANSMITS"][0]), \
                ", ".join(sorted({where for _, where in seen.values()}))
    return None


def stretch(test: GradeTest, catalogue: Assignment, used: Assignment) -> GradeTest:
    """``test`` with its deadline stretched to the constants the program uses: a program that waits
    longer, or tries more often, than the catalogue's values may take that much longer."""
    factor = used.give_up_s / catalogue.give_up_s
    return replace(test, deadline_s=round(test.deadline_s * factor, 1)) if factor > 1 else test
