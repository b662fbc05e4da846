"""A PPCB exchange as a text ladder diagram: the client and the server as two columns, each packet an arrow.

    >>> print("\\n".join(ladder_text(exchange("run.pcapng", port=5000))))     # doctest: +SKIP
        time  frame  client 10.77.0.1:40000                 server 10.77.0.2:5000
       0.000      1  |-- CONN 18 B ------------------------>|
       0.001      2  |<------------------------- CONACC ----|
       0.002      3  |-- DATA 0, 1000 B ------------------->|
       0.503      4  |-- DATA 0, 1000 B ------------------->|  resend 1
       0.504      5  |<----------------------------- RJT 0 -|  RJT

Each arrow says the packet's type, its number and length where it has them, and
its time and frame (``wirelab.capture.exchange``'s table). A packet sent again
is marked ``resend N``; RJT and CONRJT are marked; TCP's SYN/FIN/RST, ICMP and
bytes that are no PPCB packet get arrows too. ``marks`` puts a note at a frame
(a grader's finding); ``expected`` draws what the program should have done where it went wrong, as a
dashed arrow ("expected: DATA 3 resent after MAX_WAIT"). Long exchanges are folded so the text fits a course
platform's message: runs of in-order DATA ⇄ ACC become one line, and beyond
``max_lines`` the beginning and the end are kept (where things go wrong).
Pure: the table in, a drawing out (``ladder``: JSON-ready steps, which a grader saves), and lines of
text drawn from it (``ladder_svg``, in ``ladder_svg.py``, draws the same steps as a picture). The grader (below ``viz`` in the
layers) draws it for every failed test; ``wirelab.viz.ladder`` gives it to the
capture explorer.
"""
from __future__ import annotations

from ..._plain import is_frame

__all__ = ["ladder", "ladder_text"]

_CLIENT = {"CONN", "DATA"}
_HEADER = {"CONN": 18, "CONACC": 9, "CONRJT": 9, "ACC": 17, "RJT": 17, "RCVD": 9}   # ppcb.md's packet table
_NUMBERED = {"DATA", "ACC", "RJT"}


def _number(value) -> int | None:
    return None if value is None or value != value else int(value)


def _label(row: dict) -> str:
    kind, number = row["kind"], _number(row.get("packet_no"))
    if kind == "DATA":
        size = _number(row.get("data_len"))
        return f"DATA {number}" + (f", {size} B" if size is not None else "")
    if kind in _HEADER:
        return f"{kind} {number}" if kind in _NUMBERED and number is not None else kind
    return str(kind)


def _arrow(label: str, rightwards: bool, width: int) -> str:
    inner = width - 2
    label = label[:inner - 6]
    if rightwards:
        return "|-- " + label + " " + "-" * (inner - len(label) - 6) + ">|"
    return "|<" + "-" * (inner - len(label) - 6) + " " + label + " --|"


def _ends(rows: list[dict]) -> tuple[str, str]:
    """(the client's address, the server's): the first CONN's, else the first client-kind packet's."""
    first = next((r for r in rows if r["kind"] == "CONN"), None) or \
        next((r for r in rows if r["kind"] in _CLIENT), None) or (rows[0] if rows else {"src": "", "dst": ""})
    return str(first["src"]), str(first["dst"])


def _rightwards(row: dict, client: str, server: str) -> bool:
    src, dst = str(row["src"]), str(row["dst"])
    if row["kind"] in _CLIENT or row["kind"] in _HEADER:
        return row["kind"] in _CLIENT
    host = server.rsplit(":", 1)[0]
    return dst == server or dst == host or (src != server and src.rsplit(":", 1)[0] != host)


def _steps(rows: list[dict], client: str, server: str, marks: dict) -> list[dict]:
    """One step per packet: its time, frame, label, direction and notes; ``quiet``: an in-order DATA or its ACC,
    neither resent nor marked nor another client's (what a long run folds)."""
    sent: dict[tuple, int] = {}
    out = []
    for row in rows:
        right = _rightwards(row, client, server)
        key = (row.get("session"), row["kind"], _number(row.get("packet_no")), str(row["src"]), str(row["dst"]))
        sent[key] = sent.get(key, 0) + 1
        notes = []
        if sent[key] > 1 and (row["kind"] in _HEADER or row["kind"] in _CLIENT):
            notes.append(f"resend {sent[key] - 1}")
        if row["kind"] in ("RJT", "CONRJT"):
            notes.append(row["kind"])
        frame = _number(row.get("frame"))
        if frame in marks:
            notes.append(str(marks[frame]))
        others = right and str(row["src"]) != client or not right and str(row["dst"]) != client
        label = _label(row) + (f" ({row['src'] if right else row['dst']})" if others else "")
        out.append({"step": "packet", "time_s": round(float(row["time_s"]), 6), "frame": frame, "label": label,
                    "right": right, "notes": notes, "kind": str(row["kind"]),
                    "packet_no": _number(row.get("packet_no")),
                    "quiet": not notes and not others and row["kind"] in ("DATA", "ACC")})
    return out


