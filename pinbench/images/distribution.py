"""``pinbench images push | pull``: image artifacts to and from any registry, by digest.

An image is pushed as ``REGISTRY/NAME:VERSION``. Pulling asks the registry for that tag's
manifest digest, pulls ``REGISTRY/NAME@sha256:...`` (by digest, never by tag), and accepts the
result only if its image ID is the artifact's pinned digest; anything else is removed again.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, ImageNotFound, NotFound

from pinbench.errors import UserError
from pinbench.registry.catalog import published_manifest
from pinbench.registry.names import ArtifactRef, Kind
from pinbench.workspace import Workspace


class RegistryError(UserError):
    def __init__(self, *, action: str, reference: str, reason: str) -> None:
        super().__init__(f"{action} {reference} failed: {reason}")
        self.action = action
        self.reference = reference
        self.reason = reason


class PulledWrongImage(UserError):
    def __init__(self, *, reference: str, pinned: str, got: str) -> None:
        super().__init__(
            f"{reference} is image {got}, the artifact pins {pinned}: refused and removed"
        )
        self.reference = reference
        self.pinned = pinned
        self.got = got


@dataclass(frozen=True, slots=True)
class Transfer:
    reference: str
    """``REGISTRY/NAME@sha256:...``: the registry manifest digest."""
    image_id: str


def image_digest(ws: Workspace, ref: ArtifactRef) -> str:
    if ref.kind != Kind.IMAGE:
        raise UserError(f"{ref} is not an image artifact")
    with ws.reads() as rows:
        return str(published_manifest(rows, ref)["digest"])


def push(ws: Workspace, client: Any, ref: ArtifactRef, registry: str) -> Transfer:
    digest = image_digest(ws, ref)
    repository = f"{registry}/{ref.name}"
    try:
        image = client.images.get(digest)
    except ImageNotFound:
        raise UserError(
            f"{ref} ({digest}) is not in this Docker Engine: build or pull it"
        ) from None
    image.tag(repository, str(ref.version))
    pushed = None
    try:
        for chunk in client.images.push(repository, str(ref.version), stream=True, decode=True):
            if "error" in chunk:
                raise RegistryError(action="push", reference=repository, reason=str(chunk["error"]))
            aux = chunk.get("aux")
            if isinstance(aux, dict) and "Digest" in aux:
                pushed = str(aux["Digest"])
    except APIError as exc:
        raise RegistryError(action="push", reference=repository, reason=str(exc)) from None
    finally:
        with contextlib.suppress(APIError):
            client.images.remove(f"{repository}:{ref.version}", noprune=True)
    if pushed is None:
        raise RegistryError(action="push", reference=repository, reason="no digest reported")
    return Transfer(f"{repository}@{pushed}", digest)


def pull(ws: Workspace, client: Any, ref: ArtifactRef, registry: str) -> Transfer:
    pinned = image_digest(ws, ref)
    tagged = f"{registry}/{ref.name}:{ref.version}"
    try:
        manifest = client.api.inspect_distribution(tagged)["Descriptor"]["digest"]
    except (APIError, NotFound, KeyError) as exc:
        raise RegistryError(action="pull", reference=tagged, reason=str(exc)) from None
    by_digest = f"{registry}/{ref.name}@{manifest}"
    try:
        image = client.images.pull(by_digest)
    except APIError as exc:
        raise RegistryError(action="pull", reference=by_digest, reason=str(exc)) from None
    if image.id != pinned:
        with contextlib.suppress(APIError):
            client.images.remove(image.id, force=True)
        raise PulledWrongImage(reference=by_digest, pinned=pinned, got=image.id)
    image.tag(ref.name, str(ref.version))
    return Transfer(by_digest, image.id)
