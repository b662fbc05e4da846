"""Where a loss happened, over a capture dataset in DuckDB SQL: the twin of ``stats.losses``.

The same rules (read that module's docstring): per direction of a conversation, in file
order, *nextseq* is the highest end of a data segment before each one; a resend's first
byte was captured when the first segment that took nextseq past it also starts at or
before it (else it fell in a hole) or, in a hole, when an earlier segment behind nextseq
holds it. The ACK side: the first ACK whose acknowledgement reached the resend's end
(an ASOF join on the rows that raised the running maximum), before the resend (spurious:
already ACKed) or after it (spurious when sooner than the handshake's round trip to the
receiver). ASOF joins on running maxima keep it out of core, with no join of every
resend against every segment.
"""
from __future__ import annotations

from .flows import conversations
from .tcp import _WRAP, tcp_flags

__all__ = ["losses_sql", "loss_tables", "where_counts", "handshake_rows"]


def _segments(ids: str) -> str:
    """CTEs ``r`` (every TCP segment: conv, ab, k, t, rs/ra relative, seglen, e, nextseq) and
    ``hs`` (each handshake: conv, client ab, syn/synack/ack offsets and times)."""
    rel_seq = _WRAP.format(x="s.seq - b.base")
    rel_ack = _WRAP.format(x="s.ack - o.base")
    return f"""
    seg AS (
      SELECT i.conv, i.a_to_b AS ab, p.file_offset AS k, p.time AS t, p.tcp_seq AS seq,
             coalesce(p.tcp_ack, 0) AS ack, coalesce(p.tcp_flags, 0) AS flags,
             coalesce(p.payload_len, 0) + CASE WHEN coalesce(p.tcp_flags, 0) & 2 > 0 THEN 1 ELSE 0 END
               + CASE WHEN coalesce(p.tcp_flags, 0) & 1 > 0 THEN 1 ELSE 0 END AS seglen
      FROM {ids} i JOIN packets p USING (file_offset)
      WHERE p.proto = 'tcp' AND p.tcp_seq IS NOT NULL),
    bases AS (SELECT conv, ab, arg_min(seq, k) AS base FROM seg GROUP BY conv, ab),
    r0 AS (
      SELECT s.conv, s.ab, s.k, s.t, s.flags, s.seglen, {rel_seq} AS rs,
             CASE WHEN o.base IS NOT NULL THEN {rel_ack} END AS ra
      FROM seg s JOIN bases b ON b.conv = s.conv AND b.ab = s.ab
           LEFT JOIN bases o ON o.conv = s.conv AND o.ab = NOT s.ab),
    r AS (
      SELECT *, rs + seglen AS e,
             max(CASE WHEN seglen > 0 THEN rs + seglen END) OVER (PARTITION BY conv, ab ORDER BY k
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS nextseq
      FROM r0),
    sa AS (SELECT conv, min(k) AS sak, arg_min(t, k) AS sat FROM r WHERE flags & 18 = 18 GROUP BY conv),
    hs1 AS (
      SELECT sa.*, s.k AS synk, s.t AS synt, s.ab AS cab
      FROM sa ASOF JOIN (SELECT conv, k, t, ab FROM r WHERE flags & 18 = 2) s ON s.conv = sa.conv AND s.k < sa.sak),
    hs AS (
      SELECT hs1.*, a.k AS ackk, a.t AS ackt, hs1.sat - hs1.synt AS server_side, a.t - hs1.sat AS client_side
      FROM hs1 ASOF JOIN (SELECT conv, ab, k, t FROM r WHERE flags & 18 = 16) a
        ON a.conv = hs1.conv AND a.ab = hs1.cab AND a.k > hs1.sak)"""


