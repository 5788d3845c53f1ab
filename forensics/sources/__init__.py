"""Transports: one package per way records arrive (postgres/, sqlite/, files/), each module
in it reading one family's records and yielding `model.Batch`es of raw events."""
