"""Alembic environment and revisions, shipped in the wheel and found with importlib.resources."""
