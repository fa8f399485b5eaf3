"""The framework versions pinbench's extras install, and each one's framework manifest.

Each pins its evaluation environment twice over: the hash-pinned requirements lock shipped in
this package (one wheel per package, for the venv runner), and an image by name (``pinbench
images build`` publishes it; the docker runner needs it). The image is linked by name and
range: until one is published, lockfiles pin the requirements only. The built-in catalog, the
image builder and ``pinbench manifest framework`` all take them from here.
"""

from __future__ import annotations

from typing import Any

import msgspec

from pinbench.environments import requirements_for

VERSIONS = {
    "onnxruntime": "1.31.0",
    "torch": "2.13.0",
    "tensorflow": "2.21.0",
    "transformers": "5.23.0",
    "onnxruntime-genai": "0.18.0",
    "ctranslate2": "4.8.5",
    "openvino-genai": "2026.4.1.0",
    "llama-cpp-python": "0.3.36",
}
IMAGE_RANGE = "^1.0.0"
BUMPED: dict[str, str] = {}
"""A catalog framework artifact's version where it is not the release's own: its content
changed after the release's artifact was published (a published version never changes), so
the catalog publishes it under the next patch, ``installs:`` naming the release (decision
146). ``tests/test_catalog_versions.py`` records each released version's digest."""


def artifact_version(framework: str) -> str:
    """The version of ``framework``'s catalog artifact: ``BUMPED``, else its release, whose
    first three parts make a semver where it has four (OpenVINO's ``2026.4.1.0``: the artifact
    is ``2026.4.1`` and says it ``installs`` the release)."""
    release = VERSIONS[framework]
    parts = release.split(".")
    return BUMPED.get(framework, ".".join(parts[:3]) if len(parts) == 4 else release)


def image_name(framework: str) -> str:
    """The image artifact that provides ``framework`` at its catalog version."""
    return f"pinbench/{framework}-{VERSIONS[framework]}"


def manifest_data(name: str, version: str, installs: str | None = None) -> dict[str, Any]:
    """The framework manifest of ``name`` at ``version``: its shipped requirements lock (the
    framework and the evaluator's own dependencies, hash-pinned) and its image by name.
    ``installs``: the release its environments install, where ``version`` is not it."""
    release = installs or version
    return {
        "kind": "framework",
        "name": name,
        "version": version,
        **({"installs": installs} if installs else {}),
        "description": f"{name} {release}, CPU, CPython 3.11",
        "environments": [
            {
                "platform": {"arch": "amd64", "device": "cpu"},
                "python": "3.11",
                "image": {"name": image_name(name), "range": IMAGE_RANGE},
                "requirements": [msgspec.to_builtins(r) for r in requirements_for(name)],
            }
        ],
    }
