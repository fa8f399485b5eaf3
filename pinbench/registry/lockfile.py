"""Lockfiles: the canonical JSON record of one evaluation's exact inputs; its sha256 is its id.

A lockfile is never edited: parsing refuses bytes that are not in canonical form (sorted keys,
UTF-8, no insignificant whitespace), so a lockfile's digest always identifies its content.
Host facts belong to the run record, not here.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec
from sqlalchemy.orm import Session

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.errors import InvalidDocument, UserError
from pinbench.registry.catalog import get_artifact
from pinbench.registry.manifest import (
    FrameworkManifest,
    ImageManifest,
    Input,
    LabelFormat,
    ModelManifest,
    Output,
    Platform,
    Requirement,
    SampleFiles,
    parse_manifest,
)
from pinbench.registry.names import ArtifactRef, Kind
from pinbench.registry.request import Request, Scenario
from pinbench.registry.resolve import Resolution

SCHEMA_VERSION = 2


class LockfileError(InvalidDocument):
    what = "lockfile"


class _Frozen(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class LockedFile(_Frozen, frozen=True, kw_only=True):
    path: str
    sha256: str
    size: int
    source: str | None


class LockedArtifact(_Frozen, frozen=True, kw_only=True):
    kind: Literal["model", "framework", "dataset", "image"]
    name: str
    version: str
    manifest_digest: str
    files: list[LockedFile]

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}@{self.version}"


class LockedImage(_Frozen, frozen=True, kw_only=True):
    name: str
    version: str
    digest: str
    reference: str | None


class LockedEnvironment(_Frozen, frozen=True, kw_only=True):
    framework: str
    version: str
    platform: Platform
    image: LockedImage | None
    requirements: list[Requirement]
    python: str | None


class LockedModel(_Frozen, frozen=True, kw_only=True):
    name: str
    version: str
    format: str
    architecture: str | None
    trusted: bool
    inputs: list[Input]
    outputs: list[Output]


class LockedDataset(_Frozen, frozen=True, kw_only=True):
    name: str
    version: str
    manifest_digest: str
    labels: LabelFormat
    task: str
    samples: int | None
    data: SampleFiles | None = None


class LockBody(_Frozen, frozen=True, kw_only=True):
    schema_version: int
    request: Request
    artifacts: list[LockedArtifact]
    environment: LockedEnvironment | None
    model: LockedModel
    dataset: LockedDataset
    scenario: Scenario
    batch_size: int
    threads: int | None
    sweep: str | None
    """For one point of a batch-size sweep: the sha256 of the request, shared by its points."""
    system: Platform


class Lockfile:
    """An immutable lockfile: its body, its canonical bytes and their digest."""

    __slots__ = ("body", "canonical", "digest")

    def __init__(self, body: LockBody) -> None:
        self.body = body
        self.canonical = canonical_json(msgspec.to_builtins(body))
        self.digest = Digest.of_bytes(self.canonical)

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "<lockfile>") -> Lockfile:
        raw = data.rstrip(b"\n")
        try:
            parsed = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LockfileError(source=source, reason=f"not JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise LockfileError(source=source, reason="expected a JSON object")
        version = parsed.get("schema_version")
        if version != SCHEMA_VERSION:
            raise LockfileError(
                source=source,
                reason=f"schema_version {version!r} is not supported (expected {SCHEMA_VERSION})",
            )
        try:
            body = msgspec.convert(parsed, type=LockBody, strict=True)
        except msgspec.ValidationError as exc:
            raise LockfileError(source=source, reason=str(exc)) from None
        lock = cls(body)
        if lock.canonical != raw:
            raise LockfileError(
                source=source,
                reason="not in canonical form (was it edited?); lockfiles are never edited: "
                "create a new one with `pinbench lock`",
            )
        return lock

    @classmethod
    def read(cls, path: Path) -> Lockfile:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise LockfileError(source=str(path), reason=f"cannot read: {exc}") from None
        return cls.from_bytes(data, source=str(path))

    def write(self, path: Path) -> None:
        """Write the canonical bytes plus one trailing newline (ignored when read back)."""
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(self.canonical + b"\n")
        tmp.replace(path)

    def artifact(self, kind: Kind) -> LockedArtifact | None:
        for a in self.body.artifacts:
            if a.kind == kind.value:
                return a
        return None

    def to_json(self) -> Any:
        return json.loads(self.canonical)


def build_lockfile(
    session: Session, request: Request, resolution: Resolution, batch_size: int
) -> Lockfile:
    """Pin the resolved artifacts, their files and the environment for the request's platform,
    for one batch size of the request."""
    rows = {ref: get_artifact(session, ref) for ref in resolution.refs}
    locked = [
        LockedArtifact(
            kind=row.kind,  # type: ignore[arg-type]
            name=row.name,
            version=row.version,
            manifest_digest=row.manifest_digest,
            files=[
                LockedFile(path=f.path, sha256=f.sha256, size=f.size, source=f.source)
                for f in row.files
            ],
        )
        for row in rows.values()
    ]
    manifests = {ref: parse_manifest(row.manifest, source=str(ref)) for ref, row in rows.items()}

    def one(kind: Kind) -> tuple[ArtifactRef, Any]:
        found = [(r, m) for r, m in manifests.items() if r.kind == kind]
        if len(found) != 1:
            raise UserError(f"the request must resolve exactly one {kind.value}, got {len(found)}")
        return found[0]

    model_ref, model = one(Kind.MODEL)
    dataset_ref, dataset = one(Kind.DATASET)
    framework_ref, framework = one(Kind.FRAMEWORK)
    assert isinstance(model, ModelManifest) and isinstance(framework, FrameworkManifest)
    env = framework.environment_for(request.system)
    environment = None
    if env is not None:
        image = None
        images = [(r, m) for r, m in manifests.items() if r.kind == Kind.IMAGE]
        if env.image is not None and images:
            image_ref, image_manifest = images[0]
            assert isinstance(image_manifest, ImageManifest)
            image = LockedImage(
                name=image_ref.name,
                version=str(image_ref.version),
                digest=image_manifest.digest,
                reference=image_manifest.reference,
            )
        environment = LockedEnvironment(
            framework=framework_ref.name,
            version=str(framework_ref.version),
            platform=request.system,
            image=image,
            requirements=list(env.requirements),
            python=env.python,
        )
    body = LockBody(
        schema_version=SCHEMA_VERSION,
        request=request,
        artifacts=locked,
        environment=environment,
        model=LockedModel(
            name=model_ref.name,
            version=str(model_ref.version),
            format=model.format,
            architecture=model.architecture,
            trusted=model.trusted,
            inputs=list(model.inputs),
            outputs=list(model.outputs),
        ),
        dataset=LockedDataset(
            name=dataset_ref.name,
            version=str(dataset_ref.version),
            manifest_digest=rows[dataset_ref].manifest_digest,
            labels=dataset.labels,
            task=dataset.task,
            samples=dataset.samples,
            data=dataset.data,
        ),
        scenario=request.scenario,
        batch_size=batch_size,
        threads=request.threads,
        sweep=canonical_digest(request) if request.is_sweep else None,
        system=request.system,
    )
    return Lockfile(body)


def canonical_digest(request: Request) -> str:
    return Digest.of_bytes(canonical_json(msgspec.to_builtins(request))).hex


def store_lockfile(session: Session, lock: Lockfile) -> bool:
    """Record the lockfile; return False when it was already recorded."""
    if session.get(LockfileRow, lock.digest.hex) is not None:
        return False
    session.add(
        LockfileRow(
            digest=lock.digest.hex,
            body=lock.canonical.decode("utf-8"),
            created_at=datetime.now(UTC),
        )
    )
    return True
