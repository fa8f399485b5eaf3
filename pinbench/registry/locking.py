"""Making lockfiles: pin a resolution's artifacts, files and environment; record lockfiles in SQL.

Kept apart from ``lockfile`` (the document) so the evaluator, which runs inside isolated
environments without a database, reads lockfiles without importing SQLAlchemy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.db.plain import Rows, connection_rows, flag, json_value
from pinbench.errors import UserError
from pinbench.registry.chain_spec import LockedChain
from pinbench.registry.dataset_manifest import DatasetManifest, ImageManifest
from pinbench.registry.late_fields import drop_unset, drop_unset_request_parts
from pinbench.registry.lockfile import (
    SCHEMA_VERSION,
    LockBody,
    LockedArtifact,
    LockedDataset,
    LockedEnvironment,
    LockedFile,
    LockedImage,
    LockedModel,
    Lockfile,
)
from pinbench.registry.manifest import FrameworkManifest, ModelManifest, parse_manifest
from pinbench.registry.names import ArtifactRef, Kind, Spec
from pinbench.registry.published import FILES_SQL
from pinbench.registry.request import LATE_REQUEST_FIELDS, LATE_SYSTEM_FIELDS, Request

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from pinbench.registry.resolve import Resolution


@dataclass(frozen=True, slots=True)
class Pinned:
    """What a lockfile reads of one published version: its manifest (as stored), the files
    as recorded at publish (sizes measured), and what resolution reads."""

    manifest: dict[str, Any]
    manifest_digest: str
    files: tuple[LockedFile, ...]
    requires: list[dict[str, Any]]
    yanked: bool


PINNED_SQL = (
    "SELECT id, manifest, manifest_digest, requires, yanked FROM artifacts"
    " WHERE kind = :kind AND name = :name AND version = :version"
)


def read_pinned(rows: Rows, kind: str, name: str, version: str) -> Pinned | None:
    """What a lockfile reads of ``KIND/NAME@VERSION`` (its files by path), if it is published:
    plain SQL (``pinbench.db.plain``), so that ``verify`` re-derives a lockfile from the
    embedded SQLite database without importing SQLAlchemy, and ``lock`` reads the same way
    through its session."""
    found = rows(PINNED_SQL, {"kind": kind, "name": name, "version": version})
    if not found:
        return None
    ((row_id, manifest, digest, requires, yanked),) = found
    stored: dict[str, Any] = json_value(manifest)
    md5s = _md5s(stored)
    return Pinned(
        manifest=stored,
        manifest_digest=str(digest),
        files=tuple(
            LockedFile(path=p, sha256=sha, size=int(size), source=source, md5=md5s.get(p))
            for p, sha, size, source in rows(FILES_SQL, {"artifact": row_id})
        ),
        requires=json_value(requires),
        yanked=flag(yanked),
    )


def build_lockfile(
    rows: Rows, request: Request, resolution: Resolution, batch_size: int
) -> Lockfile:
    """Pin the resolved artifacts, their files and the environment for the request's platform,
    for one batch size of the request (read with plain SQL: ``read_pinned``)."""
    pinned = {}
    for ref in resolution.refs:
        pin = read_pinned(rows, ref.kind.value, ref.name, str(ref.version))
        if pin is None:
            from pinbench.registry.catalog import NotFound

            raise NotFound(what=str(ref))
        pinned[ref] = pin
    return lockfile_of(pinned, request, batch_size)


def lockfile_of(pinned: dict[ArtifactRef, Pinned], request: Request, batch_size: int) -> Lockfile:
    """The lockfile of these pinned versions (in this order) for one batch size of the
    request: a pure function of what the registry holds, so it can be re-derived."""
    locked = [
        LockedArtifact(
            kind=ref.kind.value,
            name=ref.name,
            version=str(ref.version),
            manifest_digest=pin.manifest_digest,
            files=list(pin.files),
        )
        for ref, pin in pinned.items()
    ]
    manifests = {ref: parse_manifest(pin.manifest, source=str(ref)) for ref, pin in pinned.items()}

    def one(kind: Kind, name: str | None = None) -> tuple[ArtifactRef, Any]:
        found = [
            (r, m)
            for r, m in manifests.items()
            if r.kind == kind and (name is None or r.name == name)
        ]
        if len(found) != 1:
            raise UserError(f"the request must resolve exactly one {kind.value}, got {len(found)}")
        return found[0]

    training = request.training
    trained_on = validation = None
    if training is not None:  # two datasets: the one trained on and the validation split
        assert request.dataset is not None
        trained_on = Spec.parse(request.dataset, kind=Kind.DATASET).name
        validation = Spec.parse(training.validation, kind=Kind.DATASET).name

    framework_ref, framework = one(Kind.FRAMEWORK)
    assert isinstance(framework, FrameworkManifest)
    env = framework.environment_for(request.system.platform())
    environment = None
    if env is not None:
        image = None
        wanted = env.image.name if env.image is not None else None
        images = [(r, m) for r, m in manifests.items() if r.kind == Kind.IMAGE and r.name == wanted]
        if images:
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
            version=framework.installed_version,
            platform=request.system.platform(),
            image=image,
            requirements=list(env.requirements),
            python=env.python,
        )
    last = (
        Spec.parse(request.model, kind=Kind.MODEL).name if request.chain and request.model else None
    )
    try:
        body = _body(
            request=request,
            locked=locked,
            environment=environment,
            model=None if request.operator else _locked_model(*one(Kind.MODEL, last)),
            dataset=None
            if request.operator
            else _locked_dataset(*one(Kind.DATASET, trained_on), pinned),
            validation=_locked_dataset(*one(Kind.DATASET, validation), pinned)
            if training
            else None,
            batch_size=batch_size,
            chain=_locked_chain(request, manifests),
        )
    except ValueError as exc:  # LockBody's own checks (a request that does not fit its data)
        raise UserError(str(exc)) from None
    return Lockfile(body)


def _body(
    *,
    request: Request,
    locked: list[LockedArtifact],
    environment: LockedEnvironment | None,
    model: LockedModel | None,
    dataset: LockedDataset | None,
    validation: LockedDataset | None,
    batch_size: int,
    chain: LockedChain | None,
) -> LockBody:
    return LockBody(
        schema_version=SCHEMA_VERSION,
        request=request,
        artifacts=locked,
        environment=environment,
        model=model,
        dataset=dataset,
        operator=request.operator,
        training=request.training,
        validation=validation,
        chain=chain,
        scenario=request.scenario,
        batch_size=batch_size,
        threads=request.threads,
        sweep=canonical_digest(request) if request.is_sweep else None,
        system=request.system,
    )


def _locked_chain(request: Request, manifests: dict[ArtifactRef, Any]) -> LockedChain | None:
    """The request's chain locked from its stages' manifests (``chains.wiring``)."""
    if request.chain is None:
        return None
    from pinbench.registry.chain_wiring import lock_chain

    assert request.model is not None  # a chain's request names its last stage
    models = {r.name: (str(r.version), m) for r, m in manifests.items() if r.kind == Kind.MODEL}
    return lock_chain(request.chain, Spec.parse(request.model, kind=Kind.MODEL).name, models)


def _locked_model(ref: ArtifactRef, model: Any) -> LockedModel:
    assert isinstance(model, ModelManifest)
    return LockedModel(
        name=ref.name,
        version=str(ref.version),
        format=model.format,
        architecture=model.architecture,
        trusted=model.trusted,
        inputs=list(model.inputs),
        outputs=list(model.outputs),
        preprocess=model.preprocess,
        postprocess=model.postprocess,
        builder=model.builder,
        requirements=model.requirements,
    )


def _locked_dataset(
    ref: ArtifactRef, dataset: Any, pinned: dict[ArtifactRef, Pinned]
) -> LockedDataset:
    assert isinstance(dataset, DatasetManifest)
    return LockedDataset(
        name=ref.name,
        version=str(ref.version),
        manifest_digest=pinned[ref].manifest_digest,
        labels=dataset.labels,
        task=dataset.task,
        samples=dataset.samples,
        data=dataset.data,
    )


def _md5s(manifest: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["md5"] for f in manifest.get("files", []) if f.get("md5")}


def canonical_digest(request: Request) -> str:
    data = msgspec.to_builtins(request)  # (``limits: null`` stays: sweep ids predate it)
    drop_unset(data, LATE_REQUEST_FIELDS)
    drop_unset(data["system"], LATE_SYSTEM_FIELDS)
    drop_unset_request_parts(data)  # generation's language/task, a chain stage's join
    return Digest.of_bytes(canonical_json(data)).hex


STORE_SQL = (
    "INSERT INTO lockfiles (digest, body, created_at) "
    "VALUES (:digest, :body, CURRENT_TIMESTAMP) ON CONFLICT (digest) DO NOTHING RETURNING digest"
)
"""A lockfile recorded unless it is (also by a concurrent writer, whose row then stands: what
is named by its content is inserted if absent, decision 286); a row comes back when this
statement inserted it. SQLite and PostgreSQL both read it."""


def insert_lockfile(rows: Rows, lock: Lockfile) -> bool:
    """Record the lockfile with plain SQL (``STORE_SQL``); False when it was already recorded."""
    body = lock.canonical.decode("utf-8")
    return bool(rows(STORE_SQL, {"digest": lock.digest.hex, "body": body}))


def store_lockfile(session: Session, lock: Lockfile) -> bool:
    """``insert_lockfile`` in an ORM session's transaction (a run recorded with its lockfile)."""
    return insert_lockfile(connection_rows(session), lock)
