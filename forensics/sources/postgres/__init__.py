"""PostgreSQL: a read-only, time-bounded connection, and the ADK session tables read through it."""
