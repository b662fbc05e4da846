"""Wireshark's TCP analysis flags over a capture dataset, in DuckDB SQL.

The rules are those of ``tcp_analysis`` (Wireshark 4.0, packet-tcp.c,
``tcp_analyze_sequence_number``; read that module's docstring first), written
with window functions: per direction of a conversation, in file order,
*nextseq* is the highest seq + length seen before the packet; "the reverse
direction's state just before this packet" is the last value of the other
direction's rows before it in the conversation.
"""
from __future__ import annotations

import pandas as pd

from .flows import conversations
from ..tcp_sequence import DEFAULT_OOO_THRESHOLD, FAST_RETRANSMIT_WINDOW, FLAGS

__all__ = ["flags_sql", "tcp_flags", "tcp_analysis", "retransmission_summary", "flag_counts", "FLAGS"]

_WRAP = "((({x} + 2147483648) % 4294967296 + 4294967296) % 4294967296) - 2147483648"  # signed mod 2^32


def tcp_flags(ds) -> str:
    """The table of ``flags_sql`` in dataset ``ds`` (computed once)."""
    return ds.table("tcp_flags", flags_sql(conversations(ds, later_fragments=False)))


def flags_sql(ids: str) -> str:
    """A query: ``file_offset``, ``conv``, ``a_to_b`` and the six flags of every TCP segment;
    ``ids``: the conversations (``flows.conversations_sql(later_fragments=False)``)."""
    rel_seq = _WRAP.format(x="seq - CASE WHEN ab THEN base_ab ELSE base_ba END")
    rel_ack = _WRAP.format(x="ack - CASE WHEN ab THEN base_ba ELSE base_ab END")
    return f"""
    WITH frag AS (   -- a segment in IP fragments is whole at its last one (tcp_sequence._reassembled)
      SELECT h.k AS head, sum(l.len) AS more, max(l.lk) AS last_k, arg_max(l.t, l.lk) AS last_t
      FROM (SELECT file_offset AS lk, src, dst, proto, ip_id, coalesce(payload_len, 0) AS len, time AS t
            FROM packets WHERE proto = 'tcp' AND coalesce(frag_offset, 0) > 0) l
      ASOF JOIN (SELECT file_offset AS k, src, dst, proto, ip_id FROM packets
                 WHERE proto = 'tcp' AND more_frags AND coalesce(frag_offset, 0) = 0 AND tcp_seq IS NOT NULL) h
        ON l.src = h.src AND l.dst = h.dst AND l.proto = h.proto AND l.ip_id = h.ip_id AND l.lk > h.k
      GROUP BY h.k),
    d AS (    -- k: where the segment is whole (its order); fo: the frame its flags go on
      SELECT i.conv, i.a_to_b AS ab, coalesce(fr.last_k, p.file_offset) AS k, p.file_offset AS fo,
             coalesce(fr.last_t, p.time) AS t, p.tcp_seq AS seq,
             coalesce(p.tcp_ack, 0) AS ack, coalesce(p.tcp_flags, 0) AS flags,
             coalesce(p.tcp_win, 0) AS win, coalesce(p.payload_len, 0) + coalesce(fr.more, 0) AS len,
             coalesce(p.payload_offset > p.cap_len, false) AS cut     -- a header the snaplen cut: no flags
      FROM {ids} i JOIN packets p USING (file_offset) LEFT JOIN frag fr ON fr.head = p.file_offset
      WHERE p.proto = 'tcp' AND p.tcp_seq IS NOT NULL),
    bases AS (
      SELECT conv, coalesce(arg_min(seq, k) FILTER (WHERE ab), 0) AS base_ab,
             coalesce(arg_min(seq, k) FILTER (WHERE NOT ab), 0) AS base_ba
      FROM d GROUP BY conv),
    r AS (
      SELECT conv, ab, k, fo, t, flags, win, len, cut, {rel_seq} AS seq, {rel_ack} AS ack, {rel_seq} + seglen AS e, seglen
      FROM (SELECT *, len + CASE WHEN flags & 2 > 0 THEN 1 ELSE 0 END
                          + CASE WHEN flags & 1 > 0 THEN 1 ELSE 0 END AS seglen FROM d) JOIN bases USING (conv)),
    s1 AS (   -- per direction, the state before each segment
      SELECT *, row_number() OVER dir AS rn, lag(win) OVER dir AS prev_win, max(e) OVER before AS nextseq,
             arg_max(ack, k) FILTER (WHERE flags & 16 > 0) OVER before AS prev_ack
      FROM r
      WINDOW dir AS (PARTITION BY conv, ab ORDER BY k),
             before AS (PARTITION BY conv, ab ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
    s2 AS (
      SELECT *, rn = 1 OR e > nextseq AS new,
             coalesce(rn > 1 AND seglen = 0 AND win <> 0 AND win = prev_win AND seq = nextseq
                      AND ack = prev_ack AND flags & 7 = 0, false) AS duplicate_ack,
             coalesce(rn > 1 AND seq > nextseq AND flags & 4 = 0, false) AS lost_segment,
             coalesce(rn > 1 AND (seglen > 0 OR flags & 3 > 0) AND seq < nextseq
                      AND NOT (seglen <= 1 AND seq = nextseq - 1 AND flags & 7 = 0), false) AS behind,
             coalesce(seglen <= 1 AND seq = nextseq - 1 AND flags & 7 = 0, false) AS keepalive
      FROM s1),
    s3 AS (   -- dupnum: duplicate ACKs in a row so far (rows since the last one that was not)
      SELECT *, arg_max(t, k) FILTER (WHERE new) OVER before AS nexttime,
             rn - max(CASE WHEN NOT duplicate_ack THEN rn END) OVER (PARTITION BY conv, ab ORDER BY k
                 ROWS UNBOUNDED PRECEDING) AS dupnum
      FROM s2
      WINDOW before AS (PARTITION BY conv, ab ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
    syn AS (
      SELECT conv, arg_min(ab, k) AS syn_ab, arg_min(t, k) AS syn_t, min(k) AS syn_k
      FROM r WHERE flags & 18 = 2 GROUP BY conv),
    hs_ack AS (   -- the ACK that completes the handshake
      SELECT s.conv, arg_min(r.t, r.k) AS ack_t, min(r.k) AS ack_k
      FROM syn s JOIN r ON r.conv = s.conv AND r.k > s.syn_k AND r.ab = s.syn_ab AND r.flags & 18 = 16
      GROUP BY s.conv),
    rtt AS (      -- from the latest SYN before it (Wireshark's ts_mru_syn)
      SELECT a.conv, any_value(a.ack_t) - arg_max(r.t, r.k) AS rtt
      FROM hs_ack a JOIN r ON r.conv = a.conv AND r.k < a.ack_k AND r.flags & 18 = 2
      GROUP BY a.conv),
    b AS (    -- the segments behind nextseq, with the other direction's state just before each
      SELECT b.*, coalesce(rev.dupnum, 0) AS rev_dupnum,
             CASE WHEN rev.flags & 16 > 0 THEN rev.ack END AS last_ack,   -- (no ACK flag: unset)
             CASE WHEN rev.flags & 16 > 0 THEN rev.t END AS last_ack_t,
             CASE WHEN rtt.rtt IS NOT NULL AND rtt.rtt <> 0 THEN rtt.rtt ELSE {DEFAULT_OOO_THRESHOLD} END
                 AS threshold
      FROM (SELECT * FROM s3 WHERE behind) b
      ASOF LEFT JOIN (SELECT conv, NOT ab AS ab, k AS rk, dupnum, flags, ack, t FROM s3) rev
        ON b.conv = rev.conv AND b.ab = rev.ab AND b.k > rev.rk
      LEFT JOIN rtt ON b.conv = rtt.conv),
    b1 AS (
      SELECT *, coalesce(last_ack IS NOT NULL AND rev_dupnum >= 2 AND last_ack = seq
                         AND t - last_ack_t < {FAST_RETRANSMIT_WINDOW}, false) AS fast,
             coalesce(last_ack IS NOT NULL AND len > 0 AND seq + len <= last_ack, false) AS spur
      FROM b),
    b2 AS (
      SELECT *, coalesce(NOT fast AND NOT spur AND t - nexttime >= 0 AND t - nexttime < threshold
                         AND nextseq <> e, false) AS ooo
      FROM b1),
    ka AS (   -- duplicate ACKs answering a keep-alive (the other side's last segment) are none
      SELECT d.k FROM (SELECT * FROM s3 WHERE duplicate_ack) d
      ASOF JOIN (SELECT conv, NOT ab AS ab, k AS rk, keepalive FROM s3) rev
        ON d.conv = rev.conv AND d.ab = rev.ab AND d.k > rev.rk
      WHERE rev.keepalive)
    SELECT fo AS file_offset, conv, ab AS a_to_b, false AS retransmission, false AS fast_retransmission,
           false AS spurious_retransmission, false AS out_of_order, lost_segment AND NOT cut AS lost_segment,
           duplicate_ack AND NOT cut AND k NOT IN (SELECT k FROM ka) AS duplicate_ack
    FROM s3 WHERE NOT behind
    UNION ALL
    SELECT fo, conv, ab, NOT ooo AND NOT cut, fast AND NOT cut, spur AND NOT fast AND NOT cut,
           ooo AND NOT cut, lost_segment AND NOT cut, duplicate_ack AND NOT cut
    FROM b2"""

