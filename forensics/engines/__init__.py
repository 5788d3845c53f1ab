"""Engines run the per-session reconstruction (analysis/facts.py) over many sessions:
`local` over the store, in a stream (at ingest and `forensics analyze`); `spark` over a
Parquet export, grouped by session (pyspark, an optional extra)."""
