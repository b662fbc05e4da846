"""Judged from the wire: the protocol's timing read from a test's capture, each finding with its frames.

    packets = exchange("captures/client-udpr-20KB-loss10.pcapng", port=5000)   # wirelab.capture
    for finding in judge_timing(packets, proto="udpr", max_wait_s=0.5, max_retransmits=5, sides={"client"}):
        print(finding)        # "DATA 3 resent 0.012 s after it was last sent (frames 7, 8): ..."

What ppcb.md asks of the clock, checked on the packets as they crossed the wire:

* ``early``: a udpr resend before MAX_WAIT without an answer (a client: since it last sent the
  packet; a server: since it last sent it or heard from the client). Timers fire late, never
  early, so a busy machine cannot cause it;
* ``late``: a udpr resend much after MAX_WAIT (more than 1.5 MAX_WAIT + 50 ms after both its last
  send and the peer's last packet): the wait is not bounded by MAX_WAIT;
* ``too_many``: a packet resent more than MAX_RETRANSMITS times (the session not given up when
  the assignment says: one send plus MAX_RETRANSMITS resends, the most any reading allows);
* ``gave_up_early``: a udpr client's packet without an answer sent fewer than MAX_RETRANSMITS
  times in all, then nothing more (the fewest any reading allows); a udpr server that never
  resends its last CONACC or ACC while the client is silent;
* ``after_reject``: a client's DATA (or CONN) after the CONRJT, or (udpr) the RJT, of its session.

``packets`` is ``wirelab.capture.exchange``'s table (time_s, kind, session, packet_no, frame).
``sides``: whose packets are judged (the student's: ``client``, ``server`` or both). ``ended_s``:
when the judged programs could send no more (their exit, or the test's end), in seconds after the
capture's first frame; ``exited``: the client ended on its own (it gave up). Without ``ended_s`` no
"gave up" finding is made: silence cannot be told from a capture cut short. Pure: a table in,
findings out; one finding per rule and side, the first instance's frames, and how many there were.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import transports

__all__ = ["WireFinding", "judge_timing", "wire_lines", "RULES"]

RULES = ("early", "late", "too_many", "gave_up_early", "after_reject")
_CLIENT = {"CONN", "DATA"}
_SERVER = {"CONACC", "CONRJT", "ACC", "RJT", "RCVD"}
EARLY = 0.9                  # × MAX_WAIT: sooner is early (capture times are a few µs apart at most)
LATE, LATE_S = 1.5, 0.05     # × MAX_WAIT + s: later is late (a loaded machine's timers run tens of ms late)
IN_FLIGHT_S = 0.002          # a DATA this soon after an RJT was sent before the RJT could be read


@dataclass(frozen=True)
class WireFinding:
    rule: str
    side: str                # whose packets: client or server
    sentence: str
    frames: tuple[int, ...]
    count: int = 1           # instances of the rule in the capture (the sentence tells the first)

    def __str__(self) -> str:
        frames = ", ".join(map(str, self.frames))
        more = f"; {self.count} such in all" if self.count > 1 else ""
        return f"{self.sentence} (frame{'s' if len(self.frames) > 1 else ''} {frames}{more})"

    def to_dict(self) -> dict:
        return {"rule": self.rule, "side": self.side, "sentence": self.sentence, "frames": list(self.frames),
                "count": self.count}


def _name(key: tuple) -> str:
    kind, number = key
    return kind if number is None else f"{kind} {number}"


def _listed(frames: list[int]) -> tuple[int, ...]:
    return tuple(frames) if len(frames) <= 8 else (*frames[:3], *frames[-2:])


class _Found:
    """Instances per (rule, side): the first one's sentence and frames, and a count."""

    def __init__(self):
        self.first: dict[tuple, tuple] = {}
        self.count: dict[tuple, int] = {}

    def add(self, rule: str, side: str, sentence: str, frames) -> None:
        self.first.setdefault((rule, side), (sentence, tuple(frames)))
        self.count[rule, side] = self.count.get((rule, side), 0) + 1

    def findings(self) -> list[WireFinding]:
        return [WireFinding(rule, side, sentence, frames, self.count[rule, side])
                for (rule, side), (sentence, frames) in self.first.items()]


def _rows(packets) -> list[dict]:
    rows = []
    for row in packets.to_dict("records"):
        kind, session = row.get("kind"), row.get("session")
        if kind not in _CLIENT | _SERVER or not isinstance(session, str):
            continue
        number = row.get("packet_no")
        number = None if number is None or number != number else int(number)
        rows.append({"t": float(row["time_s"]), "kind": kind, "session": session, "frame": int(row["frame"]),
                     "key": (kind, number if kind in ("DATA", "ACC", "RJT") else None)})
    return rows


