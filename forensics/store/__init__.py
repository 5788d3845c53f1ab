"""The local DuckDB store: one `Store` handle, schema migrations, the ingest ledger,
writes of normalised batches, and the reads the analyses rebuild sessions from."""

from .handle import DEFAULT_DB, Store, default_db_path
from .ledger import WATERMARK_OVERLAP_S, IngestResult

__all__ = ["DEFAULT_DB", "WATERMARK_OVERLAP_S", "IngestResult", "Store", "default_db_path"]
