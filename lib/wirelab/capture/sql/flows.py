"""Conversations and the flow table of a capture dataset, in DuckDB SQL.

The same rules as ``flows`` (pandas), written as queries over the view
``packets`` so they run on captures larger than memory. File order is
``file_offset`` order. A conversation is the pair of endpoints in either
order; it is numbered by its first packet; "A" sent that packet. Later IP
fragments take the ports of the first fragment of their datagram (the last
such first fragment in the file, as ``flows`` does).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["conversations_sql", "conversations", "flows"]


def conversations_sql(later_fragments: bool = True) -> str:
    """A query: ``file_offset``, ``conv`` (from 0) and ``a_to_b`` of every packet in a
    conversation (packets in none are left out)."""
    ports = """
      SELECT p.file_offset, p.src, p.dst, p.proto, p.tcp_flags, p.tcp_seq,
             CASE WHEN coalesce(p.frag_offset, 0) > 0 THEN h.sp ELSE p.sport END AS sp,
             CASE WHEN coalesce(p.frag_offset, 0) > 0 THEN h.dp ELSE p.dport END AS dp
      FROM packets p LEFT JOIN (
          SELECT src, dst, proto, ip_id, arg_max(sport, file_offset) AS sp, arg_max(dport, file_offset) AS dp
          FROM packets
          WHERE coalesce(frag_offset, 0) = 0 AND more_frags AND sport IS NOT NULL
          GROUP BY src, dst, proto, ip_id) h
        ON coalesce(p.frag_offset, 0) > 0 AND p.src = h.src AND p.dst = h.dst AND p.proto = h.proto
           AND p.ip_id = h.ip_id""" if later_fragments else """
      SELECT file_offset, src, dst, proto, tcp_flags, tcp_seq, sport AS sp, dport AS dp FROM packets"""
    return f"""
    WITH ported AS ({ports}),
    keyed AS (
      SELECT file_offset, proto, (src < dst OR (src = dst AND sp <= dp)) AS fwd, tcp_seq,
             coalesce(proto = 'tcp' AND tcp_flags & 18 = 2, false) AS syn,
             CASE WHEN src < dst OR (src = dst AND sp <= dp) THEN src ELSE dst END AS lo_a,
             CASE WHEN src < dst OR (src = dst AND sp <= dp) THEN sp ELSE dp END AS lo_p,
             CASE WHEN src < dst OR (src = dst AND sp <= dp) THEN dst ELSE src END AS hi_a,
             CASE WHEN src < dst OR (src = dst AND sp <= dp) THEN dp ELSE sp END AS hi_p
      FROM ported
      WHERE src IS NOT NULL AND dst IS NOT NULL AND proto IS NOT NULL AND sp IS NOT NULL AND dp IS NOT NULL),
    split AS (   -- a SYN on reused ports begins a conversation (conversations._split_reused: its seq is
                 -- not that of the direction's last SYN, or the direction began without one)
      SELECT *, CASE WHEN syn AND rn > 1 AND ((last_syn IS NOT NULL AND last_syn <> tcp_seq)
                                             OR (last_syn IS NULL AND earlier > 0)) THEN 1 ELSE 0 END AS new
      FROM (SELECT *, row_number() OVER g AS rn,
                   last_value(CASE WHEN syn THEN tcp_seq END IGNORE NULLS) OVER before AS last_syn,
                   count(*) OVER before AS earlier
            FROM keyed
            WINDOW g AS (PARTITION BY proto, lo_a, lo_p, hi_a, hi_p ORDER BY file_offset),
                   before AS (PARTITION BY proto, lo_a, lo_p, hi_a, hi_p, fwd ORDER BY file_offset
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))),
    parted AS (
      SELECT *, sum(new) OVER (PARTITION BY proto, lo_a, lo_p, hi_a, hi_p ORDER BY file_offset
                               ROWS UNBOUNDED PRECEDING) AS part
      FROM split),
    convs AS (
      SELECT proto, lo_a, lo_p, hi_a, hi_p, part, arg_min(fwd, file_offset) AS first_fwd,
             row_number() OVER (ORDER BY min(file_offset)) - 1 AS conv
      FROM parted GROUP BY proto, lo_a, lo_p, hi_a, hi_p, part)
    SELECT k.file_offset, c.conv, k.fwd = c.first_fwd AS a_to_b
    FROM parted k JOIN convs c USING (proto, lo_a, lo_p, hi_a, hi_p, part)"""


def conversations(ds, later_fragments: bool = True) -> str:
    """The table of ``conversations_sql`` in dataset ``ds`` (computed once)."""
    return ds.table("conversations" if later_fragments else "conversations_no_fragments",
                    conversations_sql(later_fragments))


def flows(ds, *, min_packets: int = 1, later_fragments: bool = True) -> pd.DataFrame:
    """One row per conversation, as ``flows.flows`` (biggest first; ties in order of appearance)."""
    df = ds.sql(f"""
    WITH d AS (SELECT i.conv, i.a_to_b, p.* FROM {conversations(ds, later_fragments)} i
               JOIN packets p USING (file_offset))
    SELECT * FROM (
    SELECT conv,
           row_number() OVER (PARTITION BY arg_min(proto, file_offset) ORDER BY conv) - 1 AS stream,
           arg_min(proto, file_offset) AS proto,
           arg_min(src, file_offset) AS a, arg_min(sport, file_offset) AS a_port,
           arg_min(dst, file_offset) AS b, arg_min(dport, file_offset) AS b_port,
           count(*) AS packets, sum(frame_len) AS bytes,
           count(*) FILTER (WHERE a_to_b) AS packets_a_to_b,
           coalesce(sum(frame_len) FILTER (WHERE a_to_b), 0) AS bytes_a_to_b,
           count(*) FILTER (WHERE NOT a_to_b) AS packets_b_to_a,
           coalesce(sum(frame_len) FILTER (WHERE NOT a_to_b), 0) AS bytes_b_to_a,
           coalesce(sum(coalesce(payload_len, 0)) FILTER (WHERE a_to_b), 0) AS payload_a_to_b,
           coalesce(sum(coalesce(payload_len, 0)) FILTER (WHERE NOT a_to_b), 0) AS payload_b_to_a,
           min(time) AS start, max(time) - min(time) AS duration
    FROM d GROUP BY conv)                   -- (streams are numbered before the small ones are left out)
    WHERE packets >= ?
    ORDER BY bytes DESC, conv""", [min_packets])
    cols = ["conv", "stream", "proto", "a", "a_port", "b", "b_port", "packets", "bytes", "packets_a_to_b", "bytes_a_to_b",
            "packets_b_to_a", "bytes_b_to_a", "payload_a_to_b", "payload_b_to_a", "start", "duration",
            "throughput_bps", "goodput_bps"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    for c in ["conv", "stream", "packets", "bytes", "packets_a_to_b", "bytes_a_to_b", "packets_b_to_a", "bytes_b_to_a",
              "payload_a_to_b", "payload_b_to_a"]:
        df[c] = df[c].astype(np.int64)
    for c in ("a_port", "b_port"):
        df[c] = df[c].astype(object).where(df[c].notna(), None).map(lambda v: v if v is None else int(v))
    for c in ("proto", "a", "b"):
        df[c] = df[c].astype(object)
    with np.errstate(divide="ignore", invalid="ignore"):
        dur = df["duration"].where(df["duration"] > 0)
        df["throughput_bps"] = df["bytes"] * 8 / dur
        df["goodput_bps"] = df[["payload_a_to_b", "payload_b_to_a"]].max(axis=1) * 8 / dur
    return df[cols].reset_index(drop=True)
