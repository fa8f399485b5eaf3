"""Alembic environment: runs on the connection pinbench hands over in ``config.attributes``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from pinbench.db.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection: Connection = config.attributes["connection"]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("pinbench migrations run online only: use `pinbench db upgrade`")
run_migrations_online()
