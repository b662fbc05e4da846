"""What ``wirelab analyze`` prints, as plain data and as text: importable from a notebook.

``report(path)`` reads a capture file (numpy columns, no pandas: on a small capture
importing pandas would cost more than all the rest) or a dataset folder written by
``wirelab capture convert`` (DuckDB, out of core), and gathers the statistics one floor
down: the conversation table (``conversations``), Wireshark's TCP analysis flags
(``tcp_sequence``), the overhead read from the wire and, given the link's rate, the
model's goodput beside the measured one (``overhead``), PPCB sessions (``ppcb_reader``),
nttcp's UDP end markers (``udp_ending``), RFC 6349's metrics of the main TCP transfer
(``rfc6349``) and where the losses happened relative to the capture point
(``stats.losses``; ``sql.losses`` for a dataset). ``render(report)`` is the text the
command prints. Nothing here is computed that those modules do not compute: this module
only assembles.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .. import units
from ..errors import CaptureError, WirelabError
from .conversations import flow_table, _conversations, conversations_of, streams_of
from .overhead import overhead_of, predict_from_overhead
from .ppcb_reader import packets_of, ppcb_summary
from .reader import jit
from .reader.frames import Frames
from .reader.loader import _buffer, read_part
from .rfc6349 import rfc6349_of
from .stats.losses import handshakes_of, loss_places_of, where_summary
from .tcp_sequence import tcp_flags_of, FLAGS
from .udp_ending import udp_end_markers
from .._plain import is_numpy_scalar
from .filter.sql import STREAMS
from .sql.udp_ending import end_marker_rows

__all__ = ["report", "render"]


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if is_numpy_scalar(value):
        return value.item()
    return value


def _ppcb(frames, buffer) -> dict:
    """PPCB sessions as the kit reads them (the rules of its Wireshark dissector), or why not."""
    try:
        return {"sessions": ppcb_summary(packets_of(frames, buffer)), "note": None}
    except WirelabError as err:
        return {"sessions": [], "note": f"not decoded: {err}"}


def report(path, *, rate_bps: float | None = None, wire: str = "emulated", top: int = 10,
           ppcb: bool = True, filter: str | None = None) -> dict:
    """Everything ``analyze`` prints, as plain data (a capture file, or a dataset folder
    written by ``wirelab capture convert``: then DuckDB does the work, out of core).

    A file is read into numpy columns and analysed there, without pandas: on a small capture
    importing pandas would cost more than all the rest (bench/bench_analyze.py times the
    command beside tshark's conversation table).

    ``filter``: a Wireshark display filter (``capture.filter``); the report is then of the
    frames it keeps. The TCP analysis flags are still Wireshark's on the whole capture (a
    retransmission stays one when its original is filtered out), counted on the frames kept."""
    chosen = _compile(filter)
    if Path(path).is_dir():
        from .sql.dataset import INFO             # (start-up: pandas and DuckDB for a dataset only)
        if (Path(path) / INFO).is_file():
            return _dataset_report(path, rate_bps, wire, top, chosen)
    # numpy only: the columns, then the analyses on them
    with jit.one_shot(Path(path).stat().st_size if Path(path).is_file() else 0):   # numba: if it pays here
        part, info = read_part(path)
        frames = Frames.of_part(part, info)
    flags, conv, a_to_b = tcp_flags_of(frames)
    read = len(frames)
    whole = frames
    shakes = handshakes_of(frames, conv, a_to_b)
    buffer = _buffer(path)
    places = loss_places_of(frames, flags, conv, a_to_b, buffer=buffer, shakes=shakes)
    if chosen is not None:                        # (pandas: the filter reads read_capture's table)
        # start-up: numpy, pandas, pyarrow only when report() runs
        from .reader.columns import frame_from_part
        keep = chosen.mask(frame_from_part(part, info))
        frames, conv, a_to_b = frames.take(keep), conv[keep], a_to_b[keep]
        flags = {name: v[keep] for name, v in flags.items()}
    table = flow_table(frames)
    if chosen is not None:
        _number_as_whole(table, whole, frames, keep)
    flows = [{name: values[i] for name, values in table.items()} for i in range(len(table["packets"]))[:top]]
    out = _report(path, frames.info, len(frames), flows, {name: int(v.sum()) for name, v in flags.items()},
                  lambda: overhead_of(frames, retransmission=flags["retransmission"]), rate_bps, wire)
    if chosen is not None:
        out.update(filter=chosen.text, packets_read=read)
    out["losses"] = _losses(whole, places, shakes, None if chosen is None else keep)
    if ppcb:
        out["ppcb"] = _ppcb(frames, buffer)
    out["udp_end_markers"] = _end_markers(frames)
    out["rfc6349"] = _rfc6349(rfc6349_of(frames, flags, conv, a_to_b, achievable_bps=out.get("predicted_goodput_bps")))
    return out


def _losses(f: Frames, places: dict, shakes: dict, keep) -> dict:
    """The retransmissions (of the frames ``keep`` keeps) counted by where their originals were
    lost, and the handshakes' round trips split at the capture point, JSON-ready."""

    mine = np.ones(places["row"].size, dtype=bool) if keep is None else np.asarray(keep)[places["row"]]
    seen = np.ones(shakes["syn"].size, dtype=bool) if keep is None else np.asarray(keep)[shakes["syn"]]
    names = f.addresses + ["?"]
    rows = [{"client": f"{names[f.src[s]]}:{f.sport[s]}", "server": f"{names[f.dst[s]]}:{f.dport[s]}",
             "server_side_s": float(far), "client_side_s": float(near), "initial_rtt_s": float(far + near)}
            for s, far, near in zip(shakes["syn"][seen], shakes["server_side"][seen], shakes["client_side"][seen])]
    return {**where_summary(places["where"][mine]), "handshakes": rows, "dsack_read": True}


