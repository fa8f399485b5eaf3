"""A built-in catalog artifact's content never changes under a version it was released with
(issue 38 item 13b; invariant 1, decision 146).

The catalog once republished ``framework/onnxruntime@1.31.0`` with another environment list
under the same version, and a home upgraded from an older pinbench could no longer run
``make demo``: publish refuses different content under a published version. Each framework
artifact's manifest digest (as the catalog writes and publish reads it) is recorded here per
version; changing its content (a requirements lock, the image range, the description) without
a new version fails with what to do. A new version is recorded as a new row; a row is never
edited.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pinbench.catalog import frameworks
from pinbench.catalog.files import dump
from pinbench.environments import frameworks as releases
from pinbench.registry.catalog import resolve_specs
from pinbench.registry.manifest import FrameworkManifest, load_manifest, manifest_digest
from pinbench.registry.names import Spec
from pinbench.registry.publish import VersionConflict, publish
from pinbench.workspace import Workspace

RELEASED: dict[str, str] = {
    # framework/NAME@VERSION: the manifest sha256 it was released with (never edited)
    "framework/onnxruntime@1.31.0":
        "d5dd39428e66f36aa95532865a4ac7515dc429f00722c2c08b6092baf370c9d6",
    "framework/torch@2.13.0":
        "4888db8d05825d3516200d8036ec682f96c4e01510c02ca5fcb4a9ce4518bb09",
    "framework/tensorflow@2.21.0":
        "77c624126b0ef020a1f49f535e9c1f8fa141060aee01c95667c9fcd1bd9da6a9",
    "framework/transformers@5.23.0":
        "f097a5eb96d778c992ed118cb01def7cb10a7aa7f77a23417320c54589c97307",
    "framework/onnxruntime-genai@0.18.0":
        "46b33d4b82ce79c07291af0031a13baa671749cd8d5230748f5dbd4785ff69de",
    "framework/ctranslate2@4.8.5":
        "c0e4a6576e9115e4fcb5c33bddc2289097458380d5a19f7cfa1eb02fe1b777b3",
    "framework/openvino-genai@2026.4.1":
        "fd3378b2dd1d510ddc976353c1b87eb0b3abd339aed4056a61e89d5b120cc089",
    "framework/llama-cpp-python@0.3.36":
        "5e55bfd4134bbc319bfc303ddc9109725e784837b53afb3de987303a9cdb8334",
}  # fmt: skip


def catalog_digests(root: Path) -> dict[str, str]:
    """Each framework artifact the catalog writes, by ``framework/NAME@VERSION``."""
    out = {}
    for name in frameworks.VERSIONS:
        manifest = load_manifest(frameworks.write(root, name))
        out[f"framework/{manifest.name}@{manifest.version}"] = manifest_digest(manifest).hex
    return out


def changed_without_a_new_version(now: dict[str, str]) -> list[str]:
    """A line per artifact whose content moved under a released version."""
    return [
        f"{ref} has manifest sha256 {digest}, but was released with {RELEASED[ref]}: a "
        "published version never changes, and a home that has it refuses the new content. "
        "Bump the artifact's version (its patch, with `installs:` naming the framework "
        "release: docs/decisions/0146) and add the new version's digest to RELEASED"
        for ref, digest in sorted(now.items())
        if ref in RELEASED and RELEASED[ref] != digest
    ]


def test_no_catalog_framework_changes_under_a_released_version(tmp_path: Path) -> None:
    now = catalog_digests(tmp_path)
    assert not changed_without_a_new_version(now), "\n".join(changed_without_a_new_version(now))
    unrecorded = sorted(set(now) - set(RELEASED))
    assert not unrecorded, (
        f"record the manifest sha256 of each new version in RELEASED: {unrecorded}"
    )


def test_a_change_under_a_released_version_says_to_bump_it(tmp_path: Path) -> None:
    """The check itself: one byte of another environment list under the same version."""
    now = catalog_digests(tmp_path)
    ref = "framework/onnxruntime@1.31.0"
    now[ref] = "0" * 64
    (line,) = changed_without_a_new_version(now)
    assert line.startswith(f"{ref} has manifest sha256 {'0' * 64}, but was released with")
    assert "Bump the artifact's version" in line


def test_a_bumped_version_publishes_beside_the_release_and_names_it(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fix the message asks for, on a home that has the release with other content (an
    older pinbench's catalog): the same version is refused, the bumped one is published with
    ``installs`` naming the release, and a model's range resolves to it."""
    old = frameworks.manifest_data("onnxruntime", "1.31.0")
    old["environments"] = [{**old["environments"][0], "requirements": []}]  # another list
    older = dump(tmp_path / "older.yaml", old)
    publish(ws, load_manifest(older), manifest_dir=tmp_path)

    (tmp_path / "same").mkdir()
    (tmp_path / "bumped").mkdir()
    same = load_manifest(frameworks.write(tmp_path / "same", "onnxruntime"))
    with pytest.raises(VersionConflict, match="Published versions never change"):
        publish(ws, same, manifest_dir=tmp_path)

    monkeypatch.setitem(releases.BUMPED, "onnxruntime", "1.31.1")
    bumped = load_manifest(frameworks.write(tmp_path / "bumped", "onnxruntime"))
    assert isinstance(bumped, FrameworkManifest)
    assert (str(bumped.version), bumped.installs) == ("1.31.1", "1.31.0")
    assert bumped.installed_version == "1.31.0"  # what a run checks it finds
    publish(ws, bumped, manifest_dir=tmp_path)
    assert frameworks.image_name("onnxruntime") == "pinbench/onnxruntime-1.31.0"
    chosen = resolve_specs(ws, [Spec.parse("framework/onnxruntime@>=1.17 <2")]).refs
    assert [str(r) for r in chosen] == ["framework/onnxruntime@1.31.1"]
