"""Insert-if-absent: how a row named by its content is recorded (decision 286).

A lockfile (keyed by its sha256) or a signing key (keyed by its key's digest) holds the same
bytes whoever records it, so recording one that another writer is recording at the same
moment is not a conflict: ``INSERT ... ON CONFLICT (key) DO NOTHING``, on SQLite and
PostgreSQL alike, inside the caller's transaction (no second transaction, no savepoint). On
PostgreSQL the statement waits for a concurrent writer of the same key and then does
nothing; a check followed by a plain insert instead lost that race with a unique violation.
Rows keyed by a name whose content may differ (an artifact's ``KIND/NAME@VERSION``, an
alert's finding) are not of this kind: a lost race there compares what the winner wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect

if TYPE_CHECKING:
    from sqlalchemy.orm import DeclarativeBase, Session


def insert_absent(session: Session, model: type[DeclarativeBase], values: dict[str, Any]) -> bool:
    """Insert ``values`` as a row of ``model`` unless a row with the same primary key exists
    (or is being inserted by a concurrent transaction that then commits); True when this call
    inserted it."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = session.get_bind().dialect.name
    key = inspect(model).primary_key
    names = [c.name for c in key]
    statement: postgresql.Insert | sqlite.Insert
    if dialect == "postgresql":
        statement = (
            postgresql.insert(model).values(values).on_conflict_do_nothing(index_elements=names)
        )
    elif dialect == "sqlite":
        statement = sqlite.insert(model).values(values).on_conflict_do_nothing(index_elements=names)
    else:  # make_engine makes engines of these two only
        raise NotImplementedError(f"insert-if-absent on {dialect}")
    # a row comes back only when this statement inserted one
    return session.execute(statement.returning(*key)).first() is not None
