"""A leaderboard of goodput ÷ prediction: how close a submission's transfers come to what the
model (``grade/prediction.py``) says the link allows, the model's column as a course feature.

Each ratio is one passed transfer test's measured goodput over the model's goodput for exactly
that link and DATA size; a test with no prediction (a link without a rate), or whose
measurement is flagged as above the link's physics, gives none. A submission's entries are
the median ratio over all its transfers and per protocol (the median, because a few short
lossy transfers swing far either way with the loss pattern), and how many transfers were
compared. Higher ranks first, as Gradescope sorts by default: more goodput for the same link.
"""
from __future__ import annotations

import statistics

from ..catalogue import PROTOS
from ..outcome import Graded, Outcome

__all__ = ["ratios", "entries", "table", "MEDIAN", "COMPARED"]

MEDIAN = "goodput ÷ model (median)"
COMPARED = "transfers compared"


def _ratio(t: Outcome) -> float | None:
    if t.status != "pass" or t.goodput_flag or not t.goodput_bps or not t.pred_goodput_bps:
        return None
    return t.goodput_bps / t.pred_goodput_bps


def ratios(g: Graded) -> dict[str, float]:
    """test id → measured ÷ predicted goodput, for every transfer that has both."""
    return {t.id: r for t in g.tests if (r := _ratio(t)) is not None}


def entries(g: Graded) -> list[dict]:
    """Gradescope's leaderboard entries for ``g`` (``name``, ``value``; none when nothing compares)."""
    found = ratios(g)
    if not found:
        return []
    protos = {t.id: t.proto for t in g.tests}
    rows = [{"name": MEDIAN, "value": round(statistics.median(found.values()), 3)}]
    for proto in PROTOS:
        mine = [r for test, r in found.items() if protos[test] == proto]
        if mine:
            rows.append({"name": f"{proto} goodput ÷ model", "value": round(statistics.median(mine), 3)})
    rows.append({"name": COMPARED, "value": len(found)})
    return rows


def table(graded: list[Graded]):
    """The class's leaderboard: one row per submission, best median first (none: at the end)."""
    # start-up: pandas only when table() runs
    import pandas as pd
    rows = [{"submission": g.name, **{e["name"]: e["value"] for e in entries(g)}} for g in graded]
    frame = pd.DataFrame(rows)
    if MEDIAN not in frame:
        frame[MEDIAN] = float("nan")
    frame = frame.sort_values(MEDIAN, ascending=False, na_position="last", kind="stable").reset_index(drop=True)
    frame.insert(0, "rank", range(1, len(frame) + 1))
    return frame
