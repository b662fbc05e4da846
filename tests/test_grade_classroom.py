"""Grading workers: one interrupt starts their cleanup, and no later one cuts it short."""
import multiprocessing
import os
import select
import signal
from concurrent.futures import ProcessPoolExecutor

import pytest

from wirelab.grade import classroom, load_catalogue


def _interrupted_twice() -> str:
    try:
        os.kill(os.getpid(), signal.SIGINT)          # Ctrl-C from the terminal
        select.select([], [], [], 5)                 # (the signal is delivered before this returns)
    except KeyboardInterrupt:
        os.kill(os.getpid(), signal.SIGINT)          # the grader passing the interrupt on
        return "cleaned up"
    return "never interrupted"


def test_a_worker_finishes_its_cleanup_and_then_grades_nothing_more(tmp_path):
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn, initializer=classroom._start_worker) as pool:
        assert pool.submit(_interrupted_twice).result(timeout=120) == "cleaned up"
        later = pool.submit(classroom._grade_in_worker, "late", str(tmp_path), load_catalogue(),
                            str(tmp_path / "out"), False)
        with pytest.raises(KeyboardInterrupt, match="interrupted"):
            later.result(timeout=120)
    assert not (tmp_path / "out").exists()
