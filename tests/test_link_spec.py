"""LinkSpec: parsed with the units module, frozen, validated, predicted on the emulated wire."""
import dataclasses

import pytest

from wirelab.errors import UsageError
from wirelab.link import Direction, LinkSpec
from wirelab.model import predict


def test_parse_reads_units_and_mirrors_directions():
    spec = LinkSpec.parse(rate="10mbit", delay="20ms", jitter="2ms", loss="1%", mtu="1500")
    assert spec.forward == spec.reverse == Direction(10e6, 0.02, 0.002, 0.01)
    assert spec.mtu == 1500 and spec.rtt_s == pytest.approx(0.04)


def test_reverse_direction_can_differ():
    spec = LinkSpec.parse(rate="54mbit", rate_reverse="21mbit", loss="1%", loss_reverse=0)
    assert spec.forward.rate_bps == 54e6 and spec.reverse.rate_bps == 21e6
    assert spec.forward.loss == 0.01 and spec.reverse.loss == 0.0
    assert "b→a" in spec.describe()


def test_spec_is_frozen():
    spec = LinkSpec.parse(rate="1mbit")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.mtu = 9000
    assert spec.with_changes(mtu=1400).mtu == 1400 and spec.mtu == 1500


@pytest.mark.parametrize("kwargs", [
    dict(rate="-1mbit"), dict(loss="120%"), dict(delay="-5ms"), dict(mtu=100), dict(reorder="10%"),
    dict(rate="10mbit", queue=100), dict(rate="10 parsecs"), dict(bogus_reverse=1),
])
def test_bad_values_are_refused_with_a_fix(kwargs):
    with pytest.raises(UsageError) as err:
        LinkSpec.parse(**kwargs)
    assert ":" in str(err.value)


def test_defaults_for_queue_and_burst_scale_with_rate():
    slow, fast = LinkSpec.parse(rate="100kbit"), LinkSpec.parse(rate="1gbit")
    assert slow.queue_for(slow.forward) == 4 * 1514          # at least 4 frames
    assert fast.queue_for(fast.forward) == int(1e9 * 0.1 / 8)  # 100 ms of the rate
    assert fast.burst_for(fast.forward) == int(1e9 / 8 / 250)
    assert LinkSpec.parse(rate="1mbit", queue="64KB").queue_for(slow.forward) == 64000


def test_round_trip_through_a_dict():
    spec = LinkSpec.parse(rate="10mbit", delay="20ms", loss="1%", loss_reverse=0, mtu=1400, queue="64KB")
    assert LinkSpec.from_dict(spec.to_dict()) == spec


def test_prediction_uses_the_emulated_wire_and_the_specs_rtt_and_loss():
    spec = LinkSpec.parse(rate="10mbit", delay="20ms", loss="1%")
    got = spec.predict("tcp", timestamps=True)
    want = predict("tcp", 10e6, wire="emulated", timestamps=True, rtt_s=0.04, loss=0.01)
    assert got.goodput_bps == want.goodput_bps and got.stack.l2 == 14


def test_delay_line_is_what_needs_netem_or_userspace():
    assert not LinkSpec.parse(rate="10mbit", loss="5%").needs_delay_line
    assert LinkSpec.parse(delay="1ms").needs_delay_line
    assert LinkSpec.parse(duplicate="1%").needs_delay_line
