"""Reports: per submission ``report.json`` and ``report.html``; per class ``class.csv``,
``class.parquet`` and ``index.html`` (pass rate per test: which parts of the specification
the class finds hard).

    report_dir/
      index.html  class.csv  class.parquet  class.json  results.json (every field, load_graded)
      <submission>/report.json  report.html  captures/<test>.pcapng (failed tests only)

HTML is written with the standard library (escaped f-strings), one file each,
no scripts: it opens anywhere, and a grader can mail it.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from .catalogue import Catalogue
from .outcome import Graded, json_summary, save_graded
from .timing import wire_lines

__all__ = ["class_table", "write_reports", "write_submission_report", "pass_rates"]

_COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "timeout": "#ef6c00", "error": "#6a1b9a", "skipped": "#757575"}
_STYLE = """<style>body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f5f5f5}.st{color:#fff;border-radius:3px;padding:1px 6px;font-weight:600}
.bar{background:#eee;width:160px;height:12px}.bar div{background:#2e7d32;height:12px}.num{text-align:right}
small{color:#666}.ladder-svg{overflow-x:auto;margin:6px 0}</style>"""


def _status(status: str) -> str:
    return f'<span class="st" style="background:{_COLOURS.get(status, "#555")}">{status}</span>'


def _rate(value) -> str:
    if value is None or value != value:
        return ""
    return f"{value / 1e6:.3g} Mbit/s"


def write_submission_report(graded: Graded, folder: Path, catalogue: Catalogue) -> Path:
    """``report.json`` (everything) and ``report.html`` (what a student reads) for one submission."""
    folder.mkdir(parents=True, exist_ok=True)
    data = graded.to_dict()
    data["assignment"] = vars(catalogue.assignment)
    (folder / "report.json").write_text(json.dumps(data, indent=1, default=str))
    from ..capture.ladder import ladder_svg      # deferred: the capture package is heavy to import
    checks = {t.id: t.checks for t in catalogue.tests}
    rows = []
    for t in graded.tests:
        capture = f'<a href="{html.escape(t.capture)}">pcapng</a>' if t.capture else ""
        measured = (f"<b>flagged</b><br><small>{html.escape(t.goodput_flag)}</small>" if t.goodput_flag else
                    f"{_rate(t.goodput_bps)}<br><small>{html.escape(t.goodput_at or '')}</small>")
        if t.completion_s is not None:
            measured += f"<br>completion {t.completion_s:.3g} s<br><small>{html.escape(t.completion_at or '')}</small>"
        predicted = _rate(t.pred_goodput_bps)
        reading = f"<br><small>reading taken: {html.escape(t.reading)}</small>" if t.reading else ""
        ladder, drawing = (t.details or {}).get("ladder"), (t.details or {}).get("ladder_drawing")
        if drawing and t.status != "pass":
            reading += f"<div class=ladder-svg>{ladder_svg(drawing)}</div>"
        if ladder and t.status != "pass":
            reading += (f"<details{'' if drawing else ' open'}><summary>what crossed the wire"
                        f"{' (as text)' if drawing else ''}</summary><pre class=ladder>"
                        + html.escape("\n".join(ladder)) + "</pre></details>")
        if t.status == "pass":              # (a test that did not pass has them in its reason)
            reading += "".join(f"<br><small>on the wire (no points lost): {html.escape(line)}</small>"
                               for line in wire_lines(t))
        rows.append(f"<tr><td><b>{html.escape(t.id)}</b><br><small>{html.escape(checks.get(t.id, ''))}</small></td>"
                    f"<td>{_status(t.status)}</td><td class=num>{t.points:g}/{t.max_points:g}</td>"
                    f"<td>{html.escape(t.reason)}{reading}</td><td>{html.escape(t.link)}</td>"
                    f"<td>{measured}</td>"
                    f"<td>{predicted}<br><small>{html.escape(t.pred_note or '')}</small></td><td>{capture}</td></tr>")
    build = (f"<p><b>Build failed:</b></p><pre>{html.escape(graded.build_log[-3000:])}</pre>"
             if graded.build_error else "")
    counts = ", ".join(f"{n} {s}" for s, n in graded.counts().items() if n)
    used = graded.constants or {}
    constants = (f"MAX_WAIT {used['max_wait_s']:g} s, MAX_RETRANSMITS {used['max_retransmits']} "
                 f"({html.escape(used['note'])})" if used else
                 f"MAX_WAIT {catalogue.assignment.max_wait_s:g} s, MAX_RETRANSMITS {catalogue.assignment.max_retransmits}")
    warnings = (f"<p><b>Compiler warnings ({len(graded.warnings)}):</b></p><pre>"
                + html.escape("\n".join(graded.warnings[:20])) + "</pre>") if graded.warnings else ""
    page = (f"<!doctype html><meta charset=utf-8><title>{html.escape(graded.name)}: {graded.score:g} %</title>{_STYLE}"
            f"<h1>{html.escape(graded.name)}: {graded.score:g} %</h1>"
            f"<p>{graded.points:g} of {graded.max_points:g} points; {counts}; language {html.escape(graded.language)}; "
            f"graded in {graded.duration_s:.0f} s. {constants}. Open a capture in Wireshark "
            f"(<code>Decode As… UDP/TCP port {catalogue.assignment.port}</code>, or scapy's PPCB layer).</p>"
            + (f"<p><small>Each program ran in: {html.escape(graded.confinement)}.</small></p>"
               if graded.confinement else "")
            + f"{build}{warnings}"
            "<table><tr><th>test</th><th>status</th><th>points</th><th>reason</th><th>link</th>"
            "<th>measured (goodput, completion)</th><th>goodput (model)</th><th>capture</th></tr>"
            + "".join(rows) + "</table>")
    target = folder / "report.html"
    target.write_text(page, encoding="utf-8")
    return target


def class_table(graded: list[Graded]):
    """One row per (submission, test): every field of the outcome, plus the submission's score."""
    # start-up: pandas only when class_table() runs
    import pandas as pd
    rows = []
    for g in graded:
        for t in g.tests:
            row = t.to_dict()
            row.pop("details")
            row["test"] = row.pop("id")
            rows.append({"submission": g.name, "score": g.score, "language": g.language, **row})
    return pd.DataFrame(rows)


def pass_rates(table):
    """Per test: how many submissions passed it, of how many (hardest first)."""
    grouped = table.assign(passed=table["status"].eq("pass")).groupby(["test", "topic", "role", "proto"],
                                                                       sort=False)
    rates = grouped["passed"].agg(passed="sum", submissions="count").reset_index()
    rates["pass_rate"] = rates["passed"] / rates["submissions"]
    return rates.sort_values(["pass_rate", "test"], kind="stable").reset_index(drop=True)


def write_reports(graded: list[Graded], report_dir: str | Path, catalogue: Catalogue) -> dict[str, Path]:
    """Every report of a grading run; returns the class files written."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    for g in graded:
        write_submission_report(g, report_dir / g.name, catalogue)
    table = class_table(graded)
    files = {"csv": report_dir / "class.csv", "parquet": report_dir / "class.parquet",
             "json": report_dir / "class.json", "html": report_dir / "index.html"}
    table.to_csv(files["csv"], index=False)
    table.to_parquet(files["parquet"], index=False)
    files["json"].write_text(json.dumps(json_summary(graded), indent=1))
    files["results"] = save_graded(graded, report_dir / "results.json")
    files["html"].write_text(_class_page(graded, table, catalogue), encoding="utf-8")
    return files


def _class_page(graded: list[Graded], table, catalogue: Catalogue) -> str:
    people = "".join(
        f'<tr><td><a href="{html.escape(g.name)}/report.html">{html.escape(g.name)}</a></td>'
        f"<td class=num>{g.score:g} %</td><td>{html.escape(g.language)}</td>"
        f"<td>{', '.join(f'{n} {s}' for s, n in g.counts().items() if n)}</td>"
        f"<td>{html.escape(g.build_error or '')}</td></tr>" for g in sorted(graded, key=lambda g: -g.score))
    checks = {t.id: t.checks for t in catalogue.tests}
    tests = "".join(
        f"<tr><td><b>{html.escape(r.test)}</b><br><small>{html.escape(checks.get(r.test, ''))}</small></td>"
        f"<td>{html.escape(r.topic)}</td><td><div class=bar><div style='width:{100 * r.pass_rate:.0f}%'></div></div></td>"
        f"<td class=num>{r.passed}/{r.submissions}</td></tr>" for r in pass_rates(table).itertuples())
    topics = table.assign(passed=table["status"].eq("pass")).groupby("topic")["passed"].mean().sort_values()
    topic_rows = "".join(f"<tr><td>{html.escape(k)}</td><td><div class=bar><div style='width:{100 * v:.0f}%'>"
                         f"</div></div></td><td class=num>{100 * v:.0f} %</td></tr>" for k, v in topics.items())
    return (f"<!doctype html><meta charset=utf-8><title>Class report</title>{_STYLE}<h1>Class report</h1>"
            f"<p>{len(graded)} submissions, {len(catalogue.tests)} tests, {catalogue.total_points:g} points. "
            "Files: class.csv, class.parquet (one row per submission and test), class.json.</p>"
            "<h2>Submissions</h2><table><tr><th>submission</th><th>score</th><th>language</th><th>tests</th>"
            f"<th>build</th></tr>{people}</table>"
            f"<h2>Pass rate by part of the specification</h2><table>{topic_rows}</table>"
            "<h2>Pass rate per test, hardest first</h2><table><tr><th>test</th><th>topic</th><th>pass rate</th>"
            f"<th>passed</th></tr>{tests}</table>")
