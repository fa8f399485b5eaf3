"""fsck's check of the stored lockfiles: each body hashes to the digest it is kept under (a run
signs its lockfile's digest; a series' settings and ``runs show`` read the body)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

NOT_ITS_DIGEST = (
    "its body does not hash to its digest: the runs that name it signed another lockfile"
)


def lockfiles_not_their_digest(ws: Workspace) -> list[str]:
    """The digests of stored lockfiles whose body does not hash to them: a run signs its
    lockfile's digest, and its readers (a series' settings, ``runs show``) read the body
    (issue 84, item 4)."""
    with ws.reads() as rows:
        stored = rows("SELECT digest, body FROM lockfiles ORDER BY digest", {})
    return [
        str(digest)
        for digest, body in stored
        if hashlib.sha256(str(body).encode()).hexdigest() != str(digest)
    ]
