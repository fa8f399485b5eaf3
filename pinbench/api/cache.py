"""Answers to registry reads (show, versions, resolve), kept while the registry is unchanged.

Published versions never change; only new versions and yank marks change what a read
returns. Every request asks the database for the registry's fingerprint (how many versions,
the highest row id, how many yanked, the latest yank time) in one small query, and serves
the encoded answer kept under that fingerprint, or computes it again. An answer computed while
a publish lands is kept under the older fingerprint and so never served after it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from sqlalchemy import case, func, select

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
    def __init__(self, maxsize: int = 4096) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, tuple[Fingerprint, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, ws: Workspace, key: Hashable, compute: Callable[[], bytes]) -> bytes:
        """The encoded answer for ``key``; errors raised by ``compute`` are not kept."""
        current = fingerprint(ws)
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
