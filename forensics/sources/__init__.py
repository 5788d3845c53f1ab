"""Loaders: one module per source, each yielding `Batch`es of raw events."""