def _with_expected(steps: list[dict], expected) -> list[dict]:
    """``expected`` steps (dicts: time_s, label, right: True client → server, False back, None a note on
    ``side``'s line) put in time order among the packets; never folded."""
    out = list(steps)
    for e in sorted(expected or (), key=lambda e: e["time_s"]):
        step = {"step": "expected", "time_s": round(float(e["time_s"]), 6), "label": str(e["label"]),
                "right": e.get("right"), "side": e.get("side", "client"), "quiet": False}
        at = next((i for i, s in enumerate(out) if s["time_s"] > step["time_s"]), len(out))
        out.insert(at, step)
    return out


def _fold(steps: list[dict]) -> list[dict]:
    """Runs of more than four quiet steps: the first two, one step saying what was folded, the last two."""
    out, run = [], []

    def flush():
        if len(run) > 4:
            middle = run[2:-2]
            data = [s["packet_no"] for s in middle if s["kind"] == "DATA" and s["packet_no"] is not None]
            span = f"DATA {min(data)}..{max(data)} and their ACCs" if data else "ACCs"
            out.extend(run[:2])
            out.append({"step": "fold", "time_s": middle[0]["time_s"], "to_s": middle[-1]["time_s"],
                        "text": f"... {len(middle)} packets: {span}, {middle[0]['time_s']:.3f} to "
                                f"{middle[-1]['time_s']:.3f} s ..."})
            out.extend(run[-2:])
        else:
            out.extend(run)
        run.clear()
    for step in steps:
        if step.get("quiet"):
            run.append(step)
            continue
        flush()
        out.append(step)
    flush()
    return out


def ladder(packets, *, max_lines: int = 60, marks: dict | None = None, expected=()) -> dict:
    """The drawing of the exchange ``packets`` (``wirelab.capture.exchange``'s table), JSON-ready:
    ``{"client", "server", "steps"}``, each step a packet (``time_s``, ``frame``, ``label``, ``right``,
    ``notes``), an ``expected`` one, a ``fold`` of quiet packets or a ``gap`` (beyond ``max_lines``, the
    beginning and the end are kept). ``ladder_text`` and ``ladder_svg`` draw it; a grader saves it."""
    rows = packets.to_dict("records") if is_frame(packets) else list(packets)
    client, server = _ends(rows)
    steps = _fold(_with_expected(_steps(rows, client, server, marks or {}), expected))
    if len(steps) > max_lines:
        head, tail = max_lines // 3, max_lines - max_lines // 3 - 1
        steps = steps[:head] + [{"step": "gap", "time_s": steps[head]["time_s"],
                                 "text": f"... {len(steps) - head - tail} lines not shown ..."}] + steps[-tail:]
    for step in steps:
        step.pop("quiet", None)
    return {"client": client, "server": server, "steps": steps}


def _is_drawing(value) -> bool:
    return isinstance(value, dict) and "steps" in value


def _dashed(label: str, rightwards: bool | None, width: int) -> str:
    """A dashed arrow with ``label`` beside it (it says more than a packet's label: never cut)."""
    if rightwards is None:
        return "|   " + label
    fill = ("- " * width)[:width - 4].rstrip()
    return ("|" + fill + " >|" if rightwards else "|< " + fill + "|") + "  " + label


def ladder_text(packets, *, width: int = 44, max_lines: int = 60, marks: dict | None = None,
                expected=()) -> list[str]:
    """The exchange ``packets`` (``wirelab.capture.exchange``'s table, or a ``ladder`` drawing) as lines of
    text, at most ``max_lines`` of them (plus the heading), arrows ``width`` characters wide; ``marks``: a
    note per frame; ``expected``: what the program should have done, as dashed arrows (see ``ladder``)."""
    drawing = packets if _is_drawing(packets) else ladder(packets, max_lines=max_lines, marks=marks,
                                                          expected=expected)
    client, server = drawing["client"], drawing["server"]
    heading = f"{'time (s)':>8}  {'frame':>5}  " + f"client {client}".ljust(width - 4) + f"  server {server}"
    if not drawing["steps"]:
        return [heading, "(no PPCB packet in the capture)"]
    lines = []
    for s in drawing["steps"]:
        if s["step"] == "packet":
            frame = "" if s["frame"] is None else s["frame"]
            lines.append(f"{s['time_s']:8.3f}  {frame:>5}  {_arrow(s['label'], s['right'], width)}"
                         + (f"  {'; '.join(s['notes'])}" if s["notes"] else ""))
        elif s["step"] == "expected":
            lines.append(f"{s['time_s']:8.3f}  {'':>5}  {_dashed(s['label'], s['right'], width)}")
        elif s["step"] == "fold":
            lines.append(f"{'':8}  {'':5}  |   {s['text']}")
        else:
            lines.append(f"{'':8}  {'':5}  {s['text']}")
    return [heading, *lines]
