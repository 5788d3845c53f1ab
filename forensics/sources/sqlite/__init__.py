"""SQLite files, opened read-only: ADK's DatabaseSessionService and SqliteSessionService."""