def judge_timing(packets, *, proto: str, max_wait_s: float, max_retransmits: int,
                 sides: set[str] | frozenset[str] = frozenset({"client", "server"}),
                 ended_s: float | None = None, exited: bool = False, copies_s: float = 0.0,
                 jitter_s: float = 0.0) -> list[WireFinding]:
    """What the capture shows against ppcb.md's timing (module doc), for the ``sides`` judged. Where the
    link duplicates packets, ``copies_s``: a packet seen again this soon is the link's copy (dropped
    before judging); ``jitter_s``: how far the link may move a packet in time (the bounds widen by twice)."""
    found = _Found()
    sessions: dict[str, list[dict]] = {}
    seen: dict[tuple, float] = {}
    for row in _rows(packets):
        copy = (row["session"], row["key"])
        if copies_s and row["t"] - seen.get(copy, float("-inf")) < copies_s:
            continue                             # the link's copy of a packet just seen
        seen[copy] = row["t"]
        sessions.setdefault(row["session"], []).append(row)
    # a packet of another session may end a client (a reading: a foreign ACC), one of its own may not
    latest = sorted(((max((r["t"] for r in rows if r["kind"] in _SERVER), default=None), s)
                     for s, rows in sessions.items()), key=lambda pair: pair[0] or float("-inf"), reverse=True)
    for session, rows in sessions.items():
        heard = next((t for t, other in latest if other != session), None)
        if "client" in sides:
            _after_reject(rows, proto, found)
        if not transports.get(proto).retransmits:
            continue
        if "client" in sides:
            _client_resends(rows, max_wait_s, jitter_s, max_retransmits, ended_s, exited, heard, found)
        if "server" in sides:
            _server_resends(rows, max_wait_s, jitter_s, max_retransmits, ended_s, found)
    return found.findings()


def _late(gap: float, since_peer: float, wait: float, jitter: float) -> bool:
    bound = LATE * wait + LATE_S + 2 * jitter
    return gap > bound and since_peer > bound


def _client_resends(rows: list[dict], wait: float, jitter: float, most: int, ended_s, exited: bool,
                    heard_last: float | None, found: _Found) -> None:
    sends: dict[tuple, list[dict]] = {}
    heard = float("-inf")                       # the server's last packet of this session
    for row in rows:
        if row["kind"] in _SERVER:
            heard = row["t"]
            continue
        before = sends.setdefault(row["key"], [])
        if before:
            gap, what = row["t"] - before[-1]["t"], _name(row["key"])
            frames = (before[-1]["frame"], row["frame"])
            if gap < EARLY * wait - 2 * jitter:
                found.add("early", "client", f"ppcbc resent {what} {gap:.3f} s after it last sent it: a udpr "
                                             f"client resends only after MAX_WAIT ({wait:g} s) without an "
                                             "answer (an older ACC or a repeated CONACC is ignored)", frames)
            elif _late(gap, row["t"] - heard, wait, jitter):
                found.add("late", "client", f"ppcbc resent {what} {gap:.3f} s after it last sent it, with "
                                            f"nothing from the server for {row['t'] - heard:.3f} s: a udpr "
                                            f"client waits MAX_WAIT ({wait:g} s), then resends", frames)
        before.append(row)
    for key, sent in sends.items():
        if len(sent) > 1 + most:
            found.add("too_many", "client", f"ppcbc sent {_name(key)} {len(sent)} times: at most once plus "
                                            f"MAX_RETRANSMITS ({most}) resends, then it gives up with ERROR",
                      _listed([r["frame"] for r in sent]))
    client_rows = [r for r in rows if r["kind"] in _CLIENT]
    if not client_rows or ended_s is None:
        return
    last = client_rows[-1]
    sent = sends[last["key"]]
    if exited and heard_last is not None and heard_last > sent[-1]["t"]:
        return                  # it ended on another session's packet (a reading allows it), not a timeout
    answered = any(r["kind"] in _SERVER and r["t"] > sent[0]["t"] and _answers(r, last["key"]) for r in rows)
    waited = ended_s - sent[-1]["t"]
    if not answered and len(sent) < most and (exited or waited >= LATE * wait + LATE_S + 2 * jitter):
        times = "once" if len(sent) == 1 else f"{len(sent)} times"
        # (when it ended is known only to the poll that saw it: no figure for it)
        then = "ended without sending it again" if exited else \
            f"sent nothing more in the {waited:.1f} s that followed"
        found.add("gave_up_early", "client",
                  f"ppcbc sent {_name(last['key'])} {times}, got no answer, and {then}: a udpr client resends it "
                  f"after each MAX_WAIT ({wait:g} s) without an answer, MAX_RETRANSMITS ({most}) times, before it "
                  "gives up",
                  _listed([r["frame"] for r in sent]))


