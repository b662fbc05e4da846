"""The diagnosis from the bytes (grade/diagnose.py): each way an output can differ from its input is named,
with the offsets that show it and advice for that cause only (issue 34, part 1)."""
import random

import pytest

from wirelab.grade.diagnose import diagnose

CHUNK = 1000


def data_with(size: int, *, first: dict[int, int] | None = None, seed: int = 3) -> bytes:
    """Random bytes with none of 0x00, 0x0A, 0x0D, 0xFF and no blank, except where ``first`` puts one."""
    avoid = b"\x00\n\r\xff \t\v\f"
    out = bytearray(random.Random(seed).randbytes(size).translate(bytes.maketrans(avoid, b"A" * len(avoid))))
    for at, value in (first or {}).items():
        out[at] = value
    return bytes(out)


def test_the_same_bytes_are_no_finding():
    data = data_with(5000)
    assert diagnose(data, data, CHUNK) is None


@pytest.mark.parametrize("value, included, words", [
    (0xFF, True, "getdelim"), (0xFF, False, "compare getc"), (0x00, False, "C string"),
    (0x0A, True, "line by line"), (0x0A, False, "line by line"), (0x0D, False, "text mode"),
    (0x20, False, "scanf")])
def test_a_prefix_cut_at_the_inputs_first_delimiter_names_the_byte_and_the_reading(value, included, words):
    data = data_with(100_000, first={587: value, 5000: value, 40_000: 0xFF})
    got = data[:588] if included else data[:587]
    found = diagnose(data, got, CHUNK, side="client")
    assert found.cause == "stops_at_byte"
    assert found.offsets == {"delivered": len(got), "byte_at": 587, "byte": value, "included": included}
    assert f"the first {len(got)} of the 100000 B input exactly, then nothing" in found.sentence
    assert "587" in found.sentence and words in found.advice
    assert "flush" not in found.advice                    # the advice of another cause is not given


def test_the_issues_getdelim_client_is_told_about_0xff_not_about_flushing():
    data = data_with(100_000, first={587: 0xFF})
    found = diagnose(data, data[:588], CHUNK, side="client")
    assert "0xFF" in found.sentence and "EOF" in found.advice and "getc" in found.advice


def test_a_missing_tail_elsewhere_says_how_much_and_advises_by_who_wrote_it():
    data = data_with(1_000_000, first={300: 0xFF, 301: 0x00, 302: 0x0A, 303: 0x20})
    server = diagnose(data, data[:761_000], CHUNK, side="server", running=True)
    assert server.cause == "tail_missing" and server.offsets == {"delivered": 761_000, "expected": 1_000_000}
    assert "761 whole DATA" in server.sentence and "fflush(stdout)" in server.advice
    ended = diagnose(data, data[:761_000], CHUNK, side="server", running=False)
    assert "ended" in ended.advice
    client = diagnose(data, data[:761], CHUNK, side="client")
    assert client.cause == "tail_missing" and "stdin" in client.advice and "flush" not in client.advice


def test_nothing_delivered_is_a_missing_tail_from_byte_0():
    data = data_with(2000)
    found = diagnose(data, b"", CHUNK)
    assert found.cause == "tail_missing" and found.offsets["delivered"] == 0


def test_a_chunk_written_twice_is_found_with_where_it_came_again():
    data = data_with(5000)
    got = data[:3000] + data[2000:3000] + data[3000:]
    found = diagnose(data, got, CHUNK)
    assert found.cause == "chunk_twice" and found.offsets == {"from": 2000, "to": 3000, "again_at": 3000}
    assert "1000 B DATA" in found.sentence and "duplicate DATA" in found.advice


def test_chunks_out_of_order_are_named_with_the_offsets():
    data = data_with(5000)
    got = data[:1000] + data[2000:3000] + data[1000:2000] + data[3000:]
    found = diagnose(data, got, CHUNK)
    assert found.cause == "out_of_order"
    assert found.offsets == {"at": 1000, "got_from": 2000, "expected_from": 1000}


def test_a_chunk_never_written_is_a_gap():
    data = data_with(5000)
    found = diagnose(data, data[:2000] + data[3000:], CHUNK)
    assert found.cause == "gap" and found.offsets == {"from": 2000, "to": 3000}


@pytest.mark.parametrize("where", ["middle", "end", "start", "every packet"])
def test_text_added_to_the_output_is_shown_and_sent_to_stderr(where):
    data = data_with(5000)
    note = b"got packet 2\n"
    got = {"middle": data[:2000] + note + data[2000:], "end": data + note, "start": note + data,
           "every packet": b"".join(data[i:i + CHUNK] + note for i in range(0, 5000, CHUNK))}[where]
    found = diagnose(data, got, CHUNK)
    assert found.cause == "text_added" and "got packet 2" in found.sentence
    assert found.offsets["length"] == len(note) and "stderr" in found.advice
    assert found.offsets["at"] == {"middle": 2000, "end": 5000, "start": 0, "every packet": 1000}[where]


def test_bytes_changed_in_place_keep_the_length():
    data = data_with(5000)
    for at, count in ((1234, 10), (0, 3), (4990, 10)):
        got = data[:at] + bytes(b ^ 0x55 for b in data[at:at + count]) + data[at + count:]
        found = diagnose(data, got, CHUNK)
        assert found.cause == "bytes_changed" and found.offsets == {"first": at, "count": count}, (at, found)


def test_none_of_the_inputs_bytes_is_said_so():
    data = data_with(5000)
    found = diagnose(data, b"\0" * 5000, CHUNK)
    assert found.cause == "nothing" and found.offsets == {"first": 0}


def test_without_a_chunk_size_runs_are_found_anywhere():
    data = data_with(10_000)
    got = data[:1234] + data[1000:1234] + data[1234:]            # a resend of odd size, written again
    found = diagnose(data, got, None)
    assert found.cause == "chunk_twice" and found.offsets == {"from": 1000, "to": 1234, "again_at": 1234}


def test_ten_megabytes_with_debug_text_after_every_packet_are_read_in_time():
    """The grader's biggest transfer: a line of debug text after each of its 10 000 DATA."""
    data = random.Random(1).randbytes(10_000_000)
    got = b"".join(data[i:i + CHUNK] + b"ok\n" for i in range(0, len(data), CHUNK))
    found = diagnose(data, got, CHUNK)
    assert found.cause == "text_added" and found.offsets == {"at": 1000, "length": 3}
    assert "30000 such bytes in all" in found.sentence


def test_a_flood_of_text_is_read_only_as_far_as_needed():
    data = random.Random(2).randbytes(100_000)
    found = diagnose(data, data[:5000] + b"x" * 5_000_000, CHUNK)
    assert found.cause == "text_added" and found.offsets == {"at": 5000, "length": 5_000_000}


def test_a_missing_tail_after_the_kits_server_gave_up_blames_the_sending_not_stdin():
    # a client over a link that lost its DATA MAX_RETRANSMITS times (or one that stopped resending): the
    # server timed out waiting; reading stdin is not the suspect (seen: 17 of 20 DATA, then 5 sends lost)
    data = bytes(range(256)) * 80
    finding = diagnose(data, data[:17000], 1000, side="client", peer_gave_up=True)
    assert finding.cause == "tail_missing" and "stdin" not in finding.advice and "resending" in finding.advice
    assert "stdin" in diagnose(data, data[:17000], 1000, side="client").advice
