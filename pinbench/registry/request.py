"""The evaluation request: constraints on the artifacts plus scenario settings, from YAML."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from pinbench import bounds as b
from pinbench import typed
from pinbench.errors import InvalidDocument, UserError
from pinbench.registry.chain_spec import ChainSpec, check_chain_request
from pinbench.registry.explain import explain
from pinbench.registry.generation import GenerationSpec
from pinbench.registry.late_fields import drop_unset, drop_unset_request_parts
from pinbench.registry.manifest_parts import Platform
from pinbench.registry.names import Kind, Spec
from pinbench.specs.distributed import DistributedSpec
from pinbench.specs.operators.section import OperatorRun
from pinbench.specs.system_names import NAME as SYSTEM_NAME
from pinbench.specs.training import LATE_TRAINING_FIELDS, TrainingSpec
from pinbench.specs.transforms import TransformSpec, check_inference


class RequestError(InvalidDocument):
    what = "request"


# MLPerf Inference rules: ten-minute runs, query counts and tail percentiles per scenario.
MLPERF_PRESET: dict[str, dict[str, Any]] = {
    "SingleStream": {"min_duration_ms": 600_000, "min_query_count": 1024, "percentile": 90.0},
    "MultiStream": {
        "min_duration_ms": 600_000,
        "min_query_count": 270_336,
        "percentile": 99.0,
        "samples_per_query": 8,
    },
    "Server": {"min_duration_ms": 600_000, "min_query_count": 270_336, "percentile": 99.0},
    "Offline": {"min_duration_ms": 600_000, "min_query_count": 1},
}


# One request must not fan out into thousands of lockfiles; every number's bounds are in
# ``pinbench.bounds`` (msgspec refuses a value outside while parsing).
MAX_SWEEP = 64
BatchSize = Annotated[int, b.BATCH_SIZE.meta]
Threads = Annotated[int, b.THREADS.meta]
QueryCount = Annotated[int, b.QUERY_COUNT.meta]


class Scenario(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """MLPerf LoadGen settings: quick interactive defaults, or ``preset: mlperf`` for
    MLPerf's own values (settings written out explicitly still win)."""

    preset: Literal["quick", "mlperf"] = "quick"
    name: Literal["SingleStream", "MultiStream", "Server", "Offline"] = "SingleStream"
    mode: Literal["performance", "accuracy"] = "performance"
    min_duration_ms: Annotated[int, b.MIN_DURATION_MS.meta] = 1000
    min_query_count: QueryCount = 100
    max_query_count: QueryCount | None = None
    target_qps: Annotated[float, b.TARGET_QPS.meta] | None = None
    target_latency_ms: Annotated[float, b.TARGET_LATENCY_MS.meta] | None = None
    percentile: Annotated[float, b.PERCENTILE.meta] = 90.0
    samples_per_query: Annotated[int, b.SAMPLES_PER_QUERY.meta] = 8
    sample_count: Annotated[int, b.SAMPLE_COUNT.meta] | None = None
    seed: Annotated[int, b.SEED.meta] = 0

    def __post_init__(self) -> None:
        if self.name == "Server" and self.target_qps is None:
            raise ValueError("scenario Server needs target_qps (queries per second, > 0)")
        planned = self.planned_samples()
        if not b.PLANNED_SAMPLES.holds(planned):
            raise ValueError(planned_refusal(self.name, planned, measured=False))

    def planned_samples(self, rate_per_s: float = 0.0) -> int:
        """The samples LoadGen generates, and holds, before it issues the first query of a
        performance run (mlperf_loadgen 6.0 as measured: ``generated_query_count`` in its
        detail log): SingleStream and MultiStream plan twice ``min_duration_ms`` of queries at
        ``rate_per_s`` queries a second, Server ``min_duration_ms`` at ``target_qps``, Offline
        1.1 times ``min_duration_ms`` of samples at ``rate_per_s`` samples a second; never
        fewer than ``min_query_count`` queries, each of ``samples_per_query`` samples in
        MultiStream. ``rate_per_s`` is the model's measured rate, 0 before it is known (what
        the request fixes alone). An accuracy run plans the dataset's samples, bounded by
        ``sample_count``."""
        if self.mode == "accuracy":
            return 1
        seconds = self.min_duration_ms / 1000
        if self.name == "Offline":
            return max(self.min_query_count, int(1.1 * seconds * rate_per_s))
        rate = (self.target_qps or 0.0) if self.name == "Server" else 2 * rate_per_s
        per_query = self.samples_per_query if self.name == "MultiStream" else 1
        return max(self.min_query_count, int(seconds * rate)) * per_query


