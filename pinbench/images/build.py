"""``pinbench images build``: one evaluation image per framework, published as an ``image``
artifact whose digest is the image ID.

The build context holds the framework's hash-pinned requirements, exactly the wheels they pin
(downloaded on the host by pip, which knows this machine's indexes, and checked against the
pins) and a copy of pinbench's evaluator source. It is copied into a container of the base
image, with no network, that installs them and removes it (``INSTALL``); the container is then
committed as the image (``CHANGES``), one layer over the base (decision 269). An image
already published for the same requirements, evaluator and base, and present in the engine, is
reused rather than rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from docker.errors import ImageNotFound

from pinbench.artifacts.digest import hash_file
from pinbench.environments import lock_path, parse_lock, requirements_text
from pinbench.environments.frameworks import VERSIONS, image_name
from pinbench.errors import UserError
from pinbench.registry.manifest import Requirement, load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.versions import parse_version
from pinbench.worker.source import copy_evaluator, evaluator_digest
from pinbench.workspace import Workspace

FIRST_VERSION = "1.0.0"
Say = Callable[[str], None]


class ImageBuildFailed(UserError):
    def __init__(self, *, framework: str, reason: str) -> None:
        super().__init__(f"building the {framework} image failed: {reason}")
        self.framework = framework
        self.reason = reason


@dataclass(frozen=True, slots=True)
class BuiltImage:
    framework: str
    ref: str
    """``image/NAME@VERSION``"""
    digest: str
    size: int
    reused: bool


def build_image(ws: Workspace, client: Any, framework: str, base: str, say: Say) -> BuiltImage:
    if framework not in VERSIONS:
        raise UserError(f"no image recipe for {framework!r}; frameworks: {', '.join(VERSIONS)}")
    requirements = parse_lock(lock_path(framework).read_text(encoding="utf-8"))
    wanted = {
        "framework": framework,
        "framework_version": VERSIONS[framework],
        "requirements_sha256": hashlib.sha256(requirements_text(requirements).encode()).hexdigest(),
        "evaluator": evaluator_digest(),
        "base": base,
    }
    name = image_name(framework)
    published = _published(ws, name)
    for version, manifest in published:
        attrs = manifest.get("attributes", {})
        if all(attrs.get(k) == v for k, v in wanted.items()) and _present(
            client, manifest["digest"]
        ):
            say(f"image/{name}@{version} is up to date ({manifest['digest'][7:19]})")
            return BuiltImage(framework, f"image/{name}@{version}", manifest["digest"],
                              int(attrs.get("size_bytes", 0)), reused=True)  # fmt: skip
    home = ws.settings.home
    with tempfile.TemporaryDirectory(prefix="image-", dir=home / "tmp") as tmp:
        context = Path(tmp)
        _context(context, framework, requirements, home / "cache" / "wheelhouse", say)
        digest = _docker_build(client, context, base, f"{name}:build", framework, say)
    image: Any = client.images.get(digest)
    version = _next_version([v for v, _ in published])
    image.tag(name, version)
    client.images.remove(f"{name}:build", noprune=True)  # the version tag names it now
    size = int(image.attrs.get("Size", 0))
    manifest_path = home / "tmp" / f"image-{framework}-{version}.yaml"
    manifest_path.write_text(
        yaml.safe_dump(
            {
                "kind": "image",
                "name": name,
                "version": version,
                "description": f"pinbench evaluator with {framework} {VERSIONS[framework]} (CPU)",
                "digest": digest,
                "platform": {"arch": "amd64", "device": "cpu"},
                "attributes": {**wanted, "size_bytes": size},
            },
            sort_keys=False,
        )
    )
    publish(ws, load_manifest(manifest_path), manifest_dir=manifest_path.parent)
    manifest_path.unlink()
    say(f"published image/{name}@{version} ({digest[7:19]}, {size / 2**20:.0f} MiB)")
    return BuiltImage(framework, f"image/{name}@{version}", digest, size, reused=False)


def _published(ws: Workspace, name: str) -> list[tuple[str, dict[str, Any]]]:
    from pinbench.db.plain import json_value

    with ws.reads() as rows:
        found = rows(
            "SELECT version, manifest FROM artifacts WHERE kind = 'image' AND name = :name "
            "AND yanked = :no",
            {"name": name, "no": False},
        )
    published = [(str(v), dict(json_value(m))) for v, m in found]
    return sorted(published, key=lambda r: parse_version(r[0]), reverse=True)


def _next_version(versions: list[str]) -> str:
    """1.0.0 for the first build, then the next patch: images are rebuilt, never replaced."""
    if not versions:
        return FIRST_VERSION
    top = max(parse_version(v) for v in versions)
    return str(top.bump_patch())


def _present(client: Any, digest: str) -> bool:
    try:
        client.images.get(digest)
        return True
    except ImageNotFound:
        return False


def _context(
    context: Path, framework: str, requirements: list[Requirement], wheelhouse: Path, say: Say
) -> None:
    (context / "requirements.txt").write_text(requirements_text(requirements))
    wheels = context / "wheels"
    wheels.mkdir()
    for wheel in _wheels(framework, requirements, wheelhouse, say):
        (wheels / wheel.name).hardlink_to(wheel)
    copy_evaluator(context / "evaluator", bytecode=False)  # compiled by INSTALL


def _wheels(
    framework: str, requirements: list[Requirement], wheelhouse: Path, say: Say
) -> list[Path]:
    """The pinned wheels, downloaded into the host's wheelhouse by pip (hash-checked), each
    hashed again here: only the files named like a pin are read, not the whole wheelhouse."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    req = wheelhouse / f"{framework}.requirements.txt"
    req.write_text(requirements_text(requirements))
    say(f"downloading {framework}'s pinned wheels to {wheelhouse} (pip, hashes required)")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
         "--only-binary", ":all:", "-d", str(wheelhouse), "-r", str(req)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-4:])
        raise ImageBuildFailed(framework=framework, reason=f"pip download failed: {tail}")
    found = []
    for r in requirements:
        prefix = f"{re.sub(r'[-_.]+', '_', r.name)}-{r.version}-".lower()  # wheel file names
        pins = {h.removeprefix("sha256:") for h in r.hashes}
        for wheel in wheelhouse.glob("*.whl"):
            if wheel.name.lower().startswith(prefix) and hash_file(wheel)[0].hex in pins:
                found.append(wheel)
                break
    if len(found) != len(requirements):
        raise ImageBuildFailed(
            framework=framework,
            reason=f"{len(found)} of {len(requirements)} pinned wheels in {wheelhouse}",
        )
    return found


