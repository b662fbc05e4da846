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
    # tbf's bucket: one frame and 1 ms of the rate (TBF_SLACK_S), a meter's least that still reaches its rate
    assert fast.burst_for(fast.forward) == 1514 + int(1e9 * 1e-3 / 8)
    assert slow.burst_for(slow.forward) == 1514 + int(1e5 * 1e-3 / 8)
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


def test_a_spec_saved_before_the_wire_existed_loads_as_emulated():
    saved = LinkSpec.parse(rate="10mbit", delay="20ms").to_dict()
    del saved["wire"], saved["pppoe"]                 # what an older results folder holds
    spec = LinkSpec.from_dict(saved)
    assert spec.wire == "emulated" and not spec.pppoe and spec.frame_bytes == 1514


def test_a_real_wire_charges_38_bytes_a_frame_and_84_at_least():
    real = LinkSpec.parse(rate="10mbit", wire="real")
    assert (real.l2_bytes, real.overhead_bytes, real.min_frame_bytes) == (38, 24, 84)
    assert real.frame_bytes == 1538 and real.charge(1514) == 1538
    assert real.charge(46) == 84, "a 4 B UDP datagram is a 64 B minimum frame + 20 on a cable"
    emulated = LinkSpec.parse(rate="10mbit")
    assert emulated.charge(1514) == 1514 and emulated.charge(46) == 46
    assert LinkSpec.from_dict(real.to_dict()) == real
    assert "real wire (38 B a frame)" in real.describe()
    slow = LinkSpec.parse(rate="100kbit", wire="real")
    assert slow.queue_for(slow.forward) == 4 * 1538 and slow.burst_for(slow.forward) == 1538 + 12


def test_pppoe_adds_8_bytes_and_makes_the_mtu_1492():
    fttc = LinkSpec.parse(rate="21mbit", rate_reverse="54mbit", wire="real", pppoe=True)
    assert fttc.mtu == 1492 and fttc.l2_bytes == 46 and fttc.frame_bytes == 1538
    assert LinkSpec.parse(pppoe=True, mtu=1400).mtu == 1400


def test_prediction_is_for_the_specs_own_wire():
    # document 002: 1448/1538 and 1472/1538 of 10 Mbit/s, as it rounds them
    real = LinkSpec.parse(rate="10mbit", wire="real")
    assert real.predict("tcp", timestamps=True).goodput_bps == pytest.approx(9.41e6, abs=0.005e6)
    assert real.predict("udp").goodput_bps == pytest.approx(9.57e6, abs=0.005e6)
    fttc = LinkSpec.parse(rate="21mbit", wire="real", pppoe=True)
    assert fttc.predict("udp").payload_bytes == 1464
    assert fttc.predict("tcp", timestamps=True).payload_bytes == 1440


@pytest.mark.parametrize("kwargs", [dict(wire="copper"), dict(wire="real", rate="10mbit", burst=1514)])
def test_a_bad_wire_or_a_burst_smaller_than_its_frame_is_refused(kwargs):
    with pytest.raises(UsageError) as err:
        LinkSpec.parse(**kwargs)
    assert "wire" in str(err.value) or "1538" in str(err.value)
