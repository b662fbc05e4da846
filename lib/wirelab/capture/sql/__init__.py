"""A capture as a parquet dataset, queried with DuckDB: the twins of the statistics on frames.

``dataset`` (``convert``, ``open_dataset``, ``CaptureDataset``: the folder and its
DuckDB view ``packets``), then one module of SQL per statistic, each giving the
answer of its pandas/numpy twin one floor up: ``flows`` (conversations,
``capture.conversations``), ``tcp`` (Wireshark's TCP analysis flags,
``capture.tcp_sequence``), ``io_graph`` (``capture.conversations.io_graph``),
``overhead`` (``capture.overhead``), ``losses`` (where a loss happened,
``capture.stats.losses``; no D-SACKs: a dataset holds no bytes). Their public names are exported by
``wirelab.capture``; tests hold each twin equal to the other.
"""
