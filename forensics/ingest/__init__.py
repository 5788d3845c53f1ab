"""The ingest pipeline: a source's batches, normalised by their family, written to the store
in one transaction (a Claude Code ingest: one per batch, as its folders have no size
bound), with a ledger row whatever happens."""

from .pipeline import Progress, ingest, prefetch

__all__ = ["Progress", "ingest", "prefetch"]
