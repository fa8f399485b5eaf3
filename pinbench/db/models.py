"""SQLAlchemy 2.0 typed models. Alembic migrations in ``pinbench/migrations`` must match them
(``tests/test_schema.py`` checks that autogenerate finds no difference)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    column,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from pinbench.db import study_models
from pinbench.db.base import Base

__all__ = ["Base", "study_models"]


class Artifact(Base):
    """One published ``KIND/NAME@VERSION``: immutable once inserted, except its yank mark."""

    __tablename__ = "artifacts"
    __table_args__ = (
        UniqueConstraint("kind", "name", "version", name="uq_artifacts_kind_name_version"),
        Index("ix_artifacts_kind_name", "kind", "name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(200))
    namespace: Mapped[str | None] = mapped_column(String(100))
    version: Mapped[str] = mapped_column(String(200))
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)
    manifest_digest: Mapped[str] = mapped_column(String(64))
    requires: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    """What resolution needs from the manifest, kept apart so it never re-parses manifests."""
    publisher: Mapped[str] = mapped_column(String(200))
    published_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    yanked: Mapped[bool] = mapped_column(Boolean, default=False)
    yank_reason: Mapped[str | None] = mapped_column(Text)
    yanked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    files: Mapped[list[ArtifactFile]] = relationship(
        back_populates="artifact", order_by="ArtifactFile.path", cascade="all, delete-orphan"
    )


class ArtifactFile(Base):
    __tablename__ = "artifact_files"
    __table_args__ = (UniqueConstraint("artifact_id", "path", name="uq_artifact_files_path"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    artifact_id: Mapped[int] = mapped_column(ForeignKey("artifacts.id", ondelete="CASCADE"))
    path: Mapped[str] = mapped_column(String(1000))
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    source: Mapped[str | None] = mapped_column(Text)

    artifact: Mapped[Artifact] = relationship(back_populates="files")


class Lockfile(Base):
    __tablename__ = "lockfiles"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    body: Mapped[str] = mapped_column(Text)
    """The canonical JSON text; its sha256 is ``digest``."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        # newest first, and newest first within each filter: a page of ``runs list`` reads
        # its rows off one index whatever the table's size (decision 148)
        Index("ix_runs_started", "started_at", "id"),
        Index("ix_runs_model_started", "model", "started_at", "id"),
        Index("ix_runs_framework_started", "framework", "started_at", "id"),
        Index("ix_runs_status_started", "status", "started_at", "id"),
        Index("ix_runs_system_started", "system", "started_at", "id"),
        # filters on two or more of the columns above read the matching facets' runs
        # through this one (decision 158)
        Index("ix_runs_facet_started", "facet_id", "started_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    lockfile_digest: Mapped[str] = mapped_column(ForeignKey("lockfiles.digest"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    runner: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    host: Mapped[dict[str, Any]] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """Scenario settings as run, LoadGen's summary, versions seen."""
    latencies_sha256: Mapped[str | None] = mapped_column(String(64))
    """Blob of the raw per-query latencies (int64 nanoseconds, ``.npy``)."""
    environment_digest: Mapped[str | None] = mapped_column(String(80), index=True)
    """The environment that ran it: the image ID (docker), the requirements set's digest
    (venv) or the installed distributions' digest (local); details hold the rest."""
    trace_level: Mapped[str] = mapped_column(String(16), default="none", server_default="none")
    """The trace level it ran at; latencies of a traced run carry the profilers' overhead."""
    trace_sha256: Mapped[str | None] = mapped_column(String(64))
    """Blob of its Chrome trace (JSON), when traced."""
    instance_id: Mapped[str | None] = mapped_column(String(32), index=True)
    """The server instance that queued it (``server_instances``); None for a CLI run."""
    submitted_by: Mapped[str | None] = mapped_column(String(100))
    """The user whose token queued it on a server: they (or an admin) may cancel it."""
    cancel_requested: Mapped[str | None] = mapped_column(Text)
    """A cancel asked for while it runs (its reason); its server's pool stops it."""
    system: Mapped[str | None] = mapped_column(String(63), index=True)
    """The cluster system (``systems.name``) it ran on; None: this machine, no cluster."""
    retry_of: Mapped[str | None] = mapped_column(String(36), index=True)
    """The run (an attempt whose system was lost) this one retries on another system."""
    model: Mapped[str | None] = mapped_column(String(200))
    """The lockfile's model name (None for an operator run): a filter's column, copied from
    the lockfile when the run is recorded so that listing never parses lockfiles to filter."""
    model_version: Mapped[str | None] = mapped_column(String(200))
    framework: Mapped[str | None] = mapped_column(String(200))
    """The lockfile environment's framework name; ``framework_version`` its version."""
    framework_version: Mapped[str | None] = mapped_column(String(200))
    facet_id: Mapped[int | None] = mapped_column(Integer)
    """Its ``run_facets`` row: set by the database's trigger whenever a run is inserted or one
    of the six columns a facet names changes (migration 0013), never by pinbench's code."""

    results: Mapped[list[Result]] = relationship(back_populates="run", cascade="all, delete-orphan")


class RunFacet(Base):
    """One combination of the filter columns some run has had: model, model version,
    framework, framework version, status, system. The runs table's trigger adds a row the
    first time a run takes a combination; rows are never removed (a combination no run has
    any more costs one empty index probe). A listing filtered on two or more columns looks its
    facets up here and reads only their runs (decision 158)."""

    __tablename__ = "run_facets"
    __table_args__ = (
        Index(
            "uq_run_facets",
            *(
                func.coalesce(column(c), "")
                for c in ("model", "model_version", "framework", "framework_version")
            ),
            "status",
            func.coalesce(column("system"), ""),
            unique=True,
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str | None] = mapped_column(String(200))
    model_version: Mapped[str | None] = mapped_column(String(200))
    framework: Mapped[str | None] = mapped_column(String(200))
    framework_version: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))
    system: Mapped[str | None] = mapped_column(String(63))


