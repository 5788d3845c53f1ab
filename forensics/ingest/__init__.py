"""The ingest pipeline: a source's batches, normalised by their family, written to the store
a transaction per batch (an ADK run that stops is undone whole; a Claude Code ingest keeps
what it committed), with a ledger row whatever happens."""

from .pipeline import Progress, ingest, prefetch

__all__ = ["Progress", "ingest", "prefetch"]
