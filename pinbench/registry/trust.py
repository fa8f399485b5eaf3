"""The registry decides what runs, not the lockfile: a lockfile is re-derived and compared.

A lockfile is a cache of what the registry said when it was made. Before it is stored by a
server, verified or run, every section derived from a manifest (artifacts, files, paths,
sizes, digests, sources, the model's format, trust, inputs and outputs, the dataset's labels,
the environment) is built again from the manifests it pins, in this registry, and the bytes
must be identical. An artifact this registry does not hold is refused; importing it is a
deliberate act (``pinbench lockfile import``). The pinned versions must also satisfy the
request's constraints and each other's (a model's framework range, a framework's image).
"""

from __future__ import annotations

import json
from typing import Any

from pinbench.db.plain import Rows
from pinbench.errors import UserError
from pinbench.registry.lockfile import LockedArtifact, Lockfile
from pinbench.registry.locking import Pinned, lockfile_of, read_pinned
from pinbench.registry.names import ArtifactRef, Kind
from pinbench.registry.published import published_from_row
from pinbench.registry.ranges import Range
from pinbench.registry.versions import parse_version


class NotPublishedHere(UserError):
    """The lockfile pins an artifact this registry does not hold."""

    def __init__(self, *, ref: str, lockfile: str) -> None:
        super().__init__(
            f"lockfile {lockfile[:12]} pins {ref}, which is not published here; a lockfile "
            "only runs against the registry that holds its artifacts. To adopt artifacts from "
            "another pinbench registry deliberately: pinbench lockfile import LOCKFILE --from URL"
        )
        self.ref = ref
        self.lockfile = lockfile


class LockfileMismatch(UserError):
    """A lockfile section differs from what the pinned manifests yield."""

    def __init__(self, *, lockfile: str, fields: list[tuple[str, str, str]]) -> None:
        lines = [
            f"lockfile {lockfile[:12]} does not match what this registry's manifests yield "
            f"({len(fields)} field(s) differ; lockfiles are made by `pinbench lock`, never "
            "edited):"
        ]
        lines += [
            f"  {path}: lockfile has {got}, registry has {want}" for path, got, want in fields
        ]
        super().__init__("\n".join(lines[: 1 + _SHOWN]))
        self.lockfile = lockfile
        self.fields = fields


class PinsRefused(UserError):
    """The pinned versions are not a resolution of the lockfile's own request."""

    def __init__(self, *, lockfile: str, reason: str) -> None:
        super().__init__(f"lockfile {lockfile[:12]} is not what this registry resolves: {reason}")
        self.lockfile = lockfile
        self.reason = reason


_SHOWN = 8
"""At most this many differing fields are named in the message (all are kept on the error)."""


def rederive(rows: Rows, lock: Lockfile) -> Lockfile:
    """The lockfile this registry makes from ``lock``'s request, pins and batch size; raise
    ``NotPublishedHere``, ``PinsRefused`` or ``LockfileMismatch`` unless it is ``lock``
    byte for byte. ``rows``: reads of this registry (``Workspace.reads``, or a session's
    ``connection_rows``)."""
    check_shape(lock)
    pinned: dict[ArtifactRef, Pinned] = {}
    for art in lock.body.artifacts:
        pin = published(rows, art)
        if pin is None:
            raise NotPublishedHere(ref=art.ref, lockfile=lock.digest.hex)
        pinned[ref_of(art)] = pin
    return check_pinned(lock, pinned)


def published(rows: Rows, art: LockedArtifact) -> Pinned | None:
    """What the registry holds of the version ``art`` pins, if it is published."""
    return read_pinned(rows, art.kind, art.name, art.version)


def ref_of(art: LockedArtifact) -> ArtifactRef:
    return ArtifactRef(Kind(art.kind), art.name, parse_version(art.version))


