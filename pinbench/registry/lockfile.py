"""Lockfiles: the canonical JSON record of one evaluation's exact inputs; its sha256 is its id.

A lockfile is never edited: parsing refuses bytes that are not in canonical form (sorted keys,
UTF-8, no insignificant whitespace), so a lockfile's digest always identifies its content.
Host facts belong to the run record, not here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import msgspec

from pinbench import typed
from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import InvalidDocument, UserError
from pinbench.registry.chain_spec import LockedChain, LockedStage
from pinbench.registry.dataset_manifest import LabelFormat, SampleFiles
from pinbench.registry.explain import explain
from pinbench.registry.late_fields import (
    LATE_LABEL_FIELDS,
    LATE_STAGE_FIELDS,
    drop_unset,
    drop_unset_builder,
    drop_unset_inputs,
    drop_unset_outputs,
)
from pinbench.registry.manifest import Requirement
from pinbench.registry.manifest_parts import Platform, check_relative_path
from pinbench.registry.names import Kind
from pinbench.registry.ports import Input, Output
from pinbench.registry.processing_code import Builder, Code
from pinbench.registry.request import (
    LATE_SYSTEM_FIELDS,
    BatchSize,
    Limits,
    Request,
    Scenario,
    SystemRequest,
    Threads,
    request_data,
)
from pinbench.specs.operators.section import OperatorRun
from pinbench.specs.training import LATE_TRAINING_FIELDS, TrainingSpec

SCHEMA_VERSION = 2


class LockfileError(InvalidDocument):
    what = "lockfile"


class _Frozen(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class LockedFile(_Frozen, frozen=True, kw_only=True, omit_defaults=True):
    path: str
    sha256: str
    size: int
    source: str | None
    """For a remote source, pinned: ``hf://`` and ``dvc://`` name a commit."""
    md5: str | None = None
    """A legacy digest kept beside the sha256 (DVC's md5, an MLModelScope checksum)."""

    def __post_init__(self) -> None:
        check_relative_path(self.path)  # the registry re-derives it too; refuse early


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
    preprocess: Code | None = None
    postprocess: Code | None = None
    """The manifest's processing code (a file's bytes are pinned among the model's files); left
    out when unset, so the lockfiles of models without it keep their digests."""
    builder: Builder | None = None
    """A ``torch-state-dict`` model's builder (consented code like the above); left out when
    unset."""
    requirements: list[Requirement] | None = None
    """The packages the model's code imports, hash-pinned (``registry.model_requirements``):
    the venv runner installs them beside the framework's; left out when unset."""


CODE_ROLES = ("preprocess", "postprocess", "builder")
"""A locked model's code, each run only with the run's consent (``processing.consent``)."""


class LockedDataset(_Frozen, frozen=True, kw_only=True):
    name: str
    version: str
    manifest_digest: str
    labels: LabelFormat
    task: str
    samples: int | None
    data: SampleFiles | None = None

    def __post_init__(self) -> None:
        from pinbench.registry.checks import checks
        from pinbench.registry.dataset_manifest import PER_FILE_FORMATS

        per_file = self.data is not None and self.data.format in PER_FILE_FORMATS
        checks().check_labels(self.task, self.labels, per_file=per_file)


class LockBody(_Frozen, frozen=True, kw_only=True):
    schema_version: int
    request: Request
    artifacts: list[LockedArtifact]
    environment: LockedEnvironment | None
    model: LockedModel | None
    """The model evaluated; None in an operator benchmark."""
    dataset: LockedDataset | None
    """The dataset it is evaluated on; None in an operator benchmark."""
    operator: OperatorRun | None = None
    """The operator benchmarked (Deep500's level 0), as its request names it; left out of the
    lockfile's bytes when unset, so a model run's lockfile keeps its digest."""
    training: TrainingSpec | None = None
    """A training run's settings (Deep500's level 2), as its request names them; left out
    when unset."""
    validation: LockedDataset | None = None
    """A training run's validation split (``training.validation`` resolved); left out when
    unset."""
    chain: LockedChain | None = None
    """A chain's stages (``pinbench.chains``), ``model`` its last; left out when unset."""
    scenario: Scenario
    batch_size: BatchSize
    threads: Threads | None
    sweep: str | None
    """For one point of a batch-size sweep: the sha256 of the request, shared by its points."""
    system: SystemRequest
    """The request's platform and placement constraints (``SystemRequest``)."""

    def __post_init__(self) -> None:
        from pinbench.registry.checks import checks

        dataset = self.dataset
        generating = dataset is not None and checks().generates(dataset.task)
        if dataset is not None and generating and self.request.generation is None:
            raise ValueError(
                f"dataset {dataset.name} is a {dataset.task} dataset, answered by generating: "
                "the request needs a `generation` section (at least max_new_tokens)"
            )
        if not generating and self.request.generation is not None:
            what = dataset.task if dataset is not None else "none"
            raise ValueError(
                f"`generation` goes with a dataset whose task generates; this one's task is {what}"
            )
        self._check_code_runs()
        from pinbench.registry.model_requirements import check_environment

        env = self.environment
        check_environment(
            self.model.requirements if self.model is not None else None,
            model=self.model.name if self.model is not None else "",
            environment=f"{env.framework} {env.version}" if env is not None else "",
            pinned=env.requirements if env is not None else [],
        )
        framework = self.environment.framework if self.environment is not None else None
        generation = self.request.generation
        if (
            framework == "ctranslate2"
            and generation is not None
            and generation.sampling == "seeded"
        ):
            raise ValueError(
                "seeded sampling on ctranslate2 is refused: its random generator is seeded once "
                "per thread and never again, so an answer would depend on every answer drawn "
                "before it (decision 318); sample on another framework, or answer greedy"
            )
        if generating and self.batch_size != 1 and framework != "transformers":
            raise ValueError(
                f"batched generation runs on transformers; {framework}'s generator (pinbench's "
                "decoder-with-past layout, no attention mask) answers one prompt at a time: "
                "batch_size 1"
            )

    def _check_code_runs(self) -> None:
        """A model's ``preprocess``/``postprocess`` (and ``builder``) runs only in an evaluation
        of its outputs: a generation run feeds the model's tokenizer and decodes its tokens
        itself, a training run feeds its own batches and builds its own module, so neither
        would run the code; refused, naming the field, rather than ignored (decision 220)."""
        model = self.model
        if model is None or (self.request.generation is None and self.training is None):
            return
        roles = [r for r in CODE_ROLES if getattr(model, r) is not None]
        if roles:
            what = "a generation" if self.request.generation is not None else "a training"
            raise ValueError(
                f"model {model.name}@{model.version} declares `{'` and `'.join(roles)}`: "
                f"{what} run never runs a model's "
                f"{'builder' if roles == ['builder'] else 'processing code'}, so it cannot "
                "honour it; "
                "such a model runs in accuracy and performance evaluations only"
            )

    @property
    def limits(self) -> Limits:
        return self.request.limits or Limits()


