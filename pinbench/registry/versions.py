"""Versions: strict semver 2.0.0 parsing within npm's limits, and precedence as a sort key."""

from __future__ import annotations

import re
from typing import Any, Final, Literal, TypeAlias

from pinbench.errors import VersionError


class Version:
    """A semver 2.0.0 version: ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``, the value the
    ``semver`` package's ``Version`` is (its attributes, ``compare``, ``replace``; equal, hashed
    and ordered by precedence, build metadata ignored), without importing that package (whose
    command line, loaded with it, was a tenth of a publish's start-up). Checked where it is
    parsed (``parse_version``); made here only from checked parts."""

    __slots__ = ("_key", "build", "major", "minor", "patch", "prerelease")

    def __init__(
        self,
        major: int,
        minor: int = 0,
        patch: int = 0,
        prerelease: str | None = None,
        build: str | None = None,
    ) -> None:
        if min(major, minor, patch) < 0:
            raise ValueError(f"a version's numbers are not negative: {major}.{minor}.{patch}")
        self.major, self.minor, self.patch = int(major), int(minor), int(patch)
        self.prerelease = None if prerelease is None else str(prerelease)
        self.build = None if build is None else str(build)
        self._key = precedence_key(self)

    def compare(self, other: Version) -> int:
        """-1, 0 or 1 as ``self`` precedes, equals or follows ``other`` (build ignored)."""
        return (self._key > other._key) - (self._key < other._key)

    def replace(self, **parts: Any) -> Version:
        fields = {n: getattr(self, n) for n in ("major", "minor", "patch", "prerelease", "build")}
        unknown = set(parts) - set(fields)
        if unknown:
            raise TypeError(f"replace() got unknown part(s): {', '.join(sorted(unknown))}")
        return Version(**{**fields, **parts})

    def bump_patch(self) -> Version:
        """The next patch release: ``1.2.3-rc.1+b`` -> ``1.2.4`` (as ``semver``)."""
        return Version(self.major, self.minor, self.patch + 1)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += f"-{self.prerelease}"
        if self.build:
            text += f"+{self.build}"
        return text

    def __repr__(self) -> str:
        return (
            f"Version(major={self.major!r}, minor={self.minor!r}, patch={self.patch!r}, "
            f"prerelease={self.prerelease!r}, build={self.build!r})"
        )

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key

    def __le__(self, other: Version) -> bool:
        return self._key <= other._key

    def __gt__(self, other: Version) -> bool:
        return self._key > other._key

    def __ge__(self, other: Version) -> bool:
        return self._key >= other._key


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
