"""MLModelScope's ``container`` section: image tags per platform, kept as attributes.

``container: {amd64: {cpu: raiproject/carml-tensorflow:amd64-cpu, gpu: ...}}`` names tags, not
digests, so the images cannot be pinned (a pinbench image artifact is a digest). Each becomes
the attribute ``mlmodelscope.container.ARCH.DEVICE`` with the reference in full
(``docker.io/raiproject/carml-tensorflow:amd64-cpu``), and a note says they are tags; a tag that
names the other device (several MLModelScope manifests swap cpu and gpu) is kept as written,
with a note.
"""

from __future__ import annotations

import re
from typing import Final

from pinbench.registry.manifest_parts import Scalar
from pinbench.registry.mlmodelscope.reader import Reader

FACT: Final = "mlmodelscope."
"""Prefix of the attributes that keep MLModelScope's own facts."""
PLATFORM_ARCHES: Final = ("amd64", "arm64")
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REPOSITORY = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def image_reference(text: str) -> str:
    """A Docker image reference in full: ``raiproject/x:tag`` → ``docker.io/raiproject/x:tag``.

    Docker's rules: a first part with '.' or ':', or ``localhost``, is a registry; no registry
    is Docker Hub, where a one-part name is under ``library/``; no tag (and no digest) is
    ``latest``. Raises ``ValueError`` saying what is wrong.
    """
    first, slash, rest = text.partition("/")
    registry_given = slash and ("." in first or ":" in first or first == "localhost")
    host, remainder = (first, rest) if registry_given else ("docker.io", text)
    name, at, digest = remainder.partition("@")
    repository, colon, tag = name.partition(":")
    if not _REPOSITORY.fullmatch(repository):
        raise ValueError(f"{text!r} is not an image reference (REGISTRY/REPOSITORY:TAG)")
    if colon and not _TAG.fullmatch(tag):
        raise ValueError(f"{tag!r} in {text!r} is not an image tag")
    if at and not _DIGEST.fullmatch(digest):
        raise ValueError(f"{digest!r} in {text!r} is not an image digest (sha256:...)")
    if host == "docker.io" and "/" not in repository:
        repository = f"library/{repository}"
    suffix = f":{tag}" if colon else ("" if at else ":latest")
    return f"{host}/{repository}{suffix}{'@' + digest if at else ''}"


def containers(reader: Reader) -> dict[str, Scalar]:
    """``mlmodelscope.container.ARCH.DEVICE`` attributes, one per image reference."""
    refs: dict[str, Scalar] = {}
    for arch, devices in reader.mapping(reader.typed.get("container"), "container").items():
        if arch not in PLATFORM_ARCHES:
            reader.note(
                f"container.{arch}",
                f"is not a pinbench platform ({', '.join(PLATFORM_ARCHES)}): kept for "
                "reference only",
            )
        for device in reader.mapping(devices, f"container.{arch}"):
            refs[f"{FACT}container.{arch}.{device}"] = _container(reader, arch, device)
    if refs:
        reader.note(
            "container",
            f"image tags, not digests ({', '.join(sorted(set(map(str, refs.values()))))}): kept "
            f"as attributes {FACT}container.*, not pinned (pinbench pins an image by digest)",
        )
    return refs


def _container(reader: Reader, arch: str, device: str) -> str:
    field = f"container.{arch}.{device}"
    text = reader.required_text(field, "container", arch, device, why="an image reference")
    try:
        reference = image_reference(text)
    except ValueError as exc:
        reader.refuse(field, str(exc))
    tag = reference.rpartition(":")[2]
    named = re.search(r"(cpu|gpu)$", tag)
    if named and device in ("cpu", "gpu") and named[1] != device:
        reader.note(field, f"names the {tag} tag, for the other device: kept as written")
    return reference
