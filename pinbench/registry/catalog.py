"""Reading the registry: list, show, resolve, and yank.

The reads are plain SQL over ``Workspace.reads`` (``pinbench.db.plain``): on the embedded
SQLite database a CLI read command never imports SQLAlchemy; yanking changes a row with plain
SQL too (``Workspace.writes``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pinbench.db.plain import Rows, flag, json_value, when
from pinbench.errors import UserError
from pinbench.registry.names import ArtifactRef, Kind, Spec, parse_kind
from pinbench.registry.published import FILES_SQL
from pinbench.registry.versions import parse_version
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.registry.resolve import Published, Resolution


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


SUMMARY_SQL = (
    "SELECT kind, name, version, yanked, published_at, publisher, manifest_digest FROM artifacts"
)


def list_artifacts(
    ws: Workspace, kind: Kind | None = None, name: str | None = None
) -> list[Summary]:
    """Every published version, by kind, name, then version precedence (highest last).
    Only the summary's columns are read (not each version's manifest)."""
    where = [f"{column} = :{column}" for column, v in (("kind", kind), ("name", name)) if v]
    sql = SUMMARY_SQL + (" WHERE " + " AND ".join(where) if where else "")
    params = {"kind": kind.value if kind else None, "name": name}
    with ws.reads() as rows:
        out = [_summary(row) for row in rows(sql, params)]
    order = list(Kind)
    out.sort(key=lambda s: (order.index(Kind(s.kind)), s.name, parse_version(s.version)))
    return out


def version_page(
    ws: Workspace,
    kind: Kind | None = None,
    name: str | None = None,
    contains: str | None = None,
    after: ArtifactRef | None = None,
    limit: int = 100,
) -> list[Summary]:
    """Up to ``limit`` published versions by kind, name (the database's order), then version
    precedence, past ``after`` (keyset paging, ``GET /api/v1/artifacts``): the limit and the
    key are in the queries, which read the ``(kind, name)`` index from ``after``'s name on;
    versions are ordered here (SQL knows no semver precedence), a name's at a time, so a
    page reads its own names' rows, never the whole registry. ``contains``: only names
    holding that text."""
    order = list(Kind)
    kinds = [kind] if kind else order
    if after is not None:
        kinds = [k for k in kinds if order.index(k) >= order.index(after.kind)]
    where, params = ["kind = :kind"], dict[str, Any]()
    if name is not None:
        where.append("name = :name")
        params["name"] = name
    if contains:
        where.append("name LIKE :pattern ESCAPE '\\'")
        params["pattern"] = f"%{_escaped(contains.lower())}%"
    out: list[Summary] = []
    with ws.reads() as rows:
        for k in kinds:
            start = None
            if after is not None and k == after.kind:
                start = after.name
                if name in (None, start) and _holds(start, contains):  # the rest of its name
                    later = [s for s in _versions(rows, k.value, start) if _past(s, after)]
                    out += later
            wanted = limit - len(out)
            if wanted <= 0:
                break
            past = [] if start is None else ["name > :start"]
            sql = f"{SUMMARY_SQL} WHERE {' AND '.join(where + past)} ORDER BY name LIMIT :limit"
            found = rows(sql, {**params, "kind": k.value, "start": start, "limit": wanted})
            names: dict[str, list[Summary]] = {}
            for row in found:
                names.setdefault(str(row[1]), []).append(_summary(row))
            if len(found) == wanted:  # the last name may hold more versions than were read
                last = next(reversed(names))
                names[last] = _versions(rows, k.value, last)
            for versions in names.values():
                out += sorted(versions, key=lambda s: parse_version(s.version))
    return out[:limit]


def _versions(rows: Rows, kind: str, name: str) -> list[Summary]:
    """Every version of ``KIND/NAME``, by precedence."""
    found = rows(f"{SUMMARY_SQL} WHERE kind = :kind AND name = :name", {"kind": kind, "name": name})
    return sorted(map(_summary, found), key=lambda s: parse_version(s.version))


def _summary(row: Sequence[Any]) -> Summary:
    k, n, v, yanked, at, publisher, digest = row
    return Summary(k, n, v, flag(yanked), when(at), publisher, digest)


def _past(summary: Summary, after: ArtifactRef) -> bool:
    return parse_version(summary.version) > after.version


def _holds(name: str, contains: str | None) -> bool:
    return not contains or contains.lower() in name


def _escaped(text: str) -> str:
    """``text`` matched as itself by ``LIKE … ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True, slots=True)
class NamePage:
    """One page of published names: each name's versions (highest last), and the ``after``
    of the next page (``KIND/NAME`` of this page's last name) when more names follow."""

    names: list[tuple[str, str, list[Summary]]]
    next_after: str | None


