"""Document 000's two ways to split a sweep across boards, and a burst's wait at a FIFO."""
import pytest

from wirelab.errors import ModelError
from wirelab.model import parallel_split, round_robin
from wirelab.model.load import burst_delay


def test_the_parallel_split_sends_x_times_five_percent_times_n_more():
    split = parallel_split(10e6, 3)
    assert split.overlap_bytes == pytest.approx(1.5e6) and split.sent_bytes == pytest.approx(11.5e6)
    assert split.worst_latency_s == 0 and split.per_board_bytes == pytest.approx(11.5e6 / 3)
    assert parallel_split(10e6, 8).overlap_bytes == pytest.approx(4e6)          # grows with the boards
    assert split.link_time_s(8e6) == pytest.approx(11.5)


def test_round_robin_waits_a_computing_time_less_a_sector_and_overlaps_little():
    split = round_robin(10e6, 4, sweep_s=0.4, compute_s=0.4)
    assert split.worst_latency_s == pytest.approx(0.3) and split.overlap_bytes == pytest.approx(0.04e6)
    assert split.keeps_up
    assert not round_robin(10e6, 4, sweep_s=0.4, compute_s=0.5).keeps_up        # a board falls behind
    assert round_robin(10e6, 4, sweep_s=0.4, compute_s=0.4, per_board=True).overlap_bytes == pytest.approx(0.16e6)
    assert round_robin(10e6, 1, sweep_s=0.4, compute_s=0.1).worst_latency_s == 0


@pytest.mark.parametrize("bad", [dict(data_bytes=-1, boards=2), dict(data_bytes=1e6, boards=0),
                                 dict(data_bytes=1e6, boards=2, overlap=1.5)])
def test_a_split_of_nothing_sensible_is_a_model_error(bad):
    with pytest.raises(ModelError):
        parallel_split(**bad)


def test_a_burst_waits_for_the_packets_ahead_of_it():
    # 3 packets of 1000 B at 8 kbit/s (1000 B/s): waits 0, 1, 2 s, each 1 s on the wire
    assert burst_delay(3, 1000, 8e3) == pytest.approx(2.0)
    # a sender that holds at most 1000 B blocks: the third waits only that backlog
    assert burst_delay(3, 1000, 8e3, backlog_bytes=1000) == pytest.approx((0 + 1 + 1) / 3 + 1)
    assert burst_delay(1, 1500, 1e9) == pytest.approx(12e-6)
    with pytest.raises(ModelError):
        burst_delay(0, 1500, 1e9)
