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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from semver import Version

from pinbench.errors import RangeError, VersionError

__all__ = ["Comparator", "Op", "Range", "max_satisfying", "parse_version", "satisfying"]

Op: TypeAlias = Literal["<", "<=", ">", ">=", "="]
Core: TypeAlias = tuple[int, int, int]

_ACCEPTS: Final[dict[str, frozenset[int]]] = {
    "<": frozenset({-1}),
    "<=": frozenset({-1, 0}),
    ">": frozenset({1}),
    ">=": frozenset({0, 1}),
    "=": frozenset({0}),
}


# -- versions -----------------------------------------------------------------------------------

_PARTS: Final = ("major", "minor", "patch")
_PRERELEASE_ID: Final = re.compile(r"0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*")
_BUILD_ID: Final = re.compile(r"[0-9A-Za-z-]+")
MAX_NUMBER: Final = 2**53 - 1
"""The largest major, minor or patch (JavaScript's ``Number.MAX_SAFE_INTEGER``, as npm)."""
MAX_TAIL_LENGTH: Final = 64
"""The longest prerelease, and the longest build metadata, in characters."""
MAX_RANGE_LENGTH: Final = 1024
MAX_VERSION_LENGTH: Final = 200
"""The database's ``artifacts.version`` column; the limits above keep any valid version within."""


def parse_version(text: str) -> Version:
    """Parse a strict semver 2.0.0 version, ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``.

    No prefix (``v1.2.3``, ``=1.2.3``), no partial versions, no leading zeros, no surrounding
    whitespace. Raises ``VersionError`` whose reason says what is wrong
    (``expected MAJOR.MINOR.PATCH, got 2 parts``).
    """
    if not isinstance(text, str):
        raise VersionError(text=repr(text), reason=f"expected a string, got {type(text).__name__}")
    if len(text) > MAX_VERSION_LENGTH:
        raise VersionError(
            text=text[:40] + "...",
            reason=f"{len(text)} characters: a version is at most {MAX_VERSION_LENGTH}",
        )
    try:
        return _strict_version(text)
    except ValueError as exc:
        raise VersionError(text=text, reason=str(exc)) from None


def _strict_version(text: str) -> Version:
    if not text:
        raise ValueError("empty string")
    if text != text.strip():
        raise ValueError("surrounding whitespace")
    if text[0] in "vV=":
        raise ValueError(f"leading {text[0]!r}: write MAJOR.MINOR.PATCH without a prefix")
    parts, prerelease, build = _split(text)
    if len(parts) != 3:
        plural = "" if len(parts) == 1 else "s"
        raise ValueError(f"expected MAJOR.MINOR.PATCH, got {len(parts)} part{plural}")
    major, minor, patch = (_number(name, part) for name, part in zip(_PARTS, parts, strict=True))
    return Version(major, minor, patch, _tail(prerelease, "prerelease"), _tail(build, "build"))


def _split(text: str) -> tuple[list[str], str | None, str | None]:
    """``'1.2.3-pre+b'`` -> ``(['1', '2', '3'], 'pre', 'b')``; nothing is validated here."""
    rest, plus, build = text.partition("+")
    core, dash, prerelease = rest.partition("-")
    return core.split("."), (prerelease if dash else None), (build if plus else None)


def _number(name: str, text: str) -> int:
    if not text:
        raise ValueError(f"{name} is empty")
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{name} {text!r} is not a number")
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f"{name} {text!r} has a leading zero")
    if len(text) > len(str(MAX_NUMBER)) or int(text) > MAX_NUMBER:
        shown = text if len(text) <= 20 else f"{text[:20]}... ({len(text)} digits)"
        raise ValueError(f"{name} {shown} is larger than 2^53 - 1 ({MAX_NUMBER})")
    return int(text)