def _rfc6349(metrics: dict | None):
    return json.loads(json.dumps(metrics, default=_clean))


def _end_markers(frames) -> list[dict]:
    """nttcp's 4-byte UDP end markers (``capture.udp_ending``), JSON-ready."""
    return json.loads(json.dumps(udp_end_markers(frames), default=_clean))


def _number_as_whole(table: dict, whole: Frames, kept: Frames, keep) -> None:
    """The narrowed flow table's ``conv`` and ``stream`` as the whole capture numbers them (the
    filter ``tcp.stream == 1`` keeps stream 1, not a new stream 0)."""

    conv_all, _, begins = _conversations(whole, True)
    stream_all = streams_of(whole, begins) if begins.size else np.zeros(0, dtype=np.int64)
    here, _ = conversations_of(kept)
    there = conv_all[keep]
    full = np.full(int(here.max()) + 1 if here.size else 0, -1, dtype=np.int64)
    full[here[here >= 0]] = there[here >= 0]
    table["conv"] = full[table["conv"]]
    table["stream"] = stream_all[table["conv"]]


def _compile(text: str | None):
    if not text:
        return None
    from .filter import compile_filter           # (start-up: only with --filter)
    return compile_filter(text)


def _narrow(ds, chosen) -> tuple[int, dict]:
    """Dataset ``ds`` narrowed to the frames ``chosen`` keeps: its view ``packets`` then holds
    only them (the conversations and TCP flags made first, on the whole capture); returns the
    frames read and the flags counted on those kept."""
    # start-up: numpy, pandas, pyarrow only when _narrow() runs
    from .sql.flows import conversations
    from .sql.tcp import tcp_flags

    conversations(ds)
    ds.table("filter_streams", STREAMS)
    flags = tcp_flags(ds)
    ds.con.execute(f"CREATE TEMP TABLE filter_kept AS SELECT * FROM packets WHERE {chosen.sql(ds)}")
    read = len(ds)
    sums = ", ".join(f"count(*) FILTER (WHERE {name}) AS {name}" for name in FLAGS)
    row = ds.con.execute(f"SELECT {sums} FROM {flags} WHERE file_offset IN (SELECT file_offset FROM filter_kept)"
                         ).fetchone()
    ds.con.execute("CREATE OR REPLACE TEMP VIEW packets AS SELECT * FROM filter_kept")
    ds.info = {**ds.info, "packets": ds.con.execute("SELECT count(*) FROM filter_kept").fetchone()[0]}
    return read, {name: int(value) for name, value in zip(FLAGS, row)}


def _dataset_report(path, rate_bps, wire, top, chosen=None) -> dict:
    """``report`` of a dataset folder: the SQL analyses (``capture.sql``)."""
    from .sql.dataset import open_dataset         # (start-up: pandas and DuckDB for a dataset only)
    # start-up: numpy, pandas, pyarrow only when _dataset_report() runs
    from .sql.tcp import flag_counts

    # start-up: numpy, pandas, pyarrow only when _dataset_report() runs
    from .sql.losses import handshake_rows, loss_tables, where_counts

    with open_dataset(path) as ds:
        loss_tables(ds)                           # (on the whole capture, before a filter narrows it)
        read, counts = _narrow(ds, chosen) if chosen is not None else (len(ds), flag_counts(ds))
        flows = ds.flows().head(top).astype(object).to_dict("records")
        if chosen is not None:                    # (numbered as in the whole capture, as for a file)
            streams = dict(ds.con.execute("SELECT DISTINCT c.conv, s.stream FROM conversations c "
                                          "JOIN filter_streams s USING (file_offset)").fetchall())
            for row in flows:
                row["stream"] = streams.get(row["conv"], row["stream"])
        out = _report(path, ds.info, len(ds), flows, counts, ds.read_overhead, rate_bps, wire)
        if chosen is not None:
            out.update(filter=chosen.text, packets_read=read)
        out["udp_end_markers"] = _end_markers(end_marker_rows(ds))
        kept = None if chosen is None else "filter_kept"
        out["losses"] = {**where_counts(ds, kept=kept), "handshakes": handshake_rows(ds, kept=kept),
                         "dsack_read": False}             # (a dataset holds no packet bytes)
        out["rfc6349"] = _rfc6349(ds.rfc6349(achievable_bps=out.get("predicted_goodput_bps")))
        return out