def tcp_analysis(ds) -> pd.DataFrame:
    """The six flags of every frame in file order (False where not TCP), with ``conv``
    (-1: in no conversation) and ``a_to_b``, as ``tcp_analysis.tcp_analysis``."""
    flags = ", ".join(f"coalesce(f.{name}, false) AS {name}" for name in FLAGS)
    df = ds.sql(f"""
    SELECT p.file_offset, {flags}, coalesce(i.conv, -1) AS conv, coalesce(i.a_to_b, false) AS a_to_b
    FROM packets p LEFT JOIN {conversations(ds, later_fragments=False)} i USING (file_offset)
         LEFT JOIN {tcp_flags(ds)} f USING (file_offset)
    ORDER BY p.file_offset""")
    df["conv"] = df["conv"].astype("int64")
    return df.drop(columns="file_offset")


def retransmission_summary(ds) -> pd.DataFrame:
    """Per conversation: segments with data and how many carry each flag (as the pandas one)."""
    sums = ", ".join(f"sum(CASE WHEN coalesce(f.{name}, false) THEN 1 ELSE 0 END) AS {name}" for name in FLAGS)
    df = ds.sql(f"""
    SELECT i.conv, sum(CASE WHEN coalesce(p.payload_len, 0) > 0 AND p.proto = 'tcp' THEN 1 ELSE 0 END)
               AS data_segments, {sums}
    FROM {conversations(ds, later_fragments=False)} i JOIN packets p USING (file_offset)
         LEFT JOIN {tcp_flags(ds)} f USING (file_offset)
    GROUP BY i.conv ORDER BY i.conv""").set_index("conv")
    df = df.astype("int64")
    df.index = df.index.astype("int64")
    df["retransmitted_fraction"] = df["retransmission"] / df["data_segments"].where(df["data_segments"] > 0)
    return df


def flag_counts(ds) -> dict[str, int]:
    """How many frames carry each flag (what ``wirelab analyze`` prints)."""
    sums = ", ".join(f"count(*) FILTER (WHERE {name}) AS {name}" for name in FLAGS)
    row = ds.con.execute(f"SELECT {sums} FROM {tcp_flags(ds)}").fetchone()
    return {name: int(value) for name, value in zip(FLAGS, row)}
