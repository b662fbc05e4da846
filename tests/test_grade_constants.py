"""protconst.h: the catalogue's constants written in the student's own form where the assignment
allows it, and otherwise the values the programs are built with, learnt and named (never a silent zero)."""
from dataclasses import replace

import pytest

from wirelab.grade.catalogue import Assignment, GradeTest
from wirelab.grade.constants import parse_protconst, rewrite_protconst, settle, stretch

CATALOGUE = Assignment(max_wait_s=0.5, max_retransmits=5)


def _folder(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize("text, wait, written", [
    ("#ifndef PROTCONST_H\n#define PROTCONST_H\n// seconds\n#define MAX_WAIT 10\n#define MAX_RETRANSMITS 3\n#endif\n",
     1.0, "#define MAX_WAIT 1\n#define MAX_RETRANSMITS 5\n"),
    ("const int MAX_WAIT = 5;\nconst int MAX_RETRANSMITS = 5;", 1.0, "const int MAX_WAIT = 1;"),
    ("#pragma once\n#include <cstdint>\nconstexpr uint8_t MAX_WAIT = 5;\nconstexpr uint8_t MAX_RETRANSMITS{2};\n",
     1.0, "constexpr uint8_t MAX_RETRANSMITS{5};"),
    ("/* times\n   in seconds */\nstatic const double MAX_WAIT = 2.5; // s\n#define MAX_RETRANSMITS (4)\n",
     0.5, "static const double MAX_WAIT = 0.5; // s\n#define MAX_RETRANSMITS (5)\n"),
    ("#define MAX_WAIT 10.0\n#define MAX_RETRANSMITS 5U\n", 0.5, "#define MAX_WAIT 0.5\n#define MAX_RETRANSMITS 5\n"),
])
def test_a_clean_protconst_gets_the_catalogues_values_in_the_students_form(tmp_path, text, wait, written):
    folder = _folder(tmp_path, {"src/protconst.h": text, "src/ppcbc.c": "int main(void){return MAX_WAIT;}\n"})
    used = settle(folder, CATALOGUE)
    assert (used.how, used.max_wait_s, used.max_retransmits, used.settable) == ("written", wait, 5, True)
    assert written in (folder / "src" / "protconst.h").read_text()
    assert "src/protconst.h" in used.note and (("became 1 s" in used.note) == (wait == 1.0))
    assert used.applied(CATALOGUE) == replace(CATALOGUE, max_wait_s=wait)


def test_a_protconst_with_other_definitions_is_left_alone_and_read(tmp_path):
    text = "#define MAX_WAIT 10\n#define MAX_RETRANSMITS 3\n#define PORT 5000\nint helper(void);\n"
    folder = _folder(tmp_path, {"protconst.h": text})
    used = settle(folder, CATALOGUE)
    assert (used.how, used.max_wait_s, used.max_retransmits, used.settable) == ("read", 10.0, 3, False)
    assert (folder / "protconst.h").read_text() == text                     # untouched: it would change the program
    assert "other definitions" in used.note and "#define PORT 5000" in used.note
    assert parse_protconst(text)[1] == ["#define PORT 5000", "int helper(void);"]


def test_without_protconst_the_values_come_from_the_sources_or_the_environment(tmp_path):
    used = settle(_folder(tmp_path / "a", {"common.h": "constexpr uint8_t MAX_WAIT = 5;\n",
                                           "x.cpp": "static const int MAX_RETRANSMITS = 7;\n"}), CATALOGUE)
    assert (used.how, used.max_wait_s, used.max_retransmits, used.settable) == ("sources", 5.0, 7, False)
    assert "no protconst.h" in used.note and "common.h" in used.note
    env = settle(_folder(tmp_path / "b", {"impl.py": 'W = float(os.environ["PPCB_MAX_WAIT"])\n'}), CATALOGUE)
    assert (env.how, env.max_wait_s, env.settable) == ("environment", 0.5, True)
    unknown = settle(_folder(tmp_path / "c", {"main.c": "int main(void){return 0;}\n"}), CATALOGUE)
    assert unknown.how == "assumed" and not unknown.settable and "no number" in unknown.note


def test_deadlines_stretch_to_the_constants_the_program_uses():
    test = GradeTest("client-udpr-x", "client", "udpr", 1, 10.0, True, "checks")
    assert stretch(test, CATALOGUE, CATALOGUE) is test
    assert stretch(test, CATALOGUE, replace(CATALOGUE, max_wait_s=1.0)).deadline_s == 20.0
    assert stretch(test, CATALOGUE, Assignment(max_wait_s=10, max_retransmits=10)).deadline_s == pytest.approx(10 * 20 * 11 / 6, abs=0.1)


def test_rewriting_keeps_everything_but_the_numbers():
    text = "#ifndef P\n#define P\n#define MAX_WAIT   10   /* s */\n#define MAX_RETRANSMITS 3\n#endif\n"
    new, wait, tries = rewrite_protconst(text, Assignment(max_wait_s=2, max_retransmits=4))
    assert new == text.replace("10", "2").replace(" 3\n", " 4\n") and (wait, tries) == (2.0, 4)
