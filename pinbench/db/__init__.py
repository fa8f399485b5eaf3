"""SQL: typed ORM models, the engine and session boundary, and migrations."""
