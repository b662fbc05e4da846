"""How a program's output differs from its input, read from the bytes: the cause a student can act on.

    >>> data = bytes([7, 7, 0xFF, 7])
    >>> diagnose(data, data[:3], side="client").cause
    'stops_at_byte'

``diagnose(expected, got, chunk)`` lays ``got`` over ``expected`` as runs of
the input's bytes (found by 16-byte keys at each DATA's start, ``chunk`` apart,
or anywhere) and bytes that are not the input's, then names the first thing
that went wrong, in the order the output was written:

* ``stops_at_byte``: the input's first bytes exactly, then nothing, cut at the
  input's first 0xFF, 0x00, newline or blank: a program that reads its input
  up to a delimiter (``getdelim(..., EOF, ...)`` stops at 0xFF, EOF cast to a
  char), compares ``getc`` with a char, treats data as a string or reads lines;
* ``tail_missing``: the input's first bytes exactly, then nothing, cut elsewhere;
* ``text_added``: bytes that are not the input's among or after them (debug output);
* ``chunk_twice``: some of the input's bytes written again;
* ``out_of_order``: a later part of the input before an earlier one;
* ``gap``: a part of the input skipped, never written;
* ``bytes_changed``: right length (there), other bytes;
* ``nothing``: none of the input's bytes at all.

``side`` says whose bytes these are, so the advice fits: ``client`` (what the
student's ppcbc sent, read from its stdin), ``server`` (what ppcbs wrote to its
stdout), ``pair`` (either). Pure: bytes in, a ``Finding`` out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Finding", "diagnose", "CAUSES"]

CAUSES = ("stops_at_byte", "tail_missing", "text_added", "chunk_twice", "out_of_order", "gap", "bytes_changed",
          "nothing")

_KEY = 16                  # bytes that place a run in the input (random input: 16 bytes are unique)
_SEARCH = 64_000_000       # bytes of the input searched, at most, for runs off the DATA grid (~50 ms)
_OTHER = 256_000           # bytes that are not the input's, in one run, read at most (a flood ends the reading)
_BLANKS = b" \t\n\v\f\r"


@dataclass(frozen=True)
class Finding:
    """What differs: ``cause`` (one of CAUSES), where (``offsets``: byte offsets, 0-based), ``sentence``
    (what was seen, plainly) and ``advice`` (what to look at, for this cause only)."""
    cause: str
    sentence: str
    advice: str
    offsets: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.sentence}: {self.advice}" if self.advice else self.sentence


# --------------------------------------------------------------------------- where the bytes came from
def _common(a: bytes, i: int, b: bytes, j: int) -> int:
    """How many bytes a[i:] and b[j:] share at their start (compared in blocks, then byte by byte)."""
    n, step = 0, 4096
    limit = min(len(a) - i, len(b) - j)
    while n < limit:
        k = min(step, limit - n)
        if a[i + n:i + n + k] == b[j + n:j + n + k]:
            n += k
            continue
        while a[i + n] == b[j + n]:
            n += 1
        return n
    return n


def _runs(expected: bytes, got: bytes, chunk: int | None) -> list[tuple]:
    """``got`` as ("input", start, end, at) runs of ``expected[start:end]`` written at ``at``, and
    ("other", at, end) runs of bytes found nowhere in the input."""
    step = chunk if chunk and chunk > 0 else max(len(expected), 1)
    index: dict[bytes, int] = {}
    for q in range(0, max(len(expected) - _KEY + 1, 0), step):
        index.setdefault(expected[q:q + _KEY], q)
    runs: list[tuple] = []
    p, after, budget = 0, 0, _SEARCH
    while p < len(got):
        key = got[p:p + _KEY]
        q = None
        other = p - runs[-1][1] if runs and runs[-1][0] == "other" else 0
        for resume in (after, after + other):          # where the last run stopped; or in place after a change
            if resume < len(expected) and expected[resume:resume + len(key)] == key and \
                    (len(key) == _KEY or resume + len(key) == len(expected) or p + len(key) == len(got)):
                q = resume
                break
        if q is None and len(key) == _KEY:
            q = index.get(key)
            if q is None and budget > 0:
                budget -= len(expected)
                found = expected.find(key)
                q = found if found >= 0 else None
        if q is not None and after - _KEY < q < after:
            _overran(runs, q, p)                       # the last run took the text's first bytes for the input's
        if q is None:
            if runs and runs[-1][0] == "other" and runs[-1][2] == p:
                runs[-1] = ("other", runs[-1][1], p + 1)
                if p + 1 - runs[-1][1] >= _OTHER:        # a flood: the rest is not read byte by byte
                    runs[-1] = ("other", runs[-1][1], len(got))
                    break
            else:
                runs.append(("other", p, p + 1))
            p += 1
            continue
        n = _common(got, p, expected, q)
        runs.append(("input", q, q + n, p))
        p, after = p + n, q + n
    return runs


def _overran(runs: list[tuple], q: int, p: int) -> None:
    """The last run of the input went on by chance past ``q`` into bytes that are not the input's (they
    matched the input's next bytes: 1 in 256 each): it ends at ``q``, and what it overran up to ``p`` is not
    the input's."""
    k = max(i for i, r in enumerate(runs) if r[0] == "input")
    _, start, end, at = runs[k]
    if start >= q:
        return
    runs[k] = ("input", start, q, at)
    del runs[k + 1:]
    runs.append(("other", at + q - start, p))


