"""A workspace: the settings, the database engine and the blob store, opened once per command.

Opening does no I/O; the first use of the database checks that its schema is current.
SQLAlchemy is imported on that first use, not with this module: commands that only hash or
read the blob store (``pinbench digest``) never load it, and plain reads (``reads``) of the
embedded SQLite database go through the standard library's driver instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cached_property
from typing import TYPE_CHECKING

from pinbench.config import Settings
from pinbench.errors import PinbenchError

if TYPE_CHECKING:
    from pathlib import Path

    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from pinbench.artifacts.store import BlobStore
    from pinbench.db.plain import Rows


class Workspace:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._checked = False

    @classmethod
    def from_env(cls) -> Workspace:
        from pinbench.config import check_home

        settings = Settings.from_env()
        check_home(settings.home)
        return cls(settings)

    @cached_property
    def store(self) -> BlobStore:
        """The blob store, opened on first use (a read of the registry's rows needs none)."""
        from pinbench.artifacts.store import BlobStore

        if self.settings.blobs is not None:
            from pinbench.artifacts.s3store import open_store

            return open_store(
                self.settings.home,
                self.settings.blobs,
                endpoint=self.settings.s3_endpoint,
                cache_max=self.settings.cache_max,
            )
        return BlobStore(self.settings.home)

    @cached_property
    def engine(self) -> Engine:
        from pinbench.db.engine import make_engine

        return make_engine(self.settings.database_url)

    @cached_property
    def _sessions(self) -> sessionmaker[Session]:
        from sqlalchemy.orm import sessionmaker

        return sessionmaker(self.engine, expire_on_commit=False)

    def init(self) -> str:
        """Create the home, the blob store and the schema; return the schema revision."""
        self.engine  # noqa: B018 - a URL that cannot be used is refused before the home is made
        made = not self.settings.home.exists()
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self.store.create()
        # Alembic only where the schema changes (start-up cost)
        from pinbench.db import migrate, schema

        try:
            migrate.upgrade(self.engine)
        except PinbenchError:  # the database refused (unreachable, a privilege, too new)
            if made:  # a home this call made is not left half made
                import shutil

                shutil.rmtree(self.settings.home, ignore_errors=True)
            raise
        self._checked = True
        return schema.HEAD_REVISION

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session in one transaction, on a database whose schema is current."""
        from pinbench.db import schema
        from pinbench.db.engine import transaction

        if not self._checked:
            schema.ensure_current(self.engine)
            self._checked = True
        with transaction(self._sessions) as session:
            yield session

    @contextmanager
    def reads(self) -> Iterator[Rows]:
        """Plain SQL reads (``pinbench.db.plain``) in one snapshot of a database whose schema is
        current: an on-disk SQLite file through ``sqlite3`` unless this workspace already holds
        an engine (then its pool), anything else through SQLAlchemy Core."""
        from pinbench.db import plain

        with self._plain(plain.sqlite_reads, plain.engine_reads) as rows:
            yield rows

    @contextmanager
    def writes(self) -> Iterator[Rows]:
        """One transaction of plain SQL statements (``pinbench.db.plain_writes``) on a database
        whose schema is current, committed when the block succeeds; where ``reads`` reads."""
        from pinbench.db import plain_writes

        with self._plain(plain_writes.sqlite_writes, plain_writes.engine_writes) as rows:
            yield rows

    @contextmanager
    def _plain(
        self,
        on_sqlite: Callable[[Path], AbstractContextManager[Rows]],
        on_engine: Callable[[Engine], AbstractContextManager[Rows]],
    ) -> Iterator[Rows]:
        from pinbench.db import plain

        path = plain.sqlite_file(self.settings.database_url)
        if path is not None and "engine" not in self.__dict__:
            with on_sqlite(path) as rows:
                yield rows
            return
        from pinbench.db import schema

        if not self._checked:
            schema.ensure_current(self.engine)
            self._checked = True
        with on_engine(self.engine) as rows:
            yield rows

    def close(self) -> None:
        if "store" in self.__dict__:  # opened
            self.store.cache.close()
        if "engine" in self.__dict__:
            self.engine.dispose()