def _tail(text: str | None, what: Literal["prerelease", "build"]) -> str | None:
    """Validate the dot-separated identifiers of a prerelease or build tail."""
    if text is None:
        return None
    if not text:
        raise ValueError(f"{what} is empty")
    if len(text) > MAX_TAIL_LENGTH:
        raise ValueError(
            f"{what} {text[:20]!r}... is {len(text)} characters: at most {MAX_TAIL_LENGTH}"
        )
    pattern = _PRERELEASE_ID if what == "prerelease" else _BUILD_ID
    for ident in text.split("."):
        if not ident:
            raise ValueError(f"{what} {text!r} has an empty identifier")
        if not pattern.fullmatch(ident):
            numeric = ident.isascii() and ident.isdigit()
            problem = "has a leading zero" if numeric else "may only use [0-9A-Za-z-]"
            raise ValueError(f"{what} identifier {ident!r} {problem}")
    return text


# -- comparators --------------------------------------------------------------------------------

PrecedenceKey: TypeAlias = tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]


def precedence_key(version: Version) -> PrecedenceKey:
    """A tuple that orders like semver 2.0.0 precedence (build metadata ignored).

    A release sorts after its prereleases; prerelease identifiers compare numerically when
    numeric, below any alphanumeric one, and a shorter list of equal prefix sorts first.
    Comparing these tuples is several times faster than ``Version.compare``.
    """
    pre = version.prerelease
    if not pre:
        return (version.major, version.minor, version.patch, 1, ())
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (version.major, version.minor, version.patch, 0, parts)


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


# -- range syntax -------------------------------------------------------------------------------