INSTALL = """
python3 -m venv /opt/pinbench/venv
/opt/pinbench/venv/bin/python -m pip install --no-index --find-links /build/wheels \\
    --require-hashes --no-deps --only-binary :all: --no-cache-dir --quiet \\
    --disable-pip-version-check -r /build/requirements.txt
/opt/pinbench/venv/bin/python -m pip uninstall --yes --quiet pip setuptools
mv /build/evaluator /opt/pinbench/lib
/opt/pinbench/venv/bin/python -m compileall -q /opt/pinbench/lib
rm -rf /build
"""
"""The build, run in a container of the base holding the build context at ``/build`` (copied
in before it starts), with no network: a venv with exactly the pinned wheels, the evaluator's
source compiled, and the context removed, so that it is not in the committed layer."""
CHANGES = [
    "ENV PYTHONPATH=/opt/pinbench/lib PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 HOME=/tmp "
    "TF_CPP_MIN_LOG_LEVEL=2",
    "USER 65534:65534",
    "WORKDIR /tmp",
    'ENTRYPOINT ["/opt/pinbench/venv/bin/python", "-s", "-m", "pinbench.worker.main"]',
    "CMD []",
]
"""The image's configuration, set as the container is committed."""
BUILD_LABEL = "io.pinbench.image-build"
"""On a build's container (the framework as its value), so that one left by a killed build can
be found: ``docker ps -a --filter label=io.pinbench.image-build``."""
BUILD_TIMEOUT_S = 3600


def _docker_build(client: Any, context: Path, base: str, tag: str, framework: str, say: Say) -> str:
    """Copy the context into a container of ``base``, run ``INSTALL`` in it and commit it with
    ``CHANGES``: one layer holding ``/opt/pinbench``. (A Dockerfile build, decision 34, kept the
    wheels in a build stage's layer and copied the venv into a final stage: the torch image's
    gigabyte written three times; decision 269.)"""
    import requests

    repository, _, version = tag.rpartition(":")
    say(f"building the {framework} image (a container of the base, no network)")
    started = time.monotonic()
    container: Any = client.containers.create(
        base, command=["/bin/sh", "-ec", INSTALL], user="0:0", working_dir="/",
        network_mode="none", labels={BUILD_LABEL: framework},
    )  # fmt: skip
    try:
        with tempfile.TemporaryFile(dir=context.parent) as archive:
            with tarfile.open(fileobj=archive, mode="w") as tar:
                tar.add(context, arcname="build", filter=_as_root)
            archive.seek(0)
            container.put_archive("/", archive)
        container.start()
        try:
            status = int(container.wait(timeout=BUILD_TIMEOUT_S).get("StatusCode", -1))
        except requests.exceptions.RequestException as exc:
            raise ImageBuildFailed(
                framework=framework, reason=f"the install did not end in {BUILD_TIMEOUT_S} s"
            ) from exc
        if status != 0:
            lines = container.logs().decode(errors="replace").strip().splitlines()[-4:]
            raise ImageBuildFailed(
                framework=framework, reason=f"the install exited {status}: {' | '.join(lines)}"
            )
        image: Any = container.commit(repository=repository, tag=version, changes=CHANGES)
    finally:
        with contextlib.suppress(Exception):  # never in place of the build's own error
            container.remove(force=True, v=True)
    digest = str(image.id)
    say(f"built {digest[7:19]} in {time.monotonic() - started:.0f} s")
    return digest


def _as_root(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """A context file as the engine's ``COPY`` wrote it: owned by root, not by whoever builds
    (the files that become ``/opt/pinbench/lib`` keep their owner)."""
    member.uid = member.gid = 0
    member.uname = member.gname = "root"
    return member
