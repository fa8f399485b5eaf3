"""Artifact identities: kinds, names, ``KIND/NAME@VERSION`` references and ``KIND/NAME@RANGE``
specs as immutable value types."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from pinbench.errors import InvalidValue
from pinbench.registry.ranges import Range
from pinbench.registry.versions import Version, parse_version


class Kind(StrEnum):
    MODEL = "model"
    FRAMEWORK = "framework"
    DATASET = "dataset"
    IMAGE = "image"


KINDS = tuple(k.value for k in Kind)
NAME_PATTERN = r"[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)?"
_NAME = re.compile(NAME_PATTERN)
NAME_MAX_LENGTH = 200
"""The database's ``artifacts.name`` column (tests hold the two equal)."""
NAMESPACE_MAX_LENGTH = 100
"""The database's ``artifacts.namespace`` column."""


class BadReference(InvalidValue):
    """A reference or spec string does not parse."""

    what = "reference"


def check_name(name: str) -> str:
    """Return ``name`` if it is a valid artifact name, else raise ValueError saying why."""
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"invalid name {name!r}: expected lowercase NAME or NAMESPACE/NAME "
            "(letters, digits, '.', '_', '-')"
        )
    if len(name) > NAME_MAX_LENGTH:
        raise ValueError(
            f"name {name[:40]!r}... is {len(name)} characters: at most {NAME_MAX_LENGTH}"
        )
    namespace = namespace_of(name)
    if namespace is not None and len(namespace) > NAMESPACE_MAX_LENGTH:
        raise ValueError(
            f"namespace {namespace[:40]!r}... is {len(namespace)} characters: "
            f"at most {NAMESPACE_MAX_LENGTH}"
        )
    return name


def namespace_of(name: str) -> str | None:
    return name.split("/", 1)[0] if "/" in name else None


def parse_kind(text: str) -> Kind:
    try:
        return Kind(text)
    except ValueError:
        raise BadReference(
            text=text, reason=f"unknown kind; expected one of {', '.join(KINDS)}"
        ) from None


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """An exact ``KIND/NAME@VERSION``; compared by (kind, name, version precedence)."""

    kind: Kind
    name: str
    version: Version

    @classmethod
    def parse(cls, text: str) -> ArtifactRef:
        kind, rest = _split_kind(text)
        name, sep, version = rest.partition("@")
        if not sep or not version:
            raise BadReference(text=text, reason="expected KIND/NAME@VERSION")
        _check_name_in(text, name)
        return cls(kind, name, parse_version(version))

    def __str__(self) -> str:
        return f"{self.kind.value}/{self.name}@{self.version}"


@dataclass(frozen=True, slots=True)
class Spec:
    """A constraint ``KIND/NAME@RANGE`` (the range defaults to ``*``)."""

    kind: Kind
    name: str
    range: Range

    @classmethod
    def parse(cls, text: str, *, kind: Kind | None = None) -> Spec:
        """Parse ``KIND/NAME@RANGE``, or ``NAME@RANGE`` when ``kind`` is given."""
        rest = text
        if kind is None:
            kind, rest = _split_kind(text)
        name, _, rng = rest.partition("@")
        _check_name_in(text, name.strip())
        return cls(kind, name.strip(), Range.parse(rng.strip() or "*"))

    def __str__(self) -> str:
        return f"{self.kind.value}/{self.name}@{self.range.raw or '*'}"


def _split_kind(text: str) -> tuple[Kind, str]:
    head, sep, rest = text.partition("/")
    if not sep:
        raise BadReference(text=text, reason="expected KIND/NAME, e.g. model/vision/lenet@^1")
    try:
        return Kind(head), rest
    except ValueError:
        raise BadReference(
            text=text, reason=f"unknown kind {head!r}; expected one of {', '.join(KINDS)}"
        ) from None


def _check_name_in(text: str, name: str) -> None:
    try:
        check_name(name)
    except ValueError as exc:
        raise BadReference(text=text, reason=str(exc)) from None