def name_page(
    ws: Workspace,
    kind: Kind | None = None,
    contains: str | None = None,
    after: str | None = None,
    limit: int = 100,
) -> NamePage:
    """Up to ``limit`` names (kind by kind, names in the database's order) with every version
    of each; ``contains`` keeps the names holding that text; ``after`` (``KIND/NAME``, the
    previous page's ``next_after``) starts past that name (keyset paging, as runs are paged:
    each page reads its own names off the ``(kind, name)`` index, not the whole registry)."""
    order = list(Kind)
    kinds = [kind] if kind else order
    start: tuple[Kind, str] | None = None
    if after:
        after_kind, _, after_name = after.partition("/")
        start = (parse_kind(after_kind), after_name)
        kinds = [k for k in kinds if order.index(k) >= order.index(start[0])]
    params: dict[str, Any] = {}
    where = ["kind = :kind"]
    if contains:
        params["pattern"] = f"%{_escaped(contains.lower())}%"
        where.append("name LIKE :pattern ESCAPE '\\'")
    picked: list[tuple[str, str]] = []
    summaries: dict[tuple[str, str], list[Summary]] = {}
    with ws.reads() as rows:
        for k in kinds:
            wanted = limit + 1 - len(picked)  # one more than a page: is there a next one?
            if wanted <= 0:
                break
            past = ["name > :after"] if start is not None and k == start[0] else []
            sql = (
                "SELECT DISTINCT name FROM artifacts WHERE "
                + " AND ".join(where + past)
                + " ORDER BY name LIMIT :limit"
            )
            past_name = start[1] if start is not None else None
            found = rows(sql, {**params, "kind": k.value, "after": past_name, "limit": wanted})
            picked += [(k.value, str(n)) for (n,) in found]
        shown = picked[:limit]
        for page_kind in dict.fromkeys(k for k, _ in shown):
            names = [n for kk, n in shown if kk == page_kind]
            marks = ", ".join(f":n{i}" for i in range(len(names)))
            sql = SUMMARY_SQL + f" WHERE kind = :kind AND name IN ({marks})"
            named = {f"n{i}": n for i, n in enumerate(names)}
            for row in rows(sql, {"kind": page_kind, **named}):
                kk, n, v, yanked, at, publisher, digest = row
                summaries.setdefault((kk, n), []).append(
                    Summary(kk, n, v, flag(yanked), when(at), publisher, digest)
                )
    for versions in summaries.values():
        versions.sort(key=lambda s: parse_version(s.version))
    more = len(picked) > limit
    return NamePage(
        [(k, n, summaries.get((k, n), [])) for k, n in shown],
        f"{shown[-1][0]}/{shown[-1][1]}" if more else None,
    )


def published_manifest(rows: Rows, ref: ArtifactRef) -> dict[str, Any]:
    """The manifest ``ref`` was published with (``NotFound`` if it was not)."""
    found = rows(
        "SELECT manifest FROM artifacts WHERE kind = :kind AND name = :name AND version = :version",
        {"kind": ref.kind.value, "name": ref.name, "version": str(ref.version)},
    )
    if not found:
        raise NotFound(what=str(ref))
    manifest: dict[str, Any] = json_value(found[0][0])
    return manifest


SHOW_SQL = (
    "SELECT id, manifest_digest, publisher, published_at, yanked, yank_reason, manifest"
    " FROM artifacts WHERE kind = :kind AND name = :name AND version = :version"
)


def show(ws: Workspace, ref: ArtifactRef) -> dict[str, Any]:
    key = {"kind": ref.kind.value, "name": ref.name, "version": str(ref.version)}
    with ws.reads() as rows:
        found = rows(SHOW_SQL, key)
        if not found:
            raise NotFound(what=str(ref))
        ((row_id, digest, publisher, published_at, yanked, yank_reason, manifest),) = found
        files = rows(FILES_SQL, {"artifact": row_id})
    return {
        "ref": str(ref),
        **key,
        "manifest_digest": digest,
        "publisher": publisher,
        "published_at": when(published_at).isoformat(),
        "yanked": flag(yanked),
        "yank_reason": yank_reason,
        "files": [
            {"path": path, "sha256": sha, "size": int(size), "source": source}
            for path, sha, size, source in files
        ],
        "manifest": json_value(manifest),
    }


YANK_SQL = (
    "UPDATE artifacts SET yanked = :yanked, yank_reason = :reason, yanked_at = :at "
    "WHERE kind = :kind AND name = :name AND version = :version RETURNING id"
)


def yank(ws: Workspace, ref: ArtifactRef, reason: str) -> None:
    """Mark ``ref`` yanked, with its reason, in one plain SQL statement (``Workspace.writes``):
    resolution skips it from then on; lockfiles that pin it still verify."""
    if not reason.strip():
        raise UserError("a yank needs a reason (--reason TEXT)")
    with ws.writes() as rows:
        changed = rows(
            YANK_SQL,
            {
                "yanked": True,
                "reason": reason,
                "at": datetime.now(UTC),
                "kind": ref.kind.value,
                "name": ref.name,
                "version": str(ref.version),
            },
        )
    if not changed:
        raise NotFound(what=str(ref))


CANDIDATES_SQL = (
    "SELECT version, yanked, requires FROM artifacts WHERE kind = :kind AND name = :name"
)


class SqlCandidateSource:
    """Reads candidates from the artifacts table: one indexed query per name, no manifests."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows

    def versions(self, kind: Kind, name: str) -> Sequence[Published]:
        found = self._rows(CANDIDATES_SQL, {"kind": kind.value, "name": name})
        from pinbench.registry.published import published_from_row

        return [published_from_row(v, flag(y), json_value(r)) for v, y, r in found]


def resolve_specs(
    ws: Workspace, specs: Iterable[Spec], *, platform: str = "amd64/cpu"
) -> Resolution:
    """Resolve ranges against this registry (no lockfile written)."""
    with ws.reads() as rows:
        from pinbench.registry.resolve import resolve

        return resolve(specs, SqlCandidateSource(rows), platform=platform)