class Lockfile:
    """An immutable lockfile: its body, its canonical bytes and their digest."""

    __slots__ = ("body", "canonical", "digest")

    def __init__(self, body: LockBody) -> None:
        self.body = body
        data = msgspec.to_builtins(body)
        data["request"] = request_data(body.request)
        drop_unset(data, ("operator", "training", "validation", "chain"))
        for stage in (data.get("chain") or {}).get("stages", []):
            drop_unset(stage, ("code", *LATE_STAGE_FIELDS))
            drop_unset_inputs(stage["inputs"])
            drop_unset_outputs(stage["outputs"])
        if isinstance(data.get("training"), dict):
            drop_unset(data["training"], LATE_TRAINING_FIELDS)
        drop_unset(data["system"], LATE_SYSTEM_FIELDS)
        if data["dataset"] is not None:
            drop_unset(data["dataset"]["labels"], LATE_LABEL_FIELDS)
        if data["model"] is not None:
            drop_unset_builder(data["model"])
            drop_unset(data["model"], (*CODE_ROLES, "requirements"))
            drop_unset_inputs(data["model"]["inputs"])
            drop_unset_outputs(data["model"]["outputs"])
        self.canonical = canonical_json(data)
        self.digest = Digest.of_bytes(self.canonical)

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "<lockfile>") -> Lockfile:
        raw = data.rstrip(b"\n")
        try:
            parsed = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, a huge integer
            raise LockfileError(source=source, reason=f"not JSON: {exc}") from None
        except RecursionError:
            raise LockfileError(source=source, reason="not JSON: nested too deeply") from None
        if not isinstance(parsed, dict):
            raise LockfileError(source=source, reason="expected a JSON object")
        version = parsed.get("schema_version")
        if version != SCHEMA_VERSION:
            raise LockfileError(
                source=source,
                reason=f"schema_version {version!r} is not supported (expected {SCHEMA_VERSION})",
            )
        try:
            body = typed.convert(parsed, LockBody)
            lock = cls(body)
        except msgspec.ValidationError as exc:
            reason = explain(str(exc), LockBody, parsed)
            raise LockfileError(source=source, reason=reason) from None
        except UserError as exc:  # the operator section's own check
            raise LockfileError(source=source, reason=f"operator: {exc}") from None
        except ValueError as exc:  # a non-finite float or a huge integer: not canonical JSON
            raise LockfileError(source=source, reason=f"not canonical JSON: {exc}") from None
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
        """Write the canonical bytes plus one trailing newline (ignored when read back), as
        every file pinbench writes (``artifacts.destination``, decision 289): a regular file
        replaced whole, a device or FIFO written through, anything else refused. The Python
        API replaces a regular file (calling is asking); the CLI asks for ``--force``."""
        from pinbench.artifacts.destination import destination, write

        write(destination(path, option="lockfile path", force=True), self.canonical + b"\n")

    def stage_artifact(self, stage: LockedStage) -> LockedArtifact:
        """A chain stage's model artifact among the lockfile's: its files, each with its
        sha256."""
        for art in self.body.artifacts:
            if art.kind == Kind.MODEL.value and art.name == stage.model:
                return art
        raise UserError(f"the lockfile pins no model {stage.model} for chain stage {stage.name!r}")

    def artifact(self, kind: Kind) -> LockedArtifact | None:
        for a in self.body.artifacts:
            if a.kind == kind.value:
                return a
        return None

    def to_json(self) -> Any:
        return json.loads(self.canonical)