def check_pinned(lock: Lockfile, pinned: dict[ArtifactRef, Pinned]) -> Lockfile:
    """``rederive`` over versions already read (from the registry, or about to be adopted)."""
    check_shape(lock)
    _check_dependencies(lock, pinned)
    order = sorted(pinned, key=lambda r: (list(Kind).index(r.kind), r.name))
    body = lock.body
    again = lockfile_of({ref: pinned[ref] for ref in order}, body.request, body.batch_size)
    if again.canonical != lock.canonical:
        fields = sorted(_differences(lock.to_json(), again.to_json(), "$"))
        raise LockfileMismatch(lockfile=lock.digest.hex, fields=fields)
    return again


def check_shape(lock: Lockfile) -> None:
    """Before any query: one artifact per kind, and a batch size the request asked for."""
    kinds = [a.kind for a in lock.body.artifacts]
    if lock.body.training is not None and kinds.count("dataset") == 2:
        kinds.remove("dataset")  # a training run pins its validation split too
    chain = lock.body.chain
    if chain is not None and kinds.count("model") == len(chain.stages):
        kinds = [k for k in kinds if k != "model"]  # a chain pins one model per stage
    for kind in sorted(set(kinds)):
        if kinds.count(kind) > 1:
            raise PinsRefused(
                lockfile=lock.digest.hex, reason=f"it pins {kinds.count(kind)} {kind}s"
            )
    sizes = lock.body.request.batch_sizes()
    if lock.body.batch_size not in sizes:
        raise PinsRefused(
            lockfile=lock.digest.hex,
            reason=f"batch_size {lock.body.batch_size} is not among its request's {sizes}",
        )


def _check_dependencies(lock: Lockfile, pinned: dict[ArtifactRef, Pinned]) -> None:
    """Every pin is asked for (by the request or another pin) and satisfies every range that
    names it; every dependency is pinned, but a framework's image: a lockfile made before any
    image was published pins the environment's hashed requirements alone."""
    by_name = {(ref.kind, ref.name): ref for ref in pinned}
    platform = lock.body.system.key()
    wanted = [(s.kind, s.name, s.range, "the request", True) for s in lock.body.request.specs()]
    for ref, pin in pinned.items():
        published = published_from_row(str(ref.version), pin.yanked, pin.requires)
        wanted += [
            (d.kind, d.name, Range.parse(d.range), str(ref), True) for d in published.requires
        ]
        on_platform = published.platform_requires.get(platform, ())
        wanted += [(d.kind, d.name, Range.parse(d.range), str(ref), False) for d in on_platform]
    asked = {(kind, name) for kind, name, _, _, _ in wanted}
    for ref in pinned:
        if (ref.kind, ref.name) not in asked:
            raise PinsRefused(
                lockfile=lock.digest.hex, reason=f"nothing it resolves asks for {ref}"
            )
    for kind, name, rng, origin, needed in wanted:
        got = by_name.get((kind, name))
        if got is None:
            if needed:
                raise PinsRefused(
                    lockfile=lock.digest.hex,
                    reason=f"{origin} needs {kind.value}/{name}@{rng.raw or '*'}, "
                    "which it does not pin",
                )
            continue
        if not rng.allows(got.version):
            raise PinsRefused(
                lockfile=lock.digest.hex,
                reason=f"it pins {got}, outside {rng.raw or '*'!r} required by {origin}",
            )


def _differences(got: Any, want: Any, path: str) -> list[tuple[str, str, str]]:
    """JSON paths where ``got`` (the lockfile) and ``want`` (the registry's) differ."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for key in sorted(set(got) | set(want)):
            sub = f"{path}.{key}"
            if key not in got:
                out.append((sub, "nothing", _show(want[key])))
            elif key not in want:
                out.append((sub, _show(got[key]), "nothing"))
            else:
                out += _differences(got[key], want[key], sub)
        return out
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        out = []
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            out += _differences(g, w, f"{path}[{i}]")
        return out
    return [] if got == want else [(path, _show(got), _show(want))]


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."
