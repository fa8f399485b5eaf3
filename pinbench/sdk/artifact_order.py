"""The order a listing of artifact versions is paged in (``GET /api/v1/artifacts``): kind (as
``Kind`` lists them), name, then version precedence; and the key an ``after`` names."""

from __future__ import annotations

from typing import Any

import semver

from pinbench.registry.names import Kind
from pinbench.registry.versions import parse_version
from pinbench.sdk.values import ArtifactRef

KINDS = list(Kind)


def row_key(row: dict[str, Any]) -> tuple[int, str, semver.Version]:
    """A listed version's place in the listing: kind, name, version precedence."""
    return KINDS.index(Kind(row["kind"])), row["name"], parse_version(row["version"])


def ref_key(text: str) -> tuple[int, str, semver.Version]:
    """``after``'s place: the ``KIND/NAME@VERSION`` it names."""
    ref = ArtifactRef.parse(text)
    return KINDS.index(ref.kind), ref.name, ref.version
