"""MLModelScope's loose versions and framework constraints as semver versions and npm ranges.

MLModelScope (rai-project/dlframework, ``registry.go``) reads both with Masterminds/semver
1.4.2 (pinned in its ``Gopkg.lock``): a model's ``version`` with ``semver.NewVersion``, which
fills a missing minor or patch with 0, and a model's ``framework.version`` with
``semver.NewConstraint``. In 1.4.2 a constraint part counts as a wildcard only when it is ``x``
or ``*``, or when the *minor* is missing; a missing patch is 0. So, for release versions:

    MLModelScope           allows (1.4.2)                npm range written here
    1.12, =1.12            1.12.0 only                   1.12.0
    1.0.0                  1.0.0 only                    1.0.0
    1                      1.x.x                         >=1.0.0 <2.0.0
    >=1.1, =>1.1           1.1.0 and above               >=1.1.0
    >1.2                   above 1.2.0 (1.2.1 too)       >1.2.0
    <1.2                   below 1.2.0                   <1.2.0
    <=1.2, =<1.2           1.2.0 and below               <=1.2.0
    <=1                    major 1 and below             <2.0.0
    ~1.2.3, ~>1.2.3        its minor, from the bound     >=1.2.3 <1.3.0
    ~1                     1.x.x                         >=1.0.0 <2.0.0
    ^1.2.3, ^0.2           its major, from the bound     >=1.2.3 <2.0.0, >=0.2.0 <1.0.0

Comparators are ANDed by spaces or commas and ORed by ``||``, as in Masterminds. Left out on
purpose, each refused with its reason: wildcards (``1.x``), prerelease bounds, ``!=`` (npm has
none), hyphen ranges, and ``<1`` (which 1.4.2 reads as "major 1 and below", npm as "below
1.0.0"). npm would read ``1.12`` as ``1.12.x``; writing ``1.12.0`` keeps MLModelScope's meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from pinbench.errors import UserError
from pinbench.registry.versions import parse_version

_NUMBER = r"0|[1-9][0-9]*"
_VERSION: Final = re.compile(
    rf"v?(?P<major>{_NUMBER})(?:\.(?P<minor>{_NUMBER}))?(?:\.(?P<patch>{_NUMBER}))?"
    r"(?P<pre>-[0-9A-Za-z.-]+)?(?P<build>\+[0-9A-Za-z.-]+)?"
)
_COMPARATOR: Final = re.compile(
    r"\s*(?P<op>=>|=<|>=|<=|~>|!=|[=<>~^])?\s*(?P<version>[^\s,]+)\s*,?"
)


@dataclass(frozen=True, slots=True)
class _Parts:
    """A Masterminds version: the parts that were written (minor and patch may be missing)."""

    major: int
    minor: int | None
    patch: int | None
    tail: str
    """Prerelease and build, as written (``-beta+1``)."""

    @property
    def full(self) -> str:
        return f"{self.major}.{self.minor or 0}.{self.patch or 0}{self.tail}"

    @property
    def next_major(self) -> str:
        return f"{self.major + 1}.0.0"

    @property
    def next_minor(self) -> str:
        return f"{self.major}.{(self.minor or 0) + 1}.0"


def _parts(text: str) -> _Parts:
    match = _VERSION.fullmatch(text)
    if match is None:
        if any(c in text for c in "xX*"):
            raise ValueError(f"wildcards ({text}) are not translated: write the bounds in full")
        raise ValueError(f"{text} is not MAJOR[.MINOR[.PATCH]] (numbers without leading zeros)")
    minor, patch = match["minor"], match["patch"]
    return _Parts(
        major=int(match["major"]),
        minor=None if minor is None else int(minor),
        patch=None if patch is None else int(patch),
        tail=(match["pre"] or "") + (match["build"] or ""),
    )


def semver_text(text: str) -> str:
    """A model version as MLModelScope reads it (``1.0`` is ``1.0.0``), as a strict semver.

    Raises ``ValueError`` saying why the text is not a version.
    """
    full = _parts(text.strip()).full
    try:
        parse_version(full)
    except UserError as exc:
        raise ValueError(str(exc)) from None
    return full


def npm_range(text: str) -> str:
    """A framework constraint as MLModelScope's Masterminds/semver 1.4.2 reads it, written as
    an npm range that allows the same release versions (see the module's table).

    Raises ``ValueError`` naming the part that has no translation.
    """
    if not text.strip():
        raise ValueError("is empty")
    return " || ".join(" ".join(_alternative(part)) for part in text.split("||"))


def _alternative(text: str) -> list[str]:
    if re.search(r"\s-\s", text):
        raise ValueError("hyphen ranges (1.0 - 2.0) are not translated: write >=A <=B")
    out: list[str] = []
    pos, text = 0, text.strip()
    if not text:
        raise ValueError("has an empty alternative between '||'")
    while pos < len(text):
        match = _COMPARATOR.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"cannot read {text[pos:]!r}")
        out.extend(_comparator(match["op"] or "", _parts(match["version"])))
        pos = match.end()
    return out


def _comparator(op: str, v: _Parts) -> list[str]:
    if v.tail:
        raise ValueError(f"prerelease or build bounds ({v.full}) are not translated")
    series = [f">={v.major}.0.0", f"<{v.next_major}"]
    if op in ("", "="):
        return series if v.minor is None else [v.full]
    if op in (">=", "=>"):
        return [f">={v.full}"]
    if op == ">":
        return [f">{v.full}"]
    if op in ("<=", "=<"):
        return [f"<{v.next_major}"] if v.minor is None else [f"<={v.full}"]
    if op == "<" and v.minor is not None:
        return [f"<{v.full}"]
    if op in ("~", "~>"):
        if v.minor is None:
            return series
        if (v.major, v.minor, v.patch or 0) == (0, 0, 0):
            return [">=0.0.0"]  # 1.4.2: ~0.0.0 allows every version
        return [f">={v.full}", f"<{v.next_minor}"]
    if op == "^":
        return [f">={v.full}", f"<{v.next_major}"]
    if op == "<":
        raise ValueError(
            f"'<{v.major}' means major {v.major} and below to MLModelScope but below "
            f"{v.major}.0.0 to npm: write the bound in full"
        )
    raise ValueError(f"'{op}' has no npm range equivalent")
