"""Reading the registry: list, show, yank, and the SQL candidate source for resolution."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from pinbench.db.models import Artifact
from pinbench.errors import UserError
from pinbench.registry.names import ArtifactRef, Kind
from pinbench.registry.ranges import parse_version
from pinbench.registry.resolve import Published, published_from_row
from pinbench.workspace import Workspace


class NotFound(UserError):
    def __init__(self, *, what: str) -> None:
        super().__init__(f"{what} is not published")
        self.what = what


@dataclass(frozen=True, slots=True)
class Summary:
    kind: str
    name: str
    version: str
    yanked: bool
    published_at: datetime
    publisher: str
    manifest_digest: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "version": self.version,
            "yanked": self.yanked,
            "published_at": self.published_at.isoformat(),
            "publisher": self.publisher,
            "manifest_digest": self.manifest_digest,
        }


def list_artifacts(
    ws: Workspace, kind: Kind | None = None, name: str | None = None
) -> list[Summary]:
    """Every published version, by kind, name, then version precedence (highest last).
    Only the summary's columns are read (not each version's manifest)."""
    stmt = select(
        Artifact.kind,
        Artifact.name,
        Artifact.version,
        Artifact.yanked,
        Artifact.published_at,
        Artifact.publisher,
        Artifact.manifest_digest,
    )
    if kind is not None:
        stmt = stmt.where(Artifact.kind == kind.value)
    if name is not None:
        stmt = stmt.where(Artifact.name == name)
    with ws.transaction() as session:
        out = [
            Summary(k, n, v, yanked, _utc(at), publisher, digest)
            for k, n, v, yanked, at, publisher, digest in session.execute(stmt).all()
        ]
    order = list(Kind)
    out.sort(key=lambda s: (order.index(Kind(s.kind)), s.name, parse_version(s.version)))
    return out


def get_artifact(session: Session, ref: ArtifactRef) -> Artifact:
    row = session.scalar(
        select(Artifact)
        .options(selectinload(Artifact.files))
        .where(
            Artifact.kind == ref.kind.value,
            Artifact.name == ref.name,
            Artifact.version == str(ref.version),
        )
    )
    if row is None:
        raise NotFound(what=str(ref))
    return row


def show(ws: Workspace, ref: ArtifactRef) -> dict[str, Any]:
    with ws.transaction() as session:
        row = get_artifact(session, ref)
        return {
            "ref": str(ref),
            "kind": row.kind,
            "name": row.name,
            "version": row.version,
            "manifest_digest": row.manifest_digest,
            "publisher": row.publisher,
            "published_at": _utc(row.published_at).isoformat(),
            "yanked": row.yanked,
            "yank_reason": row.yank_reason,
            "files": [
                {"path": f.path, "sha256": f.sha256, "size": f.size, "source": f.source}
                for f in row.files
            ],
            "manifest": row.manifest,
        }


def yank(ws: Workspace, ref: ArtifactRef, reason: str) -> None:
    if not reason.strip():
        raise UserError("a yank needs a reason (--reason TEXT)")
    with ws.transaction() as session:
        row = get_artifact(session, ref)
        row.yanked = True
        row.yank_reason = reason
        row.yanked_at = datetime.now(UTC)


class SqlCandidateSource:
    """Reads candidates from the artifacts table: one indexed query per name, no manifests."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def versions(self, kind: Kind, name: str) -> Sequence[Published]:
        rows = self._session.execute(
            select(Artifact.version, Artifact.yanked, Artifact.requires).where(
                Artifact.kind == kind.value, Artifact.name == name
            )
        ).all()
        return [published_from_row(v, y, r) for v, y, r in rows]


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
