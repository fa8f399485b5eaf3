"""A framework manifest from pinbench's own environment locks.

A framework artifact pins the environment a run installs: the framework's wheel *and* the
evaluator's own dependencies (msgspec, numpy, LoadGen, ...), each by sha256. Pinning only the
framework's wheel gives an environment the evaluator cannot start in. The locks shipped in
``pinbench/environments`` are exactly that set, one per framework release pinbench supports,
so a framework manifest is written for a release that has a lock, and refused for any other
(naming those that have one): resolving and hashing another release's wheels needs the
network and a resolver run, which is ``scripts/lock_environments.py``'s job (decision 87).
The manifest is the one the built-in catalog publishes (``pinbench.environments.frameworks``):
publishing it where the catalog is already published is a no-op.
"""

from __future__ import annotations

from typing import Any

from pinbench.authoring.errors import AuthoringError, NoFrameworkLock
from pinbench.registry.manifest import parse_manifest


def parse_pin(spec: str) -> tuple[str, str]:
    """``NAME==VERSION`` as its two parts."""
    name, sep, version = spec.partition("==")
    name, version = name.strip(), version.strip()
    if not sep or not name or not version:
        raise AuthoringError(f"expected NAME==VERSION (e.g. onnxruntime==1.31.0), got {spec!r}")
    return name, version


def locked_versions() -> dict[str, str]:
    """The framework releases pinbench ships an environment lock for."""
    from pinbench.environments import LOCKS
    from pinbench.environments.frameworks import VERSIONS

    return {n: v for n, v in VERSIONS.items() if (LOCKS / f"{n}.txt").is_file()}


def framework_manifest(spec: str) -> dict[str, Any]:
    """The framework manifest for ``NAME==VERSION`` (valid), or ``NoFrameworkLock``."""
    from pinbench.environments.frameworks import manifest_data

    name, version = parse_pin(spec)
    locked = locked_versions()
    if locked.get(name) != version:
        raise NoFrameworkLock(framework=name, version=version, locked=locked)
    data = manifest_data(name, version)
    parse_manifest(data, source=f"the manifest written for {name}=={version}")
    return data
