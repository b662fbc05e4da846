"""nttcp's UDP end markers of a dataset, out of core: the DuckDB twin of ``capture.udp_ending``'s input."""
from __future__ import annotations

__all__ = ["end_marker_rows"]


def end_marker_rows(ds, size: int = 4):
    """What ``udp_end_markers`` reads of a dataset, out of core: per UDP direction with
    ``size``-byte datagrams, its most common larger datagram at the last time it was sent,
    and the short datagrams themselves."""
    return ds.sql(f"""
        WITH udp AS (SELECT src, sport, dst, dport, payload_len, time FROM packets
                     WHERE proto = 'udp' AND sport IS NOT NULL AND coalesce(frag_offset, 0) = 0),
             marked AS (SELECT DISTINCT src, sport, dst, dport FROM udp WHERE payload_len = {size}),
             flows AS (SELECT src, sport, dst, dport, mode(payload_len) AS common
                       FROM udp JOIN marked USING (src, sport, dst, dport)
                       WHERE payload_len > {size} GROUP BY ALL)
        SELECT 'udp' AS proto, src, sport, dst, dport, common AS payload_len, max(time) AS time, 0 AS frag_offset
        FROM udp JOIN flows USING (src, sport, dst, dport) WHERE payload_len = common GROUP BY ALL
        UNION ALL
        SELECT 'udp', src, sport, dst, dport, payload_len, time, 0 FROM udp WHERE payload_len = {size}
        ORDER BY time""")
