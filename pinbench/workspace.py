"""A workspace: the settings, the database engine and the blob store, opened once per command.

Opening does no I/O; the first use of the database checks that its schema is current.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pinbench.artifacts.store import BlobStore
from pinbench.config import Settings
from pinbench.db import schema
from pinbench.db.engine import make_engine, transaction


class Workspace:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = BlobStore(settings.home)
        self._checked = False

    @classmethod
    def from_env(cls) -> Workspace:
        return cls(Settings.from_env())

    @cached_property
    def engine(self) -> Engine:
        return make_engine(self.settings.database_url)

    @cached_property
    def _sessions(self) -> sessionmaker[Session]:
        return sessionmaker(self.engine, expire_on_commit=False)

    def init(self) -> str:
        """Create the home, the blob store and the schema; return the schema revision."""
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self.store.create()
        from pinbench.db import migrate  # Alembic only where the schema changes (start-up cost)

        migrate.upgrade(self.engine)
        self._checked = True
        return schema.HEAD_REVISION

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session in one transaction, on a database whose schema is current."""
        if not self._checked:
            schema.ensure_current(self.engine)
            self._checked = True
        with transaction(self._sessions) as session:
            yield session

    def close(self) -> None:
        self.store.cache.close()
        if "engine" in self.__dict__:
            self.engine.dispose()
