"""Resolution: one exact version per artifact so that every constraint holds.

The algorithm is resolvelib's backtracking resolver; it never does I/O itself. It reads
published versions through a ``CandidateSource`` (SQL in production, plain data in tests).
Rules: the highest satisfying version wins; prereleases only when a range names one (npm's
rule, inside ``Range.allows``); yanked versions are skipped unless a constraint pins exactly
that version; a model's own framework constraint and a framework's image for the requested
platform are followed as dependencies (the image only once any version of it is published:
before, the environment's hashed requirements are what a lockfile pins).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from resolvelib import AbstractProvider, BaseReporter, Resolver
from resolvelib.resolvers import RequirementInformation, ResolutionImpossible, ResolutionTooDeep

from pinbench.errors import UserError
from pinbench.registry.names import ArtifactRef, Kind, Spec
from pinbench.registry.published import Dependency as Dependency
from pinbench.registry.published import Published as Published
from pinbench.registry.published import published_from_row as published_from_row
from pinbench.registry.ranges import Range
from pinbench.registry.versions import Version, parse_version, precedence_key


class CandidateSource(Protocol):
    def versions(self, kind: Kind, name: str) -> Sequence[Published]:
        """All published versions of ``kind/name`` (any order, yanked included); [] if none."""
        ...


@dataclass(frozen=True, slots=True)
class Requirement:
    spec: Spec
    origin: str
    """Who asked: ``the request`` or the artifact whose manifest carries the constraint."""

    @property
    def identifier(self) -> str:
        return f"{self.spec.kind.value}/{self.spec.name}"


@dataclass(frozen=True, slots=True)
class Candidate:
    kind: Kind
    name: str
    published: Published

    @property
    def identifier(self) -> str:
        return f"{self.kind.value}/{self.name}"

    @property
    def ref(self) -> ArtifactRef:
        return ArtifactRef(self.kind, self.name, self.published.version)


_Info = RequirementInformation[Requirement, Candidate]


class ResolutionFailed(UserError):
    """Nothing satisfies the constraints; carries, per artifact, the constraints and versions."""

    def __init__(self, *, conflicts: Mapping[str, tuple[list[str], list[str]]]) -> None:
        lines = ["no set of versions satisfies every constraint:"]
        for ident, (constraints, versions) in conflicts.items():
            lines.append(f"  {ident}:")
            lines.extend(f"    needs {c}" for c in constraints)
            lines.append("    published: " + (", ".join(versions) if versions else "none"))
        super().__init__("\n".join(lines))
        self.conflicts = dict(conflicts)


@dataclass(frozen=True, slots=True)
class Resolution:
    refs: tuple[ArtifactRef, ...]


def _display(version: Version, published: Published) -> str:
    return f"{version}{' (yanked)' if published.yanked else ''}"


class _Provider(AbstractProvider[Requirement, Candidate, str]):
    """resolvelib's provider over a ``CandidateSource``, for one resolution.

    Costs: one ``source.versions`` call per name; each range is tested against each version of
    its name once (``_allowed``), since backtracking asks the same questions many times.
    """

    def __init__(self, source: CandidateSource, platform: str) -> None:
        self._source = source
        self._platform = platform
        self._cache: dict[tuple[Kind, str], list[Published]] = {}
        self._allowed_cache: dict[tuple[Kind, str, Range], frozenset[int]] = {}

    def published(self, kind: Kind, name: str) -> list[Published]:
        key = (kind, name)
        if key not in self._cache:
            self._cache[key] = sorted(
                self._source.versions(kind, name),
                key=lambda p: precedence_key(p.version),
                reverse=True,
            )
        return self._cache[key]

    def identify(self, requirement_or_candidate: Requirement | Candidate) -> str:
        return requirement_or_candidate.identifier

    def get_preference(
        self,
        identifier: str,
        resolutions: Mapping[str, Candidate],
        candidates: Mapping[str, Iterator[Candidate]],
        information: Mapping[str, Iterator[_Info]],
        backtrack_causes: Sequence[_Info],
    ) -> Any:
        # Models first (they bring the framework constraint), then frameworks, then the rest.
        order = {Kind.MODEL: 0, Kind.FRAMEWORK: 1, Kind.DATASET: 2, Kind.IMAGE: 3}
        return order[Kind(identifier.split("/", 1)[0])]

    def _allowed(self, kind: Kind, name: str, rng: Range) -> frozenset[int]:
        """Indexes into ``published(kind, name)`` of the versions ``rng`` allows."""
        key = (kind, name, rng)
        hit = self._allowed_cache.get(key)
        if hit is None:
            versions = self.published(kind, name)
            hit = frozenset(i for i, p in enumerate(versions) if rng.allows(p.version))
            self._allowed_cache[key] = hit
        return hit

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[Requirement]],
        incompatibilities: Mapping[str, Iterator[Candidate]],
    ) -> list[Candidate]:
        reqs = list(requirements[identifier])
        bad = {id(c.published) for c in incompatibilities[identifier]}
        kind = reqs[0].spec.kind
        name = reqs[0].spec.name
        allowed = frozenset.intersection(*(self._allowed(kind, name, r.spec.range) for r in reqs))
        pins = {r.spec.range.exact for r in reqs} - {None}
        out = []
        for i, p in enumerate(self.published(kind, name)):
            if i not in allowed or id(p) in bad or not self._available(p):
                continue
            if p.yanked and p.version not in pins:
                continue
            out.append(Candidate(kind, name, p))
        return out

    def _available(self, p: Published) -> bool:
        return p.platforms is None or self._platform in p.platforms

    def is_satisfied_by(self, requirement: Requirement, candidate: Candidate) -> bool:
        return requirement.spec.range.allows(candidate.published.version)

    def get_dependencies(self, candidate: Candidate) -> list[Requirement]:
        p = candidate.published
        deps = list(p.requires) + [
            d
            for d in p.platform_requires.get(self._platform, ())
            if d.kind != Kind.IMAGE or self.published(d.kind, d.name)
        ]  # a framework's image binds once one is published; until then requirements suffice
        origin = str(candidate.ref)
        return [Requirement(Spec(d.kind, d.name, _range(d.range)), origin) for d in deps]


@lru_cache(maxsize=65_536)
def _range(text: str) -> Range:
    """Ranges and versions are immutable values: parse each distinct text once per process."""
    return Range.parse(text)


@lru_cache(maxsize=262_144)
def _version(text: str) -> Version:
    return parse_version(text)


def resolve(
    specs: Iterable[Spec],
    source: CandidateSource,
    *,
    platform: str = "amd64/cpu",
) -> Resolution:
    """Resolve the request's specs (and their dependencies) to exact versions."""
    provider = _Provider(source, platform)
    requirements = [Requirement(s, "the request") for s in specs]
    resolver: Resolver[Requirement, Candidate, str] = Resolver(provider, BaseReporter())
    try:
        result = resolver.resolve(requirements, max_rounds=10_000)
    except ResolutionImpossible as exc:
        raise _failure(exc.causes, provider) from None
    except ResolutionTooDeep:
        raise UserError("resolution gave up after 10,000 rounds of backtracking") from None
    refs = sorted(
        (c.ref for c in result.mapping.values()),
        key=lambda r: (list(Kind).index(r.kind), r.name),
    )
    return Resolution(tuple(refs))


def _failure(causes: Collection[_Info], provider: _Provider) -> ResolutionFailed:
    constraints: dict[str, list[str]] = defaultdict(list)
    kinds: dict[str, tuple[Kind, str]] = {}
    for cause in causes:
        req: Requirement = cause.requirement
        text = f"{req.spec.range.raw or '*'} (from {req.origin})"
        if text not in constraints[req.identifier]:
            constraints[req.identifier].append(text)
        kinds[req.identifier] = (req.spec.kind, req.spec.name)
    conflicts = {}
    for ident, texts in constraints.items():
        kind, name = kinds[ident]
        versions = []
        for p in sorted(provider.published(kind, name), key=lambda p: p.version):
            label = _display(p.version, p)
            if not provider._available(p):
                label += f" (not for {provider._platform})"
            versions.append(label)
        conflicts[ident] = (texts, versions)
    return ResolutionFailed(conflicts=conflicts)