def losses_sql(ids: str, flags: str) -> str:
    """A query: ``file_offset``, ``conv``, ``a_to_b`` and ``place`` ("before", "after",
    "spurious", "unknown") of every retransmission (``flags``: ``tcp.tcp_flags``'s table)."""
    return f"""
    WITH {_segments(ids)},
    resent AS (SELECT r.* FROM r JOIN {flags} f ON f.file_offset = r.k WHERE f.retransmission AND r.seglen > 0),
    front AS (SELECT conv, ab, k, rs, e FROM r WHERE seglen > 0 AND (nextseq IS NULL OR e > nextseq)),
    placed AS (   -- the first segment that took nextseq past the first byte: does it hold it?
      SELECT x.*, f.rs > x.rs AS in_hole
      FROM resent x ASOF JOIN front f ON f.conv = x.conv AND f.ab = x.ab AND x.rs < f.e),
    filled AS (
      SELECT DISTINCT x.k FROM placed x JOIN r b ON b.conv = x.conv AND b.ab = x.ab AND b.k < x.k
      WHERE x.in_hole AND b.seglen > 0 AND b.rs < b.nextseq AND b.rs <= x.rs AND x.rs < b.e),
    ackfront AS (   -- ACK rows that raised the acknowledgement of direction ab (the other's)
      SELECT conv, ab, k, t, ra FROM (
        SELECT conv, NOT ab AS ab, k, t, ra, max(ra) OVER (PARTITION BY conv, ab ORDER BY k
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
        FROM r WHERE flags & 16 > 0 AND ra IS NOT NULL)
      WHERE before IS NULL OR ra > before),
    acked AS (
      SELECT x.*, a.k AS ak, a.t AS ack_t,
             CASE WHEN h.cab IS NULL THEN 0 WHEN x.ab = h.cab THEN h.server_side ELSE h.client_side END AS trip
      FROM placed x ASOF LEFT JOIN ackfront a ON a.conv = x.conv AND a.ab = x.ab AND x.e <= a.ra
           LEFT JOIN hs h ON h.conv = x.conv)
    SELECT k AS file_offset, conv, ab AS a_to_b,
           CASE WHEN rs < 0 THEN 'unknown'
                WHEN in_hole AND k NOT IN (SELECT k FROM filled) THEN 'before'
                WHEN ak IS NOT NULL AND (ak < k OR ack_t - t < trip) THEN 'spurious'
                ELSE 'after' END AS place
    FROM acked ORDER BY k"""


def loss_tables(ds) -> tuple[str, str]:
    """The tables ``loss_places`` (``losses_sql``) and ``handshakes`` (client, server, the SYN's
    offset, the two sides' round trips) of dataset ``ds``, made once, on the whole capture
    (before ``report`` narrows the view ``packets`` to a display filter's frames)."""
    ids = conversations(ds, later_fragments=False)
    places = ds.table("loss_places", losses_sql(ids, tcp_flags(ds)))
    shakes = ds.table("handshakes", f"""
    WITH {_segments(ids)}
    SELECT h.conv, h.synk, p.src || ':' || p.sport AS client, p.dst || ':' || p.dport AS server,
           h.server_side, h.client_side
    FROM hs h JOIN packets p ON p.file_offset = h.synk WHERE h.ackk IS NOT NULL""")
    return places, shakes


def where_counts(ds, *, kept: str | None = None) -> dict[str, int]:
    """How many retransmissions in each place (of the rows of table ``kept`` when given)."""
    places, _ = loss_tables(ds)
    where = f"WHERE file_offset IN (SELECT file_offset FROM {kept})" if kept else ""
    rows = dict(ds.con.execute(f"SELECT place, count(*) FROM {places} {where} GROUP BY place").fetchall())
    return {place: int(rows.get(place, 0)) for place in ("before", "after", "spurious", "unknown")}


def handshake_rows(ds, *, kept: str | None = None) -> list[dict]:
    """Each captured handshake (its SYN among ``kept``'s rows when given), as ``report`` lists them."""
    _, shakes = loss_tables(ds)
    where = f"WHERE synk IN (SELECT file_offset FROM {kept})" if kept else ""
    rows = ds.con.execute(f"SELECT client, server, server_side, client_side FROM {shakes} {where} ORDER BY conv"
                          ).fetchall()
    return [{"client": c, "server": s, "server_side_s": float(far), "client_side_s": float(near),
             "initial_rtt_s": float(far + near)} for c, s, far, near in rows]