def _report(path, info: dict, packets: int, flows: list[dict], counts: dict, overhead, rate_bps, wire) -> dict:
    out = {"file": str(path), "format": info["format"], "packets": packets,
           "interfaces": [{k: _clean(v) for k, v in i.items()} for i in info["interfaces"]],
           "notes": info["notes"],
           "flows": [{k: _clean(v) for k, v in row.items()} for row in flows],
           "tcp_analysis": counts}
    try:
        ov = overhead()
        if rate_bps:
            out.update(predict_from_overhead(ov, rate_bps, wire=wire).to_dict())
        else:
            out["overhead"] = ov.to_dict()
    except CaptureError as err:            # a capture without a transfer still gets its flow table
        out["overhead"] = None
        out["overhead_error"] = str(err)
    return json.loads(json.dumps(out, default=_clean))


def _frame_parts(ov: dict) -> str:
    """A full segment's frame as the sum of its parts, the link type's own header first."""
    link, tags = ov["link"], ov["vlan_tags"]
    size = ov["link_header"] - tags
    parts = ([f"{link} {size}"] if size else []) + ([f"VLAN {tags}"] if tags else []) + [f"IP {ov['ip_header']}"]
    if ov["fragmented"]:          # a fragment carries a piece of the datagram, headers and all
        parts.append(f"fragment {ov['mtu'] - ov['ip_header']} (of a datagram of {ov['proto'].upper()} "
                     f"{ov['l4_header']} + payload {ov['payload']})")
    else:
        parts.append(f"{ov['proto'].upper()} {ov['l4_header']}"
                     + (f" (options {ov['tcp_options']})" if ov["proto"] == "tcp" else ""))
        parts.append(f"payload {ov['payload']}")
    if ov["trailer"]:
        parts.append(f"trailer {ov['trailer']}")
    return f"frame {ov['frame_len']} B" + ("" if size else f" ({link}, no link header)") + " = " + " + ".join(parts)


def _render_losses(losses: dict, flows: list[dict]) -> list[str]:
    """Where the retransmissions' originals were lost, and the shown TCP flows' handshakes split."""
    lines = []
    total = sum(losses.get(place, 0) for place in ("before", "after", "spurious", "unknown"))
    if total:
        lines += ["", f"where the losses happened, of {total} retransmissions: {losses['before']} before the capture "
                      f"point (never captured), {losses['after']} after it (captured, then resent), "
                      f"{losses['spurious']} spurious (the original arrived)"
                      + (f", {losses['unknown']} unknown (sent before the capture began)" if losses["unknown"] else "")
                      + ("" if losses.get("dsack_read", True)
                         else " (D-SACK blocks not read: a dataset holds no bytes)")]
    elif any(losses.get("handshakes", [])):
        lines += ["", "where the losses happened: no retransmissions"]
    shown = {frozenset((f"{f['a']}:{f['a_port']}", f"{f['b']}:{f['b_port']}")) for f in flows if f["proto"] == "tcp"}
    for h in losses.get("handshakes", []):
        if frozenset((h["client"], h["server"])) not in shown:
            continue
        nearer = "client" if h["client_side_s"] < h["server_side_s"] else "server"
        lines.append(f"  handshake {h['client']} → {h['server']}: initial RTT {h['initial_rtt_s'] * 1e3:.3f} ms = "
                     f"{h['server_side_s'] * 1e3:.3f} ms SYN → SYN-ACK (the server's side of the capture point) + "
                     f"{h['client_side_s'] * 1e3:.3f} ms SYN-ACK → ACK (the client's side): "
                     f"captured nearer the {nearer}")
    return lines


