"""Request and response bodies (msgspec), kept apart from the ORM models.

Bodies sent to the API refuse unknown fields: a typo is a 400 naming the field.
"""

from __future__ import annotations

from typing import Any

import msgspec

from pinbench import bounds as b


class Body(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class ArtifactSummary(Body):
    kind: str
    name: str
    version: str
    yanked: bool
    published_at: str
    publisher: str
    manifest_digest: str


class FileInfo(Body):
    path: str
    sha256: str
    size: int
    source: str | None = None


class ArtifactDetail(Body):
    ref: str
    kind: str
    name: str
    version: str
    manifest_digest: str
    publisher: str
    published_at: str
    yanked: bool
    yank_reason: str | None
    files: list[FileInfo]
    manifest: dict[str, Any]


class Published(Body):
    ref: str
    manifest_digest: str
    created: bool
    files: int
    bytes: int
    new_blobs: int


class YankRequest(Body):
    ref: str
    reason: str


class Yanked(Body):
    ref: str
    reason: str


class ResolvedRef(Body):
    kind: str
    name: str
    version: str


class LockPoint(Body):
    digest: str
    batch_size: int
    new: bool


class Locked(Body):
    artifacts: list[str]
    points: list[LockPoint]
    sweep: str | None = None


class RunRequest(Body):
    lockfile: str
    """The sha256 of a lockfile stored on the server (POST or PUT /api/v1/lockfiles)."""
    runner: str = "auto"
    trace: str = "none"
    """Trace level: none, model, framework, system or full."""


class RunOnRequest(Body):
    lockfile: str
    """The sha256 of a lockfile stored on the server."""
    on: list[str]
    """The cluster systems to run on, by name, or ``["all"]``: every live system that meets
    the lockfile's placement. One run per system."""
    runner: str = "auto"
    """``auto`` is decided by each agent on its own machine."""
    trace: str = "none"
    retries: int = msgspec.field(default=1)
    """Attempts on another matching system when a run's system is lost (0 to 3)."""

    def __post_init__(self) -> None:
        b.RETRIES.check("retries", self.retries)


class StudyRunRequest(Body):
    """A study to run on this server's cluster's agents (``POST /api/v1/studies``)."""

    definition: dict[str, Any]
    """The study, as a study file holds it (docs/study.md): every system an ``agent``."""
    source: str = "posted"
    """What the study came from, as recorded (a file's name): letters, digits and _.@/-."""


class DistributedView(Body):
    """A distributed training run's settings, as its lockfile pins them."""

    scheme: str
    """``allreduce``, ``pssgd``, ``mavg`` or ``ddp`` (docs/levels.md)."""
    workers: int
    average_every: int | None = None
    """``mavg``'s averaging period in steps; None for the other schemes."""
    systems: int = 1
    """The cluster systems its ranks were spread over (``workers / systems`` on each)."""


class RunView(Body):
    id: str
    status: str
    runner: str
    system: str | None
    """The cluster system it ran on; None: the server's own machine."""
    retry_of: str | None
    """The run it retries (that run's system was lost); None: a first attempt."""
    environment: str | None
    lockfile: str
    model: str | None
    """``NAME@VERSION``; None in an operator benchmark."""
    framework: str | None
    dataset: str | None
    scenario: str
    mode: str
    batch_size: int
    started_at: str | None
    finished_at: str | None
    error: str | None
    metrics: dict[str, float]
    trace: str = "none"
    """The trace level it ran at; latencies of a traced run carry the profilers' overhead."""
    trace_sha256: str | None = None
    """Its Chrome trace (GET /api/v1/blobs/{sha256}), when traced."""
    units: dict[str, str] | None = None
    host: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    operator: str | None = None
    """The operator benchmarked, described (``matmul(m=64, ...) float32 forward seed 0``)."""
    kind: str = "inference"
    """What the run measured: ``inference`` (its scenario and mode say how), ``training`` or
    ``operator``."""
    task: str | None = None
    """Its dataset's task (what its accuracy metrics mean); None without a dataset."""
    distributed: DistributedView | None = None
    """A distributed training run's scheme and workers; None for any other run."""
    progress: str | None = None
    """A running run's latest progress line, as ``pinbench run`` prints it here (``run X's
    blob ... waits for the blob store ...``); None once it ended, or where unknown."""


class Comparison(Body):
    runs: list[str]
    differs: list[str]
    metrics: dict[str, list[float | None]]


class Me(Body):
    user: str | None
    scopes: list[str]
    namespaces: list[str]
    admin: bool


class TokenRequest(Body):
    name: str
    scopes: list[str] | None = None
    """None: the scopes the calling token was issued with."""


class TokenInfo(Body):
    id: str
    name: str
    scopes: list[str]
    created_at: str
    revoked: bool


class NewToken(Body):
    id: str
    token: str
    """Shown once: only its hash is kept."""
    user: str
    scopes: list[str]


class UserRequest(Body):
    name: str
    admin: bool = False
    namespaces: list[str] = msgspec.field(default_factory=list)


class UserInfo(Body):
    name: str
    admin: bool
    namespaces: list[str]
    status: str = "active"
    """``active``, ``disabled`` (``pinbench user disable``) or ``deleted``."""


class MemberRequest(Body):
    user: str
