"""Files on disk: ADK JSON exports (a Session, a list of events, NDJSON)."""
