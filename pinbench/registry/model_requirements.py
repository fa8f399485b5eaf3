"""A model's own requirements (issue 73, item 8; decision 295): the packages its code
imports (a builder's ``einops``, processing code's ``scipy``), hash-pinned like a framework's
(``name==version`` with the sha256 of each wheel allowed), installed beside the framework's
requirements in the environment the venv runner builds, and only there.

A model's ``requirements`` are for its own code: a model without ``builder``, ``preprocess``
or ``postprocess`` that declares any is refused at publish, as are a package named twice and
an empty list. At lock, a package the framework's environment pins too is refused (one
environment, one version of each package: which one would run is not the model's to choose).
A run of such a model needs the venv runner (``auto`` picks it); the local runner (pinbench's
own environment) and the docker runner (an image of the framework's requirements) refuse it
before anything runs, naming ``--runner venv``. (A chain's stage runs no model code of its
own, so a model with requirements is refused as a stage for its code, at lock.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from pinbench.errors import UserError
from pinbench.registry.explain import VersionText
from pinbench.registry.manifest_parts import _IMAGE_DIGEST, _Strict

NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?\Z")
"""A package's name as PEP 508 allows it (at most 100 characters)."""

WHERE = (
    "declare it in the model's `requirements` (name==version with the sha256 of its wheel, "
    "as a framework's: docs/processing.md, a model's own requirements; run with --runner venv), "
    "or, for the evaluator's own dependencies, in the framework manifest's requirements"
)
"""Where a package a run's code imports is declared, for the messages of a missing module."""


def canonical(name: str) -> str:
    """A package's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}\Z")
"""A version as PEP 440 spells one (its public and local parts): no space, no line break, so a
pin written into the requirements file uv reads is one requirement, never an option."""


def check_pin(name: str, version: str) -> None:
    """A requirement's name and version (every manifest's, a framework's too), each one token
    of a ``name==version --hash=...`` line (``ValueError`` naming which is not)."""
    if not NAME.fullmatch(name):
        raise ValueError(f"requirement {name[:100]!r} is not a package name (PEP 508)")
    if not VERSION.fullmatch(version):
        raise ValueError(f"requirement {name}'s version {version[:100]!r} is not a version")


def check_requirements(requirements: list[Requirement] | None, *, has_code: bool) -> None:
    """A model manifest's ``requirements``: refused (``ValueError``, naming why) where empty,
    a name is not a package's, a package is named twice, or the model runs no code of its own."""
    if requirements is None:
        return
    if not requirements:
        raise ValueError("`requirements` is empty: leave it out")
    if not has_code:
        raise ValueError(
            "`requirements` are the packages the model's own code imports (its builder, "
            "preprocess or postprocess); this model has none: leave them out"
        )
    seen: set[str] = set()
    for r in requirements:
        if canonical(r.name) in seen:
            raise ValueError(f"requirement {r.name} is named twice")
        seen.add(canonical(r.name))


def check_environment(
    extra: Sequence[Requirement] | None,
    *,
    model: str,
    environment: str,
    pinned: Sequence[Requirement],
) -> None:
    """At lock: model ``model``'s requirements beside those the framework ``environment``
    (``torch 2.13.0``) pins, none pinned by both (``ValueError`` naming them)."""
    if not extra:
        return
    if not pinned:
        raise ValueError(
            f"model {model} declares requirements, which only the venv "
            "runner installs, from the framework's hash-pinned requirements: this framework "
            "environment has none (an image only)"
        )
    theirs = {canonical(r.name): r for r in pinned}
    both = [r for r in extra if canonical(r.name) in theirs]
    if both:
        named = ", ".join(f"{r.name} ({theirs[canonical(r.name)].version} there)" for r in both)
        raise ValueError(
            f"the model's requirements name packages the framework environment "
            f"{environment} pins too: {named}; leave them out of the model's"
        )


class NeedsVenv(UserError):
    """A model with its own requirements asked of a runner that cannot install them."""

    def __init__(self, *, runner: str, packages: list[str]) -> None:
        super().__init__(
            f"the model declares requirements of its own ({', '.join(packages)}), which only "
            f"the venv runner installs (beside the framework's); the {runner} runner cannot: "
            "run with --runner venv"
        )
        self.runner = runner
        self.packages = packages


class Requiring(Protocol):
    """A model that may declare requirements (a lockfile's ``LockedModel``)."""

    @property
    def requirements(self) -> Sequence[Requirement] | None: ...


def check_runner(model: Requiring | None, runner: str) -> None:
    """Before anything runs: a model with its own requirements runs in the venv runner."""
    requirements = model.requirements if model is not None else None
    if requirements and runner != "venv":
        packages = [f"{r.name}=={r.version}" for r in requirements]
        raise NeedsVenv(runner=runner, packages=packages)


class Requirement(_Strict, frozen=True, kw_only=True):
    """One hash-pinned package: ``name==version`` with its allowed sha256 hashes."""

    name: str
    version: VersionText
    hashes: list[str]

    def __post_init__(self) -> None:
        check_pin(self.name, self.version)
        if not self.hashes:
            raise ValueError(f"requirement {self.name} must list at least one sha256 hash")
        for h in self.hashes:
            if not _IMAGE_DIGEST.fullmatch(h):
                raise ValueError(f"hash {h!r} of {self.name} must be 'sha256:' + 64 hex digits")