def planned_refusal(name: str, planned: int, *, measured: bool) -> str:
    """Why a scenario that plans too many samples (``Scenario.planned_samples``) is refused,
    and what to lower; ``measured``: with the model's measured rate."""
    if name == "Server":
        how, lower = "min_duration_ms x target_qps", "min_duration_ms or target_qps"
    elif measured:
        times = "1.1" if name == "Offline" else "2"
        how, lower = f"{times} x min_duration_ms at the model's measured rate", "min_duration_ms"
    else:
        how, lower = "min_query_count", "min_query_count"
    if name == "MultiStream":
        how += " x samples_per_query"
        lower = lower.replace(" or ", ", ") + " or samples_per_query"
    return (
        f"scenario {name} plans {planned:,} samples ({how}), and LoadGen holds every one "
        f"before it issues the first: at most {b.PLANNED_SAMPLES.high:,}; lower {lower}"
    )


class Limits(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Resources an isolated runner (docker) grants a run; the local and venv runners
    record them but cannot enforce memory or CPU."""

    memory_mb: Annotated[int, b.MEMORY_MB.meta] = 4096
    cpus: Annotated[float, b.CPUS.meta] | None = None
    """CPUs the container may use (fractions allowed); None: all of the host's."""
    timeout_s: Annotated[int, b.TIMEOUT_S.meta] = 1800
    """Wall-clock limit for the whole evaluation, model loading included."""


CPU_FLAG = re.compile(r"^[a-z0-9_.]{1,40}\Z")
MAX_CPU_FLAGS = 64
LATE_SYSTEM_FIELDS = ("name", "gpu", "cpu_flags")
"""A request's placement fields, left out of lockfiles (and sweep ids) while unset, so the
digests of lockfiles made before placement existed do not change."""


class SystemRequest(Platform, frozen=True, kw_only=True):
    """The platform to run on and, on a cluster, where: each field set is a constraint that a
    system's facts must meet (``pinbench.cluster.placement``). They are part of the lockfile:
    they change the numbers. A run on this machine (no cluster) checks them against this
    machine's facts and refuses a lockfile placed on a named system."""

    name: str | None = None
    """Only the system of this name."""
    gpu: str | None = None
    """A GPU whose model name contains this text as whole words, in any case (``H100``;
    ``A10`` does not name an A100)."""
    cpu_flags: list[str] | None = None
    """CPU feature flags the system must have, all of them (``avx512f``)."""

    def __post_init__(self) -> None:
        if self.name is not None and not SYSTEM_NAME.fullmatch(self.name):
            raise ValueError(
                f"system.name {self.name!r}: a system name is lowercase letters, digits and "
                "inner hyphens, at most 63 characters"
            )
        if self.gpu is not None and not 0 < len(self.gpu.strip()) <= 100:
            raise ValueError("system.gpu must be a GPU model's name (1 to 100 characters)")
        if self.cpu_flags is not None:
            if not self.cpu_flags or len(self.cpu_flags) > MAX_CPU_FLAGS:
                raise ValueError(f"system.cpu_flags lists 1 to {MAX_CPU_FLAGS} flags")
            bad = [f for f in self.cpu_flags if not CPU_FLAG.fullmatch(f)]
            if bad:
                raise ValueError(
                    f"system.cpu_flags {bad[0]!r}: a flag as /proc/cpuinfo names it (avx512f)"
                )

    def platform(self) -> Platform:
        """The platform alone (``arch``/``device``), as manifests name it."""
        return Platform(arch=self.arch, device=self.device)

    def placed(self) -> bool:
        """Whether any placement constraint is set."""
        return any(getattr(self, field) is not None for field in LATE_SYSTEM_FIELDS)


LATE_REQUEST_FIELDS = (
    *("operator", "training", "model", "dataset", "generation", "transform", "distributed"),
    "chain",
)
"""Left out of lockfiles (and sweep ids) while unset: ``operator`` came after schema 2 was
frozen, and ``model``/``dataset`` are unset only in an operator request."""


def request_data(request: Request) -> dict[str, Any]:
    """The request as plain data for digests: late fields left out while unset."""
    data = msgspec.to_builtins(request)
    assert isinstance(data, dict)
    if data.get("limits") is None:
        data.pop("limits", None)  # added after schema 2 was frozen
    drop_unset(data, LATE_REQUEST_FIELDS)
    drop_unset(data["system"], LATE_SYSTEM_FIELDS)
    if isinstance(data.get("training"), dict):
        drop_unset(data["training"], LATE_TRAINING_FIELDS)
    drop_unset_request_parts(data)  # generation's, a chain stage's
    return data


class Request(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    model: str | None = None
    dataset: str | None = None
    """The model and the dataset it is evaluated on; both required unless ``operator``."""
    operator: OperatorRun | None = None
    """Benchmark this operator (Deep500's level 0) on ``framework`` instead of a model on a
    dataset: no model, no dataset, no scenario, one batch size (the shapes are the operator's).
    """
    training: TrainingSpec | None = None
    """Train ``model`` (its architecture; its weights with ``init: weights``) on ``dataset``
    (Deep500's level 2) to a target on ``training.validation``, instead of evaluating it."""
    distributed: DistributedSpec | None = None
    """Train with several workers (Deep500's level 3): a training request's communication
    scheme and worker count (``pinbench.training.distributed``)."""
    generation: GenerationSpec | None = None
    """How a generating task's (text-generation, speech-recognition) answers are generated
    (required for one, refused for any other task: checked when the request is locked)."""
    transform: TransformSpec | None = None
    """A transformation of the evaluated network (Deep500's level 1): micro-batching and/or
    onnxruntime's graph optimization, validated against the untransformed network before the
    run measures the transformed one."""
    chain: ChainSpec | None = None
    """``model`` as the last stage of a chain of models (``pinbench.chains``)."""
    framework: str | None = None
    image: str | None = None
    system: SystemRequest = msgspec.field(default_factory=SystemRequest)
    scenario: Scenario = msgspec.field(default_factory=Scenario)
    batch_size: BatchSize | list[BatchSize] = 1
    """One batch size, or a sweep: one lockfile per batch size, grouped."""
    threads: Threads | None = None
    """Intra-op threads for the framework; None lets it decide."""
    limits: Limits | None = None
    """Resource limits for isolated runners; None: ``Limits()``'s defaults. Left out of the
    lockfile's bytes when unset, so lockfiles made before limits existed keep their digest."""

    def __post_init__(self) -> None:
        sizes = self.batch_sizes()
        if len(sizes) > MAX_SWEEP:
            raise ValueError(
                f"batch_size lists {len(sizes)} sizes: a sweep has at most {MAX_SWEEP}"
            )
        if not sizes:
            raise ValueError("batch_size lists no size: give one, or a non-empty list of them")
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"batch_size lists {sizes}: each size at most once")
        if self.operator is None:
            missing = [k for k in ("model", "dataset") if getattr(self, k) is None]
            if missing:
                raise ValueError(f"{' and '.join(missing)} required (or an operator to run)")
        else:
            self._check_operator()
        if self.training is not None:
            self._check_training(self.training)
        if self.generation is not None:
            self._check_generation(self.generation)
        if self.distributed is not None:
            self._check_distributed()
        if self.chain is not None:
            check_chain_request(self)
        for kind in (Kind.MODEL, Kind.DATASET, Kind.FRAMEWORK, Kind.IMAGE):
            text = getattr(self, kind.value)
            if text is not None:
                try:
                    Spec.parse(text, kind=kind)
                except UserError as exc:
                    raise ValueError(f"{kind.value}: {exc}") from None
        if self.transform is not None:
            if self.operator is not None or self.training is not None or self.generation:
                raise ValueError(
                    "transform goes with a model evaluated on a dataset, not generating (a "
                    "training request takes training.transform)"
                )
            name = Spec.parse(self.framework, kind=Kind.FRAMEWORK).name if self.framework else None
            check_inference(self.transform, framework=name, batch_sizes=sizes)

    def _check_operator(self) -> None:
        """An operator request names a framework and nothing that belongs to a model run."""
        given = [k for k in ("model", "dataset") if getattr(self, k) is not None]
        if given:
            raise ValueError(f"an operator request takes no {' or '.join(given)}")
        if self.framework is None:
            raise ValueError("an operator request names the framework to run it on")
        if self.batch_size != 1:
            raise ValueError(
                "an operator request takes no batch_size: the batch is a shape parameter "
                "of the operator"
            )
        if self.scenario != Scenario():
            raise ValueError(
                "an operator request takes no scenario: its loop is operator.samples and "
                "operator.warmup"
            )

    def _check_training(self, training: TrainingSpec) -> None:
        """A training request trains one model on one dataset; its own batch size is
        ``training.batch_size`` and the validation split is another dataset."""
        # (with an operator too, _check_operator has refused its model and dataset)
        if self.batch_size != 1:
            raise ValueError("a training request takes training.batch_size, not batch_size")
        if self.scenario != Scenario():
            raise ValueError("a training request takes no scenario (it is not timed by LoadGen)")
        try:
            validation = Spec.parse(training.validation, kind=Kind.DATASET)
        except UserError as exc:
            raise ValueError(f"training.validation: {exc}") from None
        assert self.dataset is not None
        if validation.name == Spec.parse(self.dataset, kind=Kind.DATASET).name:
            raise ValueError(
                "training.validation must be another dataset than the one trained on "
                "(a held-out split)"
            )
        if training.transform is not None and self.framework is not None:
            try:
                framework = Spec.parse(self.framework, kind=Kind.FRAMEWORK).name
            except UserError:
                return  # the framework's own check below says what is wrong with it
            if framework != "torch":
                raise ValueError(
                    f"training.transform (micro-batching) runs on torch; framework {framework} "
                    "has no micro-batched training step here"
                )

    def _check_distributed(self) -> None:
        """Distributed training is a training request's, on PyTorch (torch.distributed)."""
        if self.training is None:
            raise ValueError("distributed goes with a training section (a training request)")
        framework = self.framework and Spec.parse(self.framework, kind=Kind.FRAMEWORK).name
        if framework != "torch":
            raise ValueError(
                f"distributed training runs on torch (torch.distributed over gloo); "
                f"framework {framework or 'unset'} has no distributed schemes here"
            )
        if self.training.transform is not None:
            raise ValueError(
                "distributed with training.transform: the distributed schemes do not "
                "micro-batch (train distributed, or micro-batched, in separate runs)"
            )

    def _check_generation(self, generation: GenerationSpec) -> None:
        if self.operator is not None or self.training is not None:
            raise ValueError("generation goes with a model evaluated on a prompts dataset")
        if self.batch_sizes() != [1] and self.scenario.name != "Offline":
            raise ValueError(
                f"batched generation is the Offline scenario's: {self.scenario.name} issues one "
                "prompt per query, so its batches would all be of one (give scenario.name "
                "Offline, or batch_size 1)"
            )
        ttft, tpot = generation.latency_bounds()
        if (ttft is not None or tpot is not None) and self.scenario.name != "Server":
            raise ValueError(
                "generation's ttft/tpot latency bounds are the Server scenario's: give "
                "scenario.name Server, or leave them out"
            )

    def batch_sizes(self) -> list[int]:
        return list(self.batch_size) if isinstance(self.batch_size, list) else [self.batch_size]

    @property
    def is_sweep(self) -> bool:
        return isinstance(self.batch_size, list)

    def specs(self) -> list[Spec]:
        out = []
        for kind in (Kind.MODEL, Kind.FRAMEWORK, Kind.DATASET, Kind.IMAGE):
            text = getattr(self, kind.value)
            if text is not None:
                out.append(Spec.parse(text, kind=kind))
        if self.training is not None:
            out.append(Spec.parse(self.training.validation, kind=Kind.DATASET))
        chain = (
            [Spec.parse(s.model, kind=Kind.MODEL) for s in self.chain.stages] if self.chain else []
        )
        return out + [s for s in chain if not self.model or s.name != out[0].name]


def parse_request(data: object, *, source: str = "<request>") -> Request:
    if not isinstance(data, dict):
        raise RequestError(source=source, reason="expected a mapping at the top level")
    scenario = data.get("scenario")
    if isinstance(scenario, dict) and scenario.get("preset") == "mlperf":
        preset = MLPERF_PRESET.get(str(scenario.get("name", "SingleStream")), {})
        data = {**data, "scenario": {**preset, **scenario}}
    try:
        return typed.convert(data, Request)
    except msgspec.ValidationError as exc:
        raise RequestError(source=source, reason=explain(str(exc), Request, data)) from None
    except UserError as exc:  # the operator section's own check names the field at fault
        raise RequestError(source=source, reason=f"operator: {exc}") from None