_OPERATORS: Final = ("~>", "<=", ">=", "~", "^", "<", ">", "=")
_PLAIN_OP: Final[dict[str, Op]] = {"": "=", "=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_WILDCARDS: Final = frozenset({"x", "X", "*"})


@dataclass(frozen=True, slots=True)
class _Partial:
    """``[v]MAJOR[.MINOR[.PATCH[-PRE]]][+BUILD]`` with x/X/* wildcards; ``numbers`` holds the
    components before the first wildcard or gap, ``prerelease`` only when all three are given."""

    numbers: tuple[int, ...]
    prerelease: str | None = None


@dataclass(frozen=True, slots=True)
class _Simple:
    op: str  # '', one of _OPERATORS
    partial: _Partial


@dataclass(frozen=True, slots=True)
class _Hyphen:
    low: _Partial
    high: _Partial


_Term: TypeAlias = _Simple | _Hyphen


def _partial(text: str, *, x_range: bool) -> _Partial:
    """Parse a partial version; like node-semver, a number after a wildcard (``1.x.3``) is an
    error in an x-range but ignored after ``^``/``~`` and in hyphen ranges."""
    body = text[1:] if text.startswith("v") else text
    if not body:
        raise ValueError("missing version")
    parts, prerelease, build = _split(body)
    if parts == [""]:
        raise ValueError("missing version before '-' or '+'")
    if len(parts) > 3:
        raise ValueError(f"expected at most MAJOR.MINOR.PATCH, got {len(parts)} parts")
    if prerelease is not None and len(parts) < 3:
        raise ValueError("a prerelease needs all of MAJOR.MINOR.PATCH")
    numbers: list[int] = []
    wildcard = False
    for name, part in zip(_PARTS, parts, strict=False):
        if part in _WILDCARDS:
            wildcard = True
        elif wildcard and x_range:
            raise ValueError(f"{name} {part!r} follows a wildcard")
        elif not wildcard:
            numbers.append(_number(name, part))
        else:
            _number(name, part)
    _tail(prerelease, "prerelease")
    _tail(build, "build")
    return _Partial(tuple(numbers), prerelease if len(numbers) == 3 else None)


def _terms(text: str) -> list[_Term]:
    """Parse one ``||`` alternative into terms; raise ValueError naming the bad token."""
    words = text.split()
    if len(words) == 3 and words[1] == "-":
        return [_Hyphen(_hyphen_side(words[0]), _hyphen_side(words[2]))]
    terms: list[_Term] = []
    rest = iter(words)
    for word in rest:
        if word == "-":
            raise ValueError("'-' needs exactly one version on each side and nothing else")
        op, operand = _split_operator(word)
        if not operand:
            operand = next(rest, "")
            if not operand:
                raise ValueError(f"operator {op!r} is not followed by a version")
        try:
            terms.append(_Simple(op, _partial(operand, x_range=op not in ("~", "~>", "^"))))
        except ValueError as exc:
            raise ValueError(f"bad comparator {op + operand!r}: {exc}") from None
    return terms


def _split_operator(word: str) -> tuple[str, str]:
    for op in _OPERATORS:
        if word.startswith(op):
            return op, word[len(op) :]
    return "", word


def _hyphen_side(word: str) -> _Partial:
    try:
        return _partial(word, x_range=False)
    except ValueError as exc:
        raise ValueError(f"bad version {word!r} in hyphen range: {exc}") from None


# -- desugaring (node-semver 7.8, classes/range.js) ---------------------------------------------


def _desugar(term: _Term, include_prerelease: bool) -> list[Comparator]:
    z = "0" if include_prerelease else None  # node-semver's `-0` lower bounds
    if isinstance(term, _Hyphen):
        return _hyphen(term.low, term.high, z)
    if term.op in ("~", "~>"):
        return _tilde(term.partial, z)
    if term.op == "^":
        return _caret(term.partial, z)
    return _xrange(term.op, term.partial, z)


def _caret(p: _Partial, z: str | None) -> list[Comparator]:
    """``^1.2.3`` := ``>=1.2.3 <2.0.0-0``; ``^0.2.3``: ``<0.3.0-0``; ``^0.0.3``: ``<0.0.4-0``."""
    n = p.numbers
    if not n:
        return []
    if len(n) == 1:
        return [_cmp(">=", n[0], 0, 0, z), _below(n[0] + 1, 0, 0)]
    if n[0] != 0:
        upper = _below(n[0] + 1, 0, 0)
    elif len(n) == 2 or n[1] != 0:
        upper = _below(0, n[1] + 1, 0)
    else:
        upper = _below(0, 0, n[2] + 1)
    if len(n) == 2:
        return [_cmp(">=", n[0], n[1], 0, z), upper]
    return [_cmp(">=", n[0], n[1], n[2], p.prerelease), upper]


def _tilde(p: _Partial, z: str | None) -> list[Comparator]:
    """``~1.2.3`` := ``>=1.2.3 <1.3.0-0``, ``~1.2`` := ``>=1.2.0 <1.3.0-0``, ``~1`` := ``^1``."""
    n = p.numbers
    if not n:
        return []
    if len(n) == 1:
        return [_cmp(">=", n[0], 0, 0, z), _below(n[0] + 1, 0, 0)]
    upper = _below(n[0], n[1] + 1, 0)
    if len(n) == 2:
        return [_cmp(">=", n[0], n[1], 0, z), upper]
    return [_cmp(">=", n[0], n[1], n[2], p.prerelease), upper]


def _xrange(op: str, p: _Partial, z: str | None) -> list[Comparator]:
    """Plain comparators, ``1.2.x`` := ``>=1.2.0 <1.3.0-0``, ``>1.2`` := ``>=1.3.0``, ..."""
    n = p.numbers
    if len(n) == 3:
        return [Comparator(_PLAIN_OP[op], Version(n[0], n[1], n[2], p.prerelease))]
    if not n:
        return [_NULL] if op in ("<", ">") else []
    start = (n[0], n[1] if len(n) == 2 else 0, 0)
    after = (n[0] + 1, 0, 0) if len(n) == 1 else (n[0], n[1] + 1, 0)
    if op == ">":
        return [_cmp(">=", *after, z)]
    if op == ">=":
        return [_cmp(">=", *start, z)]
    if op == "<":
        return [_below(*start)]
    if op == "<=":
        return [_below(*after)]
    return [_cmp(">=", *start, z), _below(*after)]


def _hyphen(low: _Partial, high: _Partial, z: str | None) -> list[Comparator]:
    """``1.2.3 - 2.3.4`` := ``>=1.2.3 <=2.3.4``, ``1.2 - 2.3`` := ``>=1.2.0 <2.4.0-0``."""
    out: list[Comparator] = []
    if lo := low.numbers:
        padded = (*lo, 0, 0)
        out.append(_cmp(">=", padded[0], padded[1], padded[2], low.prerelease or z))
    hi = high.numbers
    if len(hi) == 1:
        out.append(_below(hi[0] + 1, 0, 0))
    elif len(hi) == 2:
        out.append(_below(hi[0], hi[1] + 1, 0))
    elif len(hi) == 3 and z and not high.prerelease:
        out.append(_below(hi[0], hi[1], hi[2] + 1))
    elif len(hi) == 3:
        out.append(_cmp("<=", hi[0], hi[1], hi[2], high.prerelease))
    return out


def _clean(comps: Iterable[Comparator], include_prerelease: bool, *, exact: bool) -> ComparatorSet:
    """Dedupe a set, collapse it to ``<0.0.0-0`` if that is in it and drop node-semver's
    stand-in for ``*`` (``>=0.0.0``, or ``>=0.0.0-0`` with include_prerelease).

    Dropping ``>=0.0.0`` also lets through 0.0.0 prereleases that another comparator opens;
    node-semver does that when parsing, ``exact=True`` (for intersections and unions) does not.
    """
    items = list(comps)
    floor = _FLOOR_PRE if include_prerelease else _FLOOR
    if exact and not include_prerelease and floor in items:
        items = [_demote(c) if _opens(c) and c.core == (0, 0, 0) else c for c in items]
    unique = tuple(dict.fromkeys(c for c in items if c != floor))
    return (_NULL,) if _NULL in unique else unique


def _parsed_sets(
    alternatives: Sequence[Sequence[_Term]], include_prerelease: bool
) -> tuple[ComparatorSet, ...]:
    """node-semver's Range constructor: desugar each alternative, then if there are several,
    drop empty (``<0.0.0-0``) sets and let a ``*`` set swallow the rest."""
    sets = [
        _clean(
            (c for t in terms for c in _desugar(t, include_prerelease)),
            include_prerelease,
            exact=False,
        )
        for terms in alternatives
    ]
    kept = [s for s in sets if s != (_NULL,)] or sets[:1]
    return ((),) if () in kept else tuple(kept)


def _combined_sets(
    sets: Iterable[ComparatorSet], include_prerelease: bool
) -> tuple[ComparatorSet, ...]:
    """Normalize the sets of an intersection or union without changing what they allow."""
    cleaned = [_clean(s, include_prerelease, exact=True) for s in sets]
    kept = [s for s in cleaned if s != (_NULL,)] or cleaned[:1]
    if () in kept:
        if include_prerelease or not any(_gates(s) for s in kept):
            return ((),)
        # Without include_prerelease `*` admits no prerelease while a sibling set may: spell
        # `*` so that re-parsing the string form does not let it swallow that sibling.
        kept = [part for s in kept for part in ((s,) if s else _ALL_RELEASES)]
    return tuple(dict.fromkeys(kept))


def _meet(a: ComparatorSet, b: ComparatorSet) -> ComparatorSet:
    """The AND of two sets under npm's prerelease rule: a prerelease passes only if *both*
    sets open its core, so comparators opening a core the other set keeps shut are demoted."""
    shared = _gates(a) & _gates(b)
    return tuple(_demote(c) if _opens(c) and c.core not in shared else c for c in (*a, *b))


def _format(sets: Iterable[ComparatorSet]) -> str:
    return "||".join(" ".join(map(str, s)) for s in sets) or "*"


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
