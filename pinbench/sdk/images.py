"""``Images``: the framework images ``--runner docker`` runs in (``Registry.images()``): build
and publish them as image artifacts, push them to an OCI registry and pull them back by
digest. Needs a Docker Engine (``DOCKER_HOST``); local registries only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.images.build import BuiltImage
    from pinbench.images.distribution import Transfer
    from pinbench.registry.names import ArtifactRef
    from pinbench.sdk.registry import Registry, Say


class Images:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def build(
        self,
        frameworks: Sequence[str] = (),
        *,
        base: str | None = None,
        say: Say | None = None,
    ) -> list[BuiltImage]:
        """Build each framework's evaluation image (default: every built-in framework) from
        its hash-pinned lock, with no network in the build, and publish it as an image
        artifact; one already published for the same requirements, code and base is reused.
        ``base``: an image with CPython 3.11 (default: Debian bookworm built here)."""
        from pinbench.environments.frameworks import VERSIONS
        from pinbench.images.base import ensure_base
        from pinbench.images.build import build_image
        from pinbench.images.engine import connect

        quiet: Say = say or (lambda _: None)
        client = connect()
        ws = self.registry._local("building images")
        (ws.settings.home / "tmp").mkdir(parents=True, exist_ok=True)
        base_id = base or ensure_base(client, ws.settings.home / "cache" / "images", quiet)
        return [build_image(ws, client, fw, base_id, quiet) for fw in frameworks or VERSIONS]

    def push(self, image: str, registry: str) -> Transfer:
        """Push an image artifact (``image/NAME@VERSION``, ``image/`` optional) to the OCI
        registry ``HOST:PORT`` as ``NAME:VERSION``."""
        from pinbench.images.distribution import push
        from pinbench.images.engine import connect

        ws = self.registry._local("pushing an image")
        return push(ws, connect(), _image_ref(image), registry)

    def pull(self, image: str, registry: str) -> Transfer:
        """Pull an image artifact from ``registry`` by digest; refused unless its image ID is
        the artifact's pinned digest."""
        from pinbench.images.distribution import pull
        from pinbench.images.engine import connect

        ws = self.registry._local("pulling an image")
        return pull(ws, connect(), _image_ref(image), registry)


def _image_ref(text: str) -> ArtifactRef:
    from pinbench.registry.names import ArtifactRef

    return ArtifactRef.parse(text if text.startswith("image/") else f"image/{text}")
