import math

import pytest
from hypothesis import given, strategies as st

from wirelab import units
from wirelab.errors import UnitError, UsageError, WirelabError


@pytest.mark.parametrize("text, bps", [
    ("10mbit", 10e6), ("10Mbit", 10e6), ("1.5Gbit/s", 1.5e9), ("100kbit", 100e3),
    ("10Mb/s", 10e6), ("5MB/s", 40e6), ("1KiB/s", 8192.0), ("64000", 64000.0), (2e6, 2e6),
    ("1 gbit", 1e9), ("50kbit/s", 50e3),
])
def test_parse_rate(text, bps):
    assert units.parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text, seconds", [
    ("20ms", 0.02), ("1.5s", 1.5), ("250us", 250e-6), ("2min", 120.0), ("5", 5.0), (0.1, 0.1),
])
def test_parse_time(text, seconds):
    assert units.parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text, nbytes", [
    ("1500B", 1500), ("1500", 1500), ("64KB", 64000), ("64kb", 64000), ("64KiB", 65536),
    ("1MB", 1e6), ("100kbit", 12500), ("1MiB", 1048576),
])
def test_parse_size(text, nbytes):
    assert units.parse_size(text) == pytest.approx(nbytes)


@pytest.mark.parametrize("text, fraction", [("1%", 0.01), ("0.01", 0.01), ("100%", 1.0), ("0", 0.0), ("5 %", 0.05)])
def test_parse_fraction(text, fraction):
    assert units.parse_fraction(text) == pytest.approx(fraction)


@pytest.mark.parametrize("parse, text, words", [
    (units.parse_rate, "-5mbit", "negative"),
    (units.parse_rate, "10parsec", "unknown rate unit"),
    (units.parse_rate, "10mbps", "ambiguous"),
    (units.parse_rate, "fast", "cannot read"),
    (units.parse_time, "20 fortnights", "unknown time unit"),
    (units.parse_time, "-1ms", "negative"),
    (units.parse_size, "12 parsecs", "unknown size unit"),
    (units.parse_fraction, "150%", "more than 100"),
    (units.parse_fraction, "1.5", "more than 1"),
    (units.parse_fraction, "-1%", "negative"),
    (units.parse_rate, float("nan"), "finite"),
    (units.parse_rate, True, "not a rate"),
])
def test_nonsense_is_a_clear_wirelab_error(parse, text, words):
    with pytest.raises(UnitError) as info:
        parse(text)
    assert words in str(info.value)
    assert isinstance(info.value, WirelabError) and isinstance(info.value, UsageError)
    assert info.value.fix, "every unit error says how to write it"


def test_format_round_trips_through_parse():
    assert units.format_rate(9.41e6) == "9.41 Mbit/s"
    assert units.parse_rate(units.format_rate(9.41e6).replace(" ", "")) == pytest.approx(9.41e6)
    assert units.format_time(0.02) == "20 ms"
    assert units.format_size(1500) == "1.5 kB"
    assert units.format_fraction(0.01) == "1 %"


@given(st.floats(min_value=1, max_value=1e12, allow_nan=False))
def test_rate_formats_back_to_itself(bps):
    text = units.format_rate(bps, digits=12).replace(" ", "")
    assert math.isclose(units.parse_rate(text), bps, rel_tol=1e-9)


@given(st.floats(min_value=0, max_value=100, allow_nan=False))
def test_percent_is_a_fraction(pct):
    assert units.parse_fraction(f"{pct!r}%") == pytest.approx(pct / 100)
