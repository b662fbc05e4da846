"""The loss tests are of retransmission, not of a student's DATA size: the assignment allows DATA of
up to 64000 B (44 IP fragments at MTU 1500), and those tests lose whole datagrams."""
import shutil

import pytest

from wirelab.grade import grade_class, load_catalogue

LOSS_TESTS = ["client-udpr-20KB-loss20", "server-udpr-20KB-loss20"]


def test_every_random_loss_test_of_the_catalogue_loses_whole_datagrams():
    lossy = [t for t in load_catalogue().tests if t.link.get("loss") not in (None, 0, "0", "0%")]
    assert lossy and all(t.link.get("loss_unit") == "datagram" for t in lossy), [t.id for t in lossy]


@pytest.mark.root
@pytest.mark.slow
def test_a_correct_program_with_the_largest_data_passes_the_loss_tests(project_root, tmp_path):
    """correct-python sending 64000 B DATA: at 20 % loss lost fragment by fragment, a DATA would
    arrive once in 19,000 tries (0.8^44); lost whole, as often as a 1000 B one."""
    source = tmp_path / "class" / "largest-data"
    shutil.copytree(project_root / "data" / "example-class" / "correct-python", source)
    impl = source / "ppcb_impl.py"
    text = impl.read_text()
    assert "\nCHUNK = 1000\n" in text
    impl.write_text(text.replace("\nCHUNK = 1000\n", "\nCHUNK = 64000\n"))
    graded = grade_class([("largest-data", source)], load_catalogue().select(LOSS_TESTS), tmp_path / "out",
                         jobs=1, progress=False)[0]
    assert {t.id: t.status for t in graded.tests} == {test: "pass" for test in LOSS_TESTS}, \
        [(t.id, t.reason) for t in graded.tests]