# --------------------------------------------------------------------------- the advice, by cause and side
_DELIMITERS = {
    0xFF: ("0xFF", "does your program read its input up to a delimiter (getdelim or getline with EOF as the "
                   "delimiter: EOF cast to a char is 0xFF), compare getc's result with a char (EOF is -1, "
                   "the int getc returns must stay an int), or read in text mode? Read binary data with "
                   "read() or fread() until it returns 0"),
    0x00: ("0x00", "does your program treat the data as a C string (strlen, strcpy, strcat, printf \"%s\", "
                   "fputs, std::string from a char*)? Binary data may hold zero bytes: keep its length "
                   "and use memcpy and fwrite/write with that length"),
    0x0A: ("a newline (0x0A)", "does your program read its input line by line (fgets, getline, "
                               "std::getline, scanf) or in text mode? Read binary data with read() or "
                               "fread() until it returns 0"),
    0x0D: ("a carriage return (0x0D)", "does your program read or write in text mode, or line by line? "
                                       "Open files and streams in binary mode and use read()/fread()"),
}
_BLANK = ("a blank", "does your program read words (scanf \"%s\", std::cin >> a string)? They stop at "
                     "white space; read binary data with read() or fread() until it returns 0")


def _cut(expected: bytes, n: int) -> tuple | None:
    """The delimiter a prefix of ``n`` bytes stops at: (its value, its offset, included?), when the input's
    first byte of that value is the next one (``n``) or the last one delivered (``n - 1``)."""
    for at, included in ((n - 1, True), (n, False)):
        if not 0 <= at < len(expected):
            continue
        value = expected[at]
        if value in _DELIMITERS and expected.find(bytes([value])) == at and not (included and value == 0x00):
            return value, at, included
        if not included and value in _BLANKS and not any(b in _BLANKS for b in expected[:at]):
            return value, at, included
    return None


def _who(side: str) -> tuple[str, str]:
    """(what holds the bytes, the program to look at)."""
    return {"client": ("wirelab's server received", "ppcbc"),
            "server": ("ppcbs wrote to stdout", "ppcbs"),
            "pair": ("ppcbs wrote to stdout", "ppcbc or ppcbs")}.get(side, ("the output holds", "the program"))


def _shown(text: bytes) -> str:
    return repr(text[:60])[2:-1] + ("..." if len(text) > 60 else "")


def _prefix(expected: bytes, n: int, chunk: int | None, side: str, running: bool,
            peer_gave_up: bool = False) -> Finding:
    N = len(expected)
    holds, program = _who(side)
    cut = _cut(expected, n)
    if cut:
        value, at, included = cut
        name, advice = _DELIMITERS.get(value, _BLANK)
        where = (f"its last byte, input byte {at}, is the input's first {name}" if included
                 else f"the next input byte, {at}, is the input's first {name}")
        if side == "server" and value != 0x00:
            advice = "does ppcbs write the data as text (line by line, or in text mode)? Write the bytes " \
                     "as they came, with fwrite/write and their length"
        return Finding("stops_at_byte", f"{holds} the first {n} of the {N} B input exactly, then nothing; {where}",
                       advice, {"delivered": n, "byte_at": at, "byte": value, "included": included})
    packets = f" ({n // chunk} whole DATA of {chunk} B)" if chunk and n and n % chunk == 0 else ""
    if side == "client" and peer_gave_up:
        advice = (f"wirelab's server waited for the next DATA until its MAX_WAIT and resends were spent: did "
                  f"{program} stop resending it (MAX_RETRANSMITS) or end the session while it was still unacknowledged? "
                  "The ladder below shows every send")
    elif side == "client":
        advice = (f"{program} sent only {n} B: does it read all of stdin before it starts (read() or fread() "
                  "until it returns 0; one call may return less than asked), and send every byte it read?")
    elif running:
        advice = "flush stdout after each packet (stdout is a file when graded, so printf's output waits " \
                 "in a buffer): fflush(stdout), or write() to fd 1"
    else:
        advice = "ppcbs ended before it wrote the rest: flush stdout after each packet, and do not exit " \
                 "with bytes still in stdout's buffer (_exit or a crash drops them)"
    if side == "pair":
        advice = "ppcbc sent, or ppcbs wrote, only part of it: " + advice
    return Finding("tail_missing", f"{holds} the first {n} of the {N} B input exactly{packets}, then nothing "
                                   f"(the last {N - n} B missing)", advice, {"delivered": n, "expected": N})