def _answers(row: dict, key: tuple) -> bool:
    """Whether server packet ``row`` answers the client's packet ``key``."""
    if key[0] == "CONN":
        return row["kind"] in ("CONACC", "CONRJT")
    return row["kind"] in ("RJT", "RCVD") or row["key"] == ("ACC", key[1])


def _server_resends(rows: list[dict], wait: float, jitter: float, most: int, ended_s, found: _Found) -> None:
    last_sent: dict[tuple, dict] = {}
    timed: dict[tuple, list[dict]] = {}        # the timer's resends of each packet (replies not counted)
    heard = float("-inf")                       # the client's last packet of this session
    for row in rows:
        if row["kind"] in _CLIENT:
            heard = row["t"]
            continue
        before = last_sent.get(row["key"])
        last_sent[row["key"]] = row
        if before is None or heard > before["t"]:
            continue                            # a first send, or a reply to what the client sent since
        timed.setdefault(row["key"], [before]).append(row)
        gap, what = row["t"] - before["t"], _name(row["key"])
        frames = (before["frame"], row["frame"])
        if gap < EARLY * wait - 2 * jitter:
            found.add("early", "server", f"ppcbs resent {what} {gap:.3f} s after it last sent it, with nothing "
                                         f"from the client since: a udpr server resends its last CONACC or ACC "
                                         f"after MAX_WAIT ({wait:g} s) of silence", frames)
        elif _late(gap, gap, wait, jitter):
            found.add("late", "server", f"ppcbs resent {what} {gap:.3f} s after it last sent it: a udpr server "
                                        f"resends after MAX_WAIT ({wait:g} s) of silence", frames)
    for key, sent in timed.items():
        if len(sent) > 1 + most:
            found.add("too_many", "server", f"ppcbs resent {_name(key)} {len(sent) - 1} times to a silent client: "
                                            f"at most MAX_RETRANSMITS ({most}) times, then the session is dropped",
                      _listed([r["frame"] for r in sent]))
    ends = any(r["kind"] in ("RCVD", "RJT", "CONRJT") for r in rows)
    server_rows = [r for r in rows if r["kind"] in ("CONACC", "ACC")]
    if ends or not server_rows or ended_s is None:
        return
    last = server_rows[-1]
    silent = ended_s - max(last["t"], heard)
    # after the client's last packet: at most an answer at once, then (if ppcbs keeps to ppcb.md) resends
    resent = [r for r in server_rows if r["key"] == last["key"] and r["t"] - heard >= EARLY * wait - 2 * jitter]
    if not resent and silent >= LATE * wait + LATE_S + 2 * jitter:
        found.add("gave_up_early", "server",
                  f"ppcbs sent {_name(last['key'])}, the client fell silent, and ppcbs did not send it again in "
                  f"the {silent:.1f} s of silence that followed: a udpr server resends its last CONACC or ACC "
                  f"after MAX_WAIT ({wait:g} s) of silence, up to MAX_RETRANSMITS ({most}) times", (last["frame"],))


def _after_reject(rows: list[dict], proto: str, found: _Found) -> None:
    """A client goes on after CONRJT (every transport) or, over udpr, after RJT (udp and tcp clients send
    every DATA without waiting, and read an RJT only when they wait for RCVD)."""
    stops = {"CONRJT"} | ({"RJT"} if transports.get(proto).acked else set())
    rejected = None
    for row in rows:
        if row["kind"] in stops and rejected is None:
            rejected = row
        elif rejected is not None and row["kind"] in _CLIENT and row["t"] > rejected["t"] + IN_FLIGHT_S:
            found.add("after_reject", "client",
                      f"ppcbc sent {_name(row['key'])} {row['t'] - rejected['t']:.3f} s after the server's "
                      f"{rejected['kind']}: after {rejected['kind']} a client prints ERROR and ends",
                      (rejected["frame"], row["frame"]))
            return


def wire_lines(outcome) -> list[str]:
    """An outcome's wire findings (``details["wire"]``, as ``to_dict`` saved them), one line each."""
    return [str(WireFinding(f["rule"], f["side"], f["sentence"], tuple(f["frames"]), f.get("count", 1)))
            for f in (outcome.details or {}).get("wire", [])]
