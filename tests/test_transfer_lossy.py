"""Done-when: udpr moves 1 MB byte-exact through a relay that drops 20 % each way,
duplicates 5 % and reorders some; no packet takes longer than MAX_WAIT × (MAX_RETRANSMITS + 1)."""
import hashlib
import time

import pytest

from ppcb_raw import wait_for
from transfer_relay import LossyRelay
from wirelab.transfer import HashSink, make_data, send_udp, start_server

W, R = 0.05, 10


@pytest.mark.slow
def test_udpr_survives_a_lossy_duplicating_reordering_relay():
    data = make_data(1_000_000, seed=3)
    sink = HashSink()
    port, stop, thread, results = start_server("udp", out=sink, max_wait=W, max_retransmits=R)
    try:
        with LossyRelay(port, drop=0.2, duplicate=0.05, reorder=0.05, seed=7) as relay:
            started = time.monotonic()
            result = send_udp("127.0.0.1", relay.port, data, proto="udpr", chunk=8000,
                              max_wait=W, max_retransmits=R)
            elapsed = time.monotonic() - started
            assert wait_for(lambda: results, timeout=W * (R + 2))
    finally:
        stop.set()
        thread.join(2)
    assert result.ok, result.error
    assert sink.bytes == len(data) and sink.hexdigest() == hashlib.sha256(data).hexdigest()
    assert results[0].ok and results[0].bytes_delivered == len(data)
    assert relay.stats["dropped"] > 20 and relay.stats["duplicated"] > 0 and relay.stats["reordered"] > 0
    assert result.retransmissions > 0 and results[0].duplicates > 0
    assert max(result.ack_times_s) <= W * (R + 1) + 0.5          # never hangs beyond the bound (+ CPU slack)
    assert elapsed < 30


def test_relay_is_reproducible_and_drops_about_what_it_says():
    import random
    kept = [LossyRelay.__new__(LossyRelay) for _ in range(2)]
    for relay in kept:
        relay.rng, relay.drop = [random.Random(5), random.Random(6)], 0.2
    draws = [[r.rng[0].random() < r.drop for _ in range(2000)] for r in kept]
    assert draws[0] == draws[1] and 0.15 < sum(draws[0]) / 2000 < 0.25