def diagnose(expected: bytes, got: bytes, chunk: int | None = None, *, side: str = "server",
             running: bool = True, peer_gave_up: bool = False) -> Finding | None:
    """How ``got`` differs from ``expected`` (``None``: it does not). ``chunk``: the DATA size, where
    known (runs of the input are looked for at its multiples first); ``side``: client, server or pair
    (module doc); ``running``: whether the program that wrote ``got`` still ran when it was read;
    ``peer_gave_up``: the kit's server stopped waiting for the next DATA (then a missing tail is the
    client's sending, not its reading of stdin)."""
    if got == expected:
        return None
    holds, program = _who(side)
    N = len(expected)
    if not got:
        return _prefix(expected, 0, chunk, side, running, peer_gave_up)
    if len(got) < N and expected.startswith(got):
        return _prefix(expected, len(got), chunk, side, running, peer_gave_up)
    runs = _runs(expected, got, chunk)
    if not any(r[0] == "input" for r in runs):
        return Finding("nothing", f"{holds} {len(got)} B, none of them the input's (they begin "
                                  f"'{_shown(got[:40])}')", f"is {program} sending or writing its input's bytes?",
                       {"first": 0})
    seen: list[tuple[int, int]] = []               # the input's ranges written so far
    covered = 0
    for i, run in enumerate(runs):
        if run[0] == "other":
            _, at, end = run
            before = runs[i - 1] if i else None
            following = runs[i + 1] if i + 1 < len(runs) else None
            resumes = before[2] if before else 0
            in_place = resumes + (end - at)
            if (following and following[1] == in_place != resumes) or \
                    (following is None and end == len(got) == N and in_place == N):
                return Finding("bytes_changed", f"{holds} {len(got)} of the {N} B input; bytes {at} to "
                                                f"{end - 1} differ from the input's ({end - at} B changed, the "
                                                f"rest in place)",
                               f"does {program} copy every byte as it is (a buffer reused or overwritten "
                               "before it was sent or written)?", {"first": at, "count": end - at})
            return Finding("text_added", f"{holds} {end - at} B that are not the input's at byte {at} "
                                         f"('{_shown(got[at:end])}'), "
                           + (f"{sum(r[2] - r[1] for r in runs if r[0] == 'other')} such bytes in all" if
                              sum(r[0] == "other" for r in runs) > 1 else "the only ones"),
                           "write messages to stderr (fprintf(stderr, ...)), never to stdout: stdout holds the "
                           "data alone" if side != "client" else
                           "ppcbc must send exactly the bytes of its stdin: nothing of its own",
                           {"at": at, "length": end - at})
        _, start, end, at = run
        again = [(a, b) for a, b in seen if a < end and start < b]
        if again:
            a, b = max(start, again[0][0]), min(end, again[0][1])
            what = f"{chunk} B DATA" if chunk and (b - a) == chunk else "part"
            return Finding("chunk_twice", f"{holds} input bytes {a} to {b - 1} twice (a {what}, again at "
                                          f"output byte {at + a - start})",
                           "a duplicate DATA (a resend of a packet already received: a number lower than "
                           "the one expected) is ignored, never written again: write a DATA only when its number "
                           "is the one expected"
                           if side != "client" else "ppcbc sent these bytes twice: does it send each DATA "
                                                     "once (resend only after MAX_WAIT without ACC)?",
                           {"from": a, "to": b, "again_at": at + a - start})
        if start > covered:
            later = [r for r in runs[i + 1:] if r[0] == "input" and r[1] < start]
            if later:
                return Finding("out_of_order", f"{holds} input bytes {start} to {end - 1} at output byte {at}, "
                                               f"before input bytes {covered} to {start - 1}",
                               "write (and send) DATA in packet-number order: a DATA that is not the next one "
                               "expected must not be written (udp: RJT; udpr: ignore an old one)",
                               {"at": at, "got_from": start, "expected_from": covered})
            return Finding("gap", f"{holds} input bytes up to {covered - 1} and then from {start} on: bytes "
                                  f"{covered} to {start - 1} ({start - covered} B) never came",
                           "a DATA was skipped: write each packet's bytes once, in packet-number order, and "
                           "let none through out of order", {"from": covered, "to": start})
        seen.append((start, end))
        covered = max(covered, end)
    return _prefix(expected, covered, chunk, side, running)