def render(r: dict) -> str:
    lines = [f"{r['file']}: {r['format']}, {r['packets']} frames"
             + (f" of {r['packets_read']} (display filter: {r['filter']})" if r.get("filter") else "")]
    for i, iface in enumerate(r["interfaces"]):
        drops = iface.get("dropped")
        lines.append(f"  interface {i}: {iface.get('name') or '?'} linktype {iface['linktype']}"
                     f" snaplen {iface['snaplen']}" + (f", dropped {drops}" if drops is not None else ""))
    lines.append("")
    lines.append(f"{'proto':5} {'A':>24} {'B':>24} {'packets':>8} {'bytes':>10} {'duration':>9} {'goodput':>14}")
    for f in r["flows"]:
        a = f"{f['a']}:{f['a_port']}"
        b = f"{f['b']}:{f['b_port']}"
        good = units.format_rate(f["goodput_bps"]) if f["goodput_bps"] else "-"
        lines.append(f"{f['proto']:5} {a:>24} {b:>24} {f['packets']:>8} {f['bytes']:>10} "
                     f"{f['duration']:>8.3f}s {good:>14}")
    lines.append("")
    lines.append("TCP analysis (frames): " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["tcp_analysis"].items()))
    lines += _render_losses(r.get("losses") or {}, r["flows"])
    ppcb = r.get("ppcb") or {}
    if ppcb.get("sessions"):
        lines += ["", "PPCB sessions (read as the kit's Wireshark dissector reads them):"]
        for s in ppcb["sessions"]:
            kinds = ", ".join(f"{k} {v}" for k, v in s["packets"].items())
            total = f"{s['total_length']} B announced, " if s["total_length"] is not None else ""
            lines.append(f"  {s['session_id']} over {s['transport']} ({s['protocol'] or 'no CONN seen'}): "
                         f"{total}{s['data_bytes']} B in DATA; {kinds}"
                         + (f"; refused {s['refused']}" if s["refused"] else ""))
    elif ppcb.get("note"):
        lines += ["", f"PPCB: {ppcb['note']}"]
    for m in r.get("udp_end_markers") or []:
        lines += ["", f"UDP end markers (nttcp's 4 B datagrams) {m['src']} → {m['dst']}: {m['markers']}, "
                      f"gaps {', '.join(f'{g:.3f}' for g in m['gaps_s'])} s after the last data"]
    rfc = r.get("rfc6349")
    if rfc:
        lines += ["", f"RFC 6349, main TCP transfer {rfc['src']} → {rfc['dst']}:",
                  f"  TCP efficiency {rfc['tcp_efficiency_pct']:.2f} % ({rfc['retransmitted_bytes']} of "
                  f"{rfc['transmitted_bytes']} B transmitted were retransmissions)"]
        if "transfer_time_ratio" in rfc:
            lines.append(f"  transfer time ratio {rfc['transfer_time_ratio']:.3f} (actual {rfc['transfer_s']:.3f} s, "
                         f"ideal {rfc['ideal_transfer_s']:.3f} s at the predicted goodput)")
        else:
            lines.append("  transfer time ratio: give --rate (the ideal time needs the link's rate)")
        if "buffer_delay_pct" in rfc:
            lines.append(f"  buffer delay {rfc['buffer_delay_pct']:.0f} % (average RTT {rfc['average_rtt_s'] * 1e3:.3f} ms, "
                         f"baseline {rfc['baseline_rtt_s'] * 1e3:.3f} ms, {rfc['rtt_samples']} samples, round trips as "
                         "seen at the capture point: at the receiver they are its ACK delay)")
            if rfc.get("buffer_delay_note"):
                lines.append(f"  (why this buffer delay may not be the queues': {rfc['buffer_delay_note']})")
    ov = r.get("overhead")
    if ov:
        lines += ["", f"overhead of the main flow {ov['src']} → {ov['dst']} ({ov['proto'].upper()}/IPv{ov['ip_version']}):",
                  "  " + _frame_parts(ov),
                  f"  MTU in use {ov['mtu']} B, MSS announced {ov['mss'] or 'not captured'}"
                  + (", IP fragments" if ov["fragmented"] else ""),
                  f"  measured goodput {units.format_rate(ov['measured_goodput_bps'] or 0)}"
                  f" ({ov['data_packets']} data packets)"]
        for w in ov["warnings"]:
            lines.append(f"  warning: {w}")
    elif r.get("overhead_error"):
        lines += ["", f"overhead: {r['overhead_error']}"]
    if "prediction" in r:
        p = r["prediction"]
        lines += [f"  predicted goodput {units.format_rate(r['predicted_goodput_bps'])} at "
                  f"{units.format_rate(p['rate_bps'])} ({p['wire']} wire, η = {p['efficiency']:.4f}, "
                  f"limit: {p['binding']}); measured/predicted = {r['ratio']:.3f}"]
    return "\n".join(lines)
