"""A PPCB exchange as a ladder picture (SVG): the same drawing as ``ladder_text``, for an HTML page or a notebook.

    >>> svg = ladder_svg(exchange("run.pcapng", port=5000))          # doctest: +SKIP
    >>> from IPython.display import SVG; SVG(svg)                     # doctest: +SKIP

Client and server are two vertical lines; each packet is an arrow between them,
one row per packet in the order they crossed (like the text: time is written
beside each row, not scaled, so a resend after MAX_WAIT and a burst of DATA both
stay readable). Resends are orange, rejections red, another client's packets
grey; a grader's marks stand at the right; what the program should have done
is a dashed green arrow ("expected: ..."); folded runs and cut lines say what
they hold. Pure: a table or a ``ladder`` drawing in, the SVG text out, no
plotting library (the grader, below ``viz``, writes it into its HTML report).
"""
from __future__ import annotations

from html import escape

from .drawing import _is_drawing, ladder

__all__ = ["ladder_svg"]

ROW = 22                         # px per step
TIME_X, FRAME_X, CLIENT_X, SERVER_X, NOTE_X = 8, 72, 170, 530, 542
TOP = 44                         # the heading's height
COLOURS = {"send": "#1f5fa8", "answer": "#555555", "resend": "#d9770b", "reject": "#c0392b",
           "other": "#999999", "expected": "#1e8449", "mark": "#c0392b"}


def _colour(step: dict) -> str:
    notes = " ".join(step.get("notes", ()))
    if "RJT" in step.get("kind", ""):
        return COLOURS["reject"]
    if "resend" in notes:
        return COLOURS["resend"]
    if "(" in step["label"]:                       # another client's packet: "CONN (10.77.0.1:40001)"
        return COLOURS["other"]
    return COLOURS["send"] if step["right"] else COLOURS["answer"]


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 11, colour: str = "#222",
          style: str = "") -> str:
    return (f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}" text-anchor="{anchor}" fill="{colour}"'
            f'{f" font-style={chr(34)}{style}{chr(34)}" if style else ""}>{escape(text)}</text>')


def _arrow(y: float, right: bool, colour: str, label: str, dashed: bool = False) -> list[str]:
    """A packet's arrow, its label above it; a dashed one (what was expected) has its label at the right, where
    a long sentence has room."""
    x1, x2 = (CLIENT_X, SERVER_X) if right else (SERVER_X, CLIENT_X)
    head = x2 - 8 if right else x2 + 8
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    said = (_text(NOTE_X, y + 4, label, colour=colour, style="italic") if dashed else
            _text((CLIENT_X + SERVER_X) / 2, y - 4, label, anchor="middle", colour=colour))
    return [f'<line x1="{x1}" y1="{y:.0f}" x2="{head}" y2="{y:.0f}" stroke="{colour}" stroke-width="1.6"{dash}/>',
            f'<polygon points="{x2},{y:.0f} {head},{y - 4:.0f} {head},{y + 4:.0f}" fill="{colour}"/>', said]


def ladder_svg(packets, *, max_lines: int = 60, marks: dict | None = None, expected=(), title: str = "") -> str:
    """The exchange ``packets`` (``wirelab.capture.exchange``'s table, or a ``ladder`` drawing) as SVG text;
    ``marks``, ``expected`` and ``max_lines`` as for ``ladder``; ``title``: said above the heading."""
    drawing = packets if _is_drawing(packets) else ladder(packets, max_lines=max_lines, marks=marks,
                                                          expected=expected)
    steps = drawing["steps"] or [{"step": "gap", "time_s": 0.0, "text": "(no PPCB packet in the capture)"}]
    beside = ["; ".join(s.get("notes", ())) if s["step"] == "packet" else
              s["label"] if s["step"] == "expected" and s.get("right") is not None else "" for s in steps]
    width = NOTE_X + 10 + max([len(text) * 7 for text in beside] + [120])
    height = TOP + ROW * (len(steps) + 1) + (16 if title else 0)
    top = TOP + (16 if title else 0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="monospace" role="img">',
             f"<title>{escape(title or 'PPCB exchange')}: client {escape(drawing['client'])}, "
             f"server {escape(drawing['server'])}</title>",
             f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        parts.append(_text(TIME_X, 14, title, size=12))
    parts += [_text(TIME_X, top - 14, "time (s)", colour="#555"), _text(FRAME_X, top - 14, "frame", colour="#555"),
              _text(CLIENT_X, top - 24, "client", anchor="middle", size=12),
              _text(CLIENT_X, top - 12, drawing["client"], anchor="middle", size=10, colour="#555"),
              _text(SERVER_X, top - 24, "server", anchor="middle", size=12),
              _text(SERVER_X, top - 12, drawing["server"], anchor="middle", size=10, colour="#555")]
    bottom = top + ROW * len(steps)
    for x in (CLIENT_X, SERVER_X):
        parts.append(f'<line x1="{x}" y1="{top - 6}" x2="{x}" y2="{bottom}" stroke="#333" stroke-width="2"/>')
    for i, step in enumerate(steps):
        y = top + ROW * i + ROW * 0.7
        kind = step["step"]
        if kind in ("packet", "expected"):
            parts.append(_text(TIME_X, y + 4, f"{step['time_s']:.3f}", colour="#555"))
        if kind == "packet":
            colour = _colour(step)
            if step.get("frame") is not None:
                parts.append(_text(FRAME_X, y + 4, str(step["frame"]), colour="#555"))
            parts += _arrow(y, step["right"], colour, step["label"])
            if step.get("notes"):
                marked = any(n.startswith("<<") for n in step["notes"])
                parts.append(_text(NOTE_X, y + 4, "; ".join(step["notes"]),
                                   colour=COLOURS["mark"] if marked else colour))
        elif kind == "expected" and step.get("right") is not None:
            parts += _arrow(y, step["right"], COLOURS["expected"], step["label"], dashed=True)
        elif kind == "expected":                  # a note on one side's line: what should have happened
            x = CLIENT_X if step.get("side", "client") == "client" else SERVER_X
            parts += [f'<rect x="{x - 6}" y="{y - 12:.0f}" width="{SERVER_X - CLIENT_X + 12}" height="18" rx="4" '
                      f'fill="none" stroke="{COLOURS["expected"]}" stroke-dasharray="6 4"/>',
                      _text((CLIENT_X + SERVER_X) / 2, y + 1, step["label"], anchor="middle",
                            colour=COLOURS["expected"], style="italic")]
        else:                                     # a fold of quiet packets, or lines not shown
            parts += [f'<rect x="{CLIENT_X - 40}" y="{y - 8:.0f}" width="{SERVER_X - CLIENT_X + 80}" height="16" '
                      'fill="white"/>',
                      _text((CLIENT_X + SERVER_X) / 2, y + 4, step["text"], anchor="middle", colour="#777",
                            style="italic")]
    parts.append("</svg>")
    return "\n".join(parts)
