"""Answers to registry reads (show, versions, resolve), kept while the registry is unchanged.

Published versions never change; only new versions and yank marks change what a read
returns. The registry's fingerprint (how many versions, the highest row id, how many yanked,
the latest yank time) is one small query; answers are kept under the fingerprint they were
computed at. With a change source (``changes``: SQLite's data_version, PostgreSQL's
LISTEN/NOTIFY) the fingerprint is read again only after something may have changed, and a
hit (``hit``) needs no database at all, so a server answers it on its event loop; without
one, every request reads the fingerprint. An answer computed while a publish lands is kept
under the older fingerprint and so never served after it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from sqlalchemy import case, func, select

from pinbench.api.changes import Changes
from pinbench.db.models import Artifact
from pinbench.workspace import Workspace

Fingerprint = tuple[int, int, int, str]

_FINGERPRINT = select(
    func.count(Artifact.id),
    func.coalesce(func.max(Artifact.id), 0),
    func.coalesce(func.sum(case((Artifact.yanked, 1), else_=0)), 0),
    func.max(Artifact.yanked_at),
)


def fingerprint(ws: Workspace) -> Fingerprint:
    with ws.engine.connect() as conn:
        count, top, yanked, last_yank = conn.execute(_FINGERPRINT).one()
    return int(count), int(top), int(yanked), str(last_yank)


class ReadCache:
    def __init__(
        self, maxsize: int = 4096, changes: Changes | None = None, ws: Workspace | None = None
    ) -> None:
        self.ws = ws
        """The workspace whose change counter keys the answers (``answer``)."""
        self.maxsize = maxsize
        self.changes = changes
        self._entries: OrderedDict[Hashable, tuple[Fingerprint, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def hit(self, key: Hashable) -> bytes | None:
        """The answer for ``key`` if it is kept and nothing can have changed since, found
        without the database; None: call ``get`` (in a thread: it may query)."""
        if self.changes is None:
            return None
        current = self.changes.unchanged()
        if current is None:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != current:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def answer(self, key: Hashable, compute: Callable[[], bytes]) -> bytes:
        """``get`` on the server's own workspace."""
        assert self.ws is not None, "ReadCache(ws=...) answers"
        return self.get(self.ws, key, compute)

    def get(self, ws: Workspace, key: Hashable, compute: Callable[[], bytes]) -> bytes:
        """The encoded answer for ``key``; errors raised by ``compute`` are not kept."""
        current = self._fingerprint(ws)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] == current:
                self._entries.move_to_end(key)
                return hit[1]
        body = compute()
        with self._lock:
            self._entries[key] = (current, body)
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return body

    def _fingerprint(self, ws: Workspace) -> Fingerprint:
        if self.changes is None:
            return fingerprint(ws)
        known: Fingerprint | None = self.changes.unchanged()
        if known is not None:
            return known
        read: Fingerprint = self.changes.read(lambda: fingerprint(ws))
        return read

    def close(self) -> None:
        if self.changes is not None:
            self.changes.close()
