"""Comparators: one primitive constraint (a version, an operator) and a set of them, with
node-semver's rules for prereleases."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from pinbench.registry.versions import (
    PrecedenceKey,
    Version,
    precedence_key,
)

Op: TypeAlias = Literal["<", "<=", ">", ">=", "="]
Core: TypeAlias = tuple[int, int, int]

_ACCEPTS: Final[dict[str, frozenset[int]]] = {
    "<": frozenset({-1}),
    "<=": frozenset({-1, 0}),
    ">": frozenset({1}),
    ">=": frozenset({0, 1}),
    "=": frozenset({0}),
}


@dataclass(frozen=True, slots=True)
class Comparator:
    """One primitive constraint: ``version`` OP ``self.version`` by semver precedence.

    Build metadata never takes part: it is dropped from ``version`` on construction, so
    comparators are equal (and hash alike) when their operator and precedence are equal.
    """

    op: Op
    version: Version
    _key: PrecedenceKey = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.op not in _ACCEPTS:
            raise ValueError(f"operator must be one of <, <=, >, >=, =; got {self.op!r}")
        if self.version.build is not None:
            object.__setattr__(self, "version", self.version.replace(build=None))
        object.__setattr__(self, "_key", precedence_key(self.version))

    @property
    def core(self) -> Core:
        """``(major, minor, patch)`` of the version."""
        return (self.version.major, self.version.minor, self.version.patch)

    def allows(self, version: Version) -> bool:
        """Whether ``version`` passes this comparator alone (npm's prerelease rule is per set)."""
        key = precedence_key(version)
        return (key > self._key) - (key < self._key) in _ACCEPTS[self.op]

    def __str__(self) -> str:
        return str(self.version) if self.op == "=" else f"{self.op}{self.version}"


ComparatorSet: TypeAlias = tuple[Comparator, ...]


def _cmp(op: Op, major: int, minor: int, patch: int, prerelease: str | None = None) -> Comparator:
    return Comparator(op, Version(major, minor, patch, prerelease))


def _below(major: int, minor: int, patch: int) -> Comparator:
    """``<M.m.p-0``: below every version of ``M.m.p``, its prereleases included."""
    return _cmp("<", major, minor, patch, "0")


_NULL: Final = _below(0, 0, 0)  # node-semver's empty set: nothing sorts below 0.0.0-0
_FLOOR: Final = _cmp(">=", 0, 0, 0)  # node-semver reads it as `*` ...
_FLOOR_PRE: Final = _cmp(">=", 0, 0, 0, "0")  # ... and this one under includePrerelease
_ALL_RELEASES: Final = ((_cmp("<", 1, 0, 0),), (_cmp(">=", 1, 0, 0),))  # `*` that `||` keeps


def _opens(c: Comparator) -> bool:
    """Whether ``c`` can let prereleases of its own core through npm's rule (``<X-0`` cannot)."""
    return bool(c.version.prerelease) and not (c.op == "<" and c.version.prerelease == "0")


def _gates(comps: Iterable[Comparator]) -> set[Core]:
    return {c.core for c in comps if _opens(c)}


def _demote(c: Comparator) -> Comparator:
    """The prerelease-free comparator that agrees with ``c`` on every version whose core
    differs from ``c.core`` and on every release."""
    if c.op == "=":
        return _NULL
    return Comparator(">=" if c.op in (">", ">=") else "<", Version(*c.core))


def _set_allows(comps: ComparatorSet, version: Version, include_prerelease: bool) -> bool:
    if not all(c.allows(version) for c in comps):
        return False
    if include_prerelease or not version.prerelease:
        return True
    core = (version.major, version.minor, version.patch)
    return any(c.version.prerelease and c.core == core for c in comps)
