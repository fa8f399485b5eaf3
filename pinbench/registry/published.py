"""What resolution knows of one published version (``Published``), built from the ``requires``
JSON an artifact row keeps, and the SQL that reads a version's files. Apart from the resolver
(``resolve``, resolvelib's) and the catalog's listings so that checking a lockfile against the
registry (``trust``: every pin within the ranges that name it) imports neither.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pinbench.registry.names import Kind
from pinbench.registry.versions import Version, parse_version

FILES_SQL = (
    "SELECT path, sha256, size, source FROM artifact_files"
    " WHERE artifact_id = :artifact ORDER BY path"
)
"""A published version's files (``artifacts.id``), by path: what ``show`` lists and a lockfile
pins."""


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: Kind
    name: str
    range: str


@dataclass(frozen=True, slots=True)
class Published:
    """What resolution knows of one published version."""

    version: Version
    yanked: bool = False
    requires: tuple[Dependency, ...] = ()
    platforms: frozenset[str] | None = None
    """Platforms (``arch/device``) it is available on; None means all."""
    platform_requires: Mapping[str, tuple[Dependency, ...]] = field(default_factory=dict)
    """Extra dependencies that apply on one platform only (a framework's image)."""


def published_from_row(version: str, yanked: bool, requires: list[dict[str, Any]]) -> Published:
    """Build ``Published`` from the ``requires`` JSON kept on each artifact row."""
    plain: list[Dependency] = []
    per_platform: dict[str, list[Dependency]] = defaultdict(list)
    platforms: set[str] = set()
    for entry in requires:
        platform = entry.get("platform")
        dep = (
            Dependency(Kind(entry["kind"]), entry["name"], entry["range"])
            if entry.get("kind")
            else None
        )
        if platform is None:
            if dep is not None:
                plain.append(dep)
            continue
        platforms.add(platform)
        if dep is not None:
            per_platform[platform].append(dep)
    return Published(
        version=parse_version(version),
        yanked=yanked,
        requires=tuple(plain),
        platforms=frozenset(platforms) if platforms else None,
        platform_requires={k: tuple(v) for k, v in per_platform.items()},
    )