class ServerInstance(Base):
    """One server process's run pool, alive while its lease is renewed (a heartbeat). A
    starting server marks interrupted only the unfinished runs of instances whose lease
    has expired."""

    __tablename__ = "server_instances"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class System(Base):
    """A machine that joined the cluster as an agent: its hardware facts as it reported
    them (``pinbench.cluster.facts``) and the Ray node it was last seen as."""

    __tablename__ = "systems"

    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    facts: Mapped[dict[str, Any]] = mapped_column(JSON)
    node_id: Mapped[str | None] = mapped_column(String(64))
    registered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SigningKey(Base):
    """A public key of this registry (``pinbench.provenance.keys``), served at
    ``/api/v1/keys``: one active key per purpose, the ones it replaced kept, retired, for
    verifying what they signed before."""

    __tablename__ = "signing_keys"

    keyid: Mapped[str] = mapped_column(String(64), primary_key=True)
    """Ed25519: sha256 of the raw public key; EC: sha256 of its PEM (model-signing's hint)."""
    purpose: Mapped[str] = mapped_column(String(16))
    """``attestation`` (Ed25519, run attestations) or ``model-signing`` (EC P-256)."""
    algorithm: Mapped[str] = mapped_column(String(16))
    public: Mapped[str] = mapped_column(String(400))
    """Hex: the raw Ed25519 public key (64 digits), or an EC key's DER SubjectPublicKeyInfo."""
    owner: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    retired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When ``pinbench keys rotate`` replaced it; None while it is the active key."""


class Attestation(Base):
    """A run's signed provenance: a DSSE envelope (blob) over an in-toto Statement whose
    predicate is SLSA Provenance v1."""

    __tablename__ = "attestations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    envelope_sha256: Mapped[str] = mapped_column(String(64))
    keyid: Mapped[str] = mapped_column(String(64))
    after_the_fact: Mapped[bool] = mapped_column(Boolean)
    """Made for a run recorded before (not when it was recorded)."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Result(Base):
    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("run_id", "metric", name="uq_results_run_metric"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    metric: Mapped[str] = mapped_column(String(100))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(32))

    run: Mapped[Run] = relationship(back_populates="results")


class User(Base):
    """Someone who holds API tokens; admins manage users and namespaces."""

    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("name", name="uq_users_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """``pinbench user disable``: every request with their tokens is refused until enabled."""
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """``pinbench user delete``: tokens revoked, memberships gone; the row stays so that the
    name (what artifacts and runs are attributed by) is never given to someone else."""


class NamespaceMember(Base):
    """A user may publish and yank artifacts whose name starts with ``NAMESPACE/``."""

    __tablename__ = "namespace_members"

    namespace: Mapped[str] = mapped_column(String(100), primary_key=True)
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )


class ApiToken(Base):
    """An API token: only the sha256 of its secret is kept; the token is shown once."""

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    secret_sha256: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    user: Mapped[User] = relationship()


class UiSession(Base):
    """A web UI login: the cookie holds ``pbs_<id>_<secret>``, this row the secret's sha256
    and the API token it stands for. It lives while the token is unrevoked, its user enabled
    and ``expires_at`` ahead; logging out deletes it (decision 150)."""

    __tablename__ = "ui_sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token_id: Mapped[str] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True
    )
    secret_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)

    token: Mapped[ApiToken] = relationship()


class SeriesThreshold(Base):
    """One version of a series' threshold on one metric (``pinbench.series.thresholds``):
    setting it again adds the next version; earlier versions are kept, never updated, so a
    verdict names the version it was judged under (decision 251)."""

    __tablename__ = "series_thresholds"
    __table_args__ = (
        UniqueConstraint("series", "metric", "version", name="uq_series_thresholds_version"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    series: Mapped[str] = mapped_column(String(600))
    metric: Mapped[str] = mapped_column(String(100))
    version: Mapped[int] = mapped_column(Integer)
    test: Mapped[str] = mapped_column(String(16))
    direction: Mapped[str] = mapped_column(String(8))
    max_change: Mapped[float | None] = mapped_column(Float)
    alpha: Mapped[float] = mapped_column(Float)
    window: Mapped[int] = mapped_column(Integer)
    min_runs: Mapped[int] = mapped_column(Integer)
    tolerance: Mapped[float | None] = mapped_column(Float)
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Alert(Base):
    """A regression a gate found, or a change point found when a run was recorded on a
    server: acknowledged, never deleted (decision 253)."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index("ix_alerts_series_created", "series", "created_at"),
        UniqueConstraint("series", "metric", "kind", "run_id", name="uq_alerts_finding"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    series: Mapped[str] = mapped_column(String(600))
    metric: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(16))
    """``regression`` (a gate's verdict) or ``change-point``."""
    run_id: Mapped[str] = mapped_column(String(36), index=True)
    """The run it was found at (the gated candidate, or the first run after the shift)."""
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="open", index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    acknowledged_by: Mapped[str | None] = mapped_column(String(100))
    acknowledged_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
