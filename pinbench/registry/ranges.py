"""npm version ranges with node-semver's semantics, on top of python-semver's ``Version``.

A range is an OR (``||``) of comparator sets; a set is an AND of primitive comparators
(``<``, ``<=``, ``>``, ``>=``, ``=`` against one full version). ``Range.parse`` desugars npm's
syntax (carets, tildes, x-ranges, partial versions, hyphen ranges) into such comparators exactly
as node-semver 7.8 does in ``classes/range.js``, ``-0`` bounds included: ``^1.2.3`` is
``>=1.2.3 <2.0.0-0``, ``1.2.x`` is ``>=1.2.0 <1.3.0-0``, ``<1.2`` is ``<1.2.0-0``.

npm's prerelease rule: a prerelease version (``1.2.3-beta``) satisfies a set only if all its
comparators allow it *and* one of them names a prerelease of the same ``MAJOR.MINOR.PATCH``, so
``^1.2.3-alpha`` admits ``1.2.3-beta`` but not ``1.2.4-beta``. ``include_prerelease=True`` drops
that second condition and, like node-semver's ``includePrerelease`` option, uses another
desugaring (``-0`` lower bounds for x-ranges, partial tildes and carets, hyphen ranges), so a
``Range`` keeps both: ``sets`` and ``prerelease_sets``.

Build metadata is accepted anywhere a version is and never takes part in a comparison.

Limits, as node-semver's ``MAX_SAFE_INTEGER``: a numeric part (major, minor, patch) is at most
2^53 - 1; a prerelease and a build are at most 64 characters each (so a version always fits the
database's 200-character column) and a range is at most 1024 characters.

Left out on purpose: node-semver's ``loose`` mode (``1.2.3beta``, ``01.2.3``) and its tolerance
of odd prefixes (``vv1.2``, ``~=1.2``, ``v=1``, ``> =1``, a bare ``+build``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pinbench.errors import RangeError
from pinbench.registry.comparators import Comparator, ComparatorSet, Op, _set_allows
from pinbench.registry.range_syntax import _combined_sets, _format, _meet, _parsed_sets, _terms
from pinbench.registry.versions import (
    MAX_RANGE_LENGTH,
    Version,
    parse_version,
)

__all__ = ["Comparator", "Op", "Range", "max_satisfying", "parse_version", "satisfying"]

# -- ranges -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class Range:
    """A parsed npm range: an OR of ANDs of comparators (node-semver's ``range.set``).

    ``sets`` is the desugaring used by default; ``prerelease_sets`` the one used with
    ``include_prerelease=True`` (it defaults to ``sets``). ``raw`` is the text that was parsed
    (the normalized form for intersections and unions). Comparison key: two ranges are equal,
    and hash alike, when ``(sets, prerelease_sets)`` are equal; ``raw`` is not compared, so
    ``^1.2.3`` equals ``>=1.2.3 <2.0.0-0``. Equal ranges allow the same versions (not conversely).
    """

    sets: tuple[ComparatorSet, ...]
    raw: str = field(default="", compare=False)
    prerelease_sets: tuple[ComparatorSet, ...] = ()

    def __post_init__(self) -> None:
        if not self.sets:
            raise ValueError("a Range needs at least one comparator set")
        if not self.prerelease_sets:
            object.__setattr__(self, "prerelease_sets", self.sets)

    @classmethod
    def parse(cls, text: str) -> Range:
        """Parse npm range syntax (``^1.2``, ``~1.2.3``, ``1.x || >=2.1 <3``, ``1 - 2.3``, ``*``,
        ``''``). Raises ``RangeError`` whose reason names the offending token."""
        if not isinstance(text, str):
            raise RangeError(
                text=repr(text), reason=f"expected a string, got {type(text).__name__}"
            )
        if len(text) > MAX_RANGE_LENGTH:
            raise RangeError(
                text=text[:40] + "...",
                reason=f"{len(text)} characters: a range is at most {MAX_RANGE_LENGTH}",
            )
        try:
            alternatives = [_terms(part) for part in text.split("||")]
        except ValueError as exc:
            raise RangeError(text=text, reason=str(exc)) from None
        return cls(
            sets=_parsed_sets(alternatives, include_prerelease=False),
            raw=text,
            prerelease_sets=_parsed_sets(alternatives, include_prerelease=True),
        )

    def allows(self, version: Version, *, include_prerelease: bool = False) -> bool:
        """Whether ``version`` satisfies the range (node-semver's ``satisfies``).

        A prerelease satisfies a set only if a comparator of that set has a prerelease with
        the same ``MAJOR.MINOR.PATCH``, unless ``include_prerelease``. Build metadata is ignored.
        """
        sets = self.prerelease_sets if include_prerelease else self.sets
        return any(_set_allows(s, version, include_prerelease) for s in sets)

    def intersect(self, other: Range) -> Range:
        """The range allowing exactly the versions both allow, with and without
        include_prerelease: the cross product of the two ranges' sets (not simplified), where a
        comparator that opens prereleases of a core the other set keeps shut loses its
        prerelease (``>=1.2.3-alpha`` AND ``<2.0.0`` is ``>=1.2.3 <2.0.0``)."""
        return _combined(
            [_meet(a, b) for a in self.sets for b in other.sets],
            [(*a, *b) for a in self.prerelease_sets for b in other.prerelease_sets],
        )

    def union(self, other: Range) -> Range:
        """The range allowing exactly the versions either allows (with and without
        include_prerelease). Unlike ``Range.parse('A || B')``, a ``*`` never swallows a set
        that admits prereleases."""
        return _combined([*self.sets, *other.sets], [*self.prerelease_sets, *other.prerelease_sets])

    @property
    def exact(self) -> Version | None:
        """The version, if every set pins it (``1.2.3``, ``=1.2.3``, ``v1.2.3``,
        ``>=1.2.3 <=1.2.3``) with and without include_prerelease, build metadata dropped; else
        None. Conservative: a range that allows one version some other way (``<=0.0.0``) gets
        None, never a version it does not pin."""
        pins = {_pin(s) for s in (*self.sets, *self.prerelease_sets)}
        return pins.pop() if len(pins) == 1 else None

    def __str__(self) -> str:
        """The normalized default desugaring, as node-semver's ``range.range`` (``'*'`` for any):
        ``Range.parse(str(r))`` allows what ``r`` allows without include_prerelease."""
        return _format(self.sets)

    def __repr__(self) -> str:
        return f"<Range {str(self)!r} raw={self.raw!r}>"


def _combined(sets: Iterable[ComparatorSet], prerelease_sets: Iterable[ComparatorSet]) -> Range:
    default = _combined_sets(sets, include_prerelease=False)
    return Range(
        sets=default,
        raw=_format(default),
        prerelease_sets=_combined_sets(prerelease_sets, include_prerelease=True),
    )


def _pin(comps: ComparatorSet) -> Version | None:
    """The only version the set allows, if it pins one by ``=v`` or ``>=v <=v``."""
    low = {c.version for c in comps if c.op in ("=", ">=")}
    high = {c.version for c in comps if c.op in ("=", "<=")}
    return next((v for v in low & high if all(c.allows(v) for c in comps)), None)


def satisfying(
    versions: Iterable[Version], rng: Range, *, include_prerelease: bool = False
) -> list[Version]:
    """The versions ``rng`` allows, in the given order."""
    return [v for v in versions if rng.allows(v, include_prerelease=include_prerelease)]


def max_satisfying(
    versions: Iterable[Version], rng: Range, *, include_prerelease: bool = False
) -> Version | None:
    """The highest version ``rng`` allows (the first one given among equal precedences)."""
    best: Version | None = None
    for v in satisfying(versions, rng, include_prerelease=include_prerelease):
        if best is None or v.compare(best) > 0:
            best = v
    return best
