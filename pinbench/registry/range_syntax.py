"""npm's range syntax read and desugared into comparator sets as node-semver 7.8 does
(classes/range.js): carets, tildes, x-ranges, hyphen ranges, ``||``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from pinbench.registry.comparators import (
    _ALL_RELEASES,
    _FLOOR,
    _FLOOR_PRE,
    _NULL,
    Comparator,
    ComparatorSet,
    Op,
    _below,
    _cmp,
    _demote,
    _gates,
    _opens,
)
from pinbench.registry.versions import (
    _PARTS,
    Version,
    _number,
    _split,
    _tail,
)

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
