"""One evaluation, wherever it runs: open the model, preprocess, warm up, run the scenario.

Needs no database and no blob store, only the lockfile and the paths of its (already verified)
files, so the same code runs in this interpreter, in a hash-pinned virtual environment and in a
container (``pinbench.evaluator.worker``).
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pinbench.energy.meter import SYSFS, EnergyMeter
from pinbench.energy.meter import record as record_energy
from pinbench.errors import UserError
from pinbench.evaluator.datasets import DatasetError, Samples, load_samples
from pinbench.evaluator.feed import prepare
from pinbench.evaluator.pipeline import postprocess
from pinbench.evaluator.predictions import sample_rows
from pinbench.evaluator.predictors import predictor_class
from pinbench.evaluator.predictors.base import Predictor
from pinbench.evaluator.predictors.config import ModelFiles, PredictorOptions
from pinbench.evaluator.scenarios import Measurement, run_scenario
from pinbench.evaluator.stop import Stop
from pinbench.evaluator.undefined import UndefinedMetric
from pinbench.registry.lockfile import LockedArtifact, LockedFile, Lockfile
from pinbench.registry.manifest import Output
from pinbench.registry.names import Kind
from pinbench.tasks.classification.scores import (
    check_labels,
    class_scores,
    classification_metrics,
)
from pinbench.tasks.similarity.pairs import SimilarityError, similarity_metrics
from pinbench.trace.recorder import Recorder

if TYPE_CHECKING:
    from pinbench.tasks.detection.score import Plan
    from pinbench.tasks.segmentation.score import Plan as PixelPlan

Say = Callable[[str], None]


class NoClassificationOutput(UserError):
    """An accuracy run on a model that declares no output of ``type: classification``."""

    def __init__(self, *, model: str, outputs: list[str]) -> None:
        super().__init__(
            f"an accuracy run needs an output of `type: classification`; model {model} "
            f"declares {', '.join(outputs) if outputs else 'no outputs'}: mark the output "
            "that holds the class scores"
        )
        self.model = model
        self.outputs = outputs


class FrameworkMismatch(UserError):
    def __init__(self, *, framework: str, pinned: str, seen: str) -> None:
        super().__init__(
            f"this environment has {framework} {seen}, the lockfile pins {framework} {pinned}: "
            f"install exactly {framework}=={pinned} here, or use a runner that provides it "
            "(--runner venv | docker)"
        )
        self.framework = framework
        self.pinned = pinned
        self.seen = seen


@dataclass
class Job:
    """What one evaluation reads: the lockfile and where its verified files are."""

    lock: Lockfile
    model_paths: dict[str, Path]
    data_paths: dict[str, Path]
    scratch: Path
    """A writable folder for LoadGen's logs."""
    cache: Path | None = None
    """Where preprocessed inputs are cached, or None for no cache."""
    trace: str = "none"
    """The trace level (``pinbench.trace.levels``)."""
    allow_pickle: bool = False
    """The run's own decision to unpickle a ``trusted`` model (never the lockfile's alone)."""
    stop: Stop = field(default_factory=Stop)
    """Asked to stop early (a signal, a cancel, a time limit): checked between phases, and
    LoadGen's queries are answered without the model once it is set."""
    validation_paths: dict[str, Path] = field(default_factory=dict)
    """A training run's validation split's files."""
    sysfs: Path = SYSFS
    """Where sysfs is mounted, for the RAPL energy counters (tests lay out their own)."""


@dataclass
class Evidence:
    """What an evaluation has gathered so far; a failed one keeps what it had."""

    frameworks: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    latencies: npt.NDArray[np.int64] | None = None
    outputs: npt.NDArray[np.generic] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    """Provenance of the environment that ran it: ``runner``, ``digest`` (image ID for docker,
    environment digest for venv, digest of the installed distributions for local) and facts."""
    trace: bytes | None = None
    """The Chrome trace (JSON) of a traced run."""
    weights: bytes | None = None
    """A training run's final weights (the file's bytes), stored as a blob."""


def files_of(lock: Lockfile, kind: Kind) -> LockedArtifact:
    artifact = lock.artifact(kind)
    if artifact is None:
        raise UserError(f"the lockfile pins no {kind.value}")
    return artifact


ROLES = ("model", "dataset", "validation")
"""What a pinned file is for: the model, the dataset (trained on, in a training run) and a
training run's validation split."""


def pinned_files(lock: Lockfile, role: Kind | str) -> list[LockedFile]:
    """The files of the artifact in ``role`` (a kind names its role); none for a role the
    lockfile has not (an operator benchmark pins no model or dataset)."""
    role = role.value if isinstance(role, Kind) else role
    body = lock.body
    locked = {"model": body.model, "dataset": body.dataset, "validation": body.validation}[role]
    if locked is None:
        return []
    kind = Kind.MODEL if role == "model" else Kind.DATASET
    for art in body.artifacts:
        if art.kind == kind.value and art.name == locked.name:
            return art.files
    raise UserError(f"the lockfile pins no {kind.value} {locked.name}")


def measure(job: Job, evidence: Evidence, say: Say) -> None:
    """Evaluate ``job`` and fill ``evidence`` (frameworks first, so a mismatch is recorded)."""
    body = job.lock.body
    env = body.environment
    if env is None:
        raise UserError("the lockfile pins no framework environment for its platform")
    cls = predictor_class(env.framework)
    seen = cls.framework_version()
    evidence.frameworks[env.framework] = seen
    if public_version(seen) != public_version(env.version):  # semver build metadata too
        raise FrameworkMismatch(framework=env.framework, pinned=env.version, seen=seen)
    if body.operator is not None:
        from pinbench.evaluator.operate import operate

        operate(job, evidence, say)
        return
    if body.training is not None:
        from pinbench.evaluator.trainrun import train_run

        train_run(job, evidence, say)
        return

    recorder = Recorder(job.trace, env.framework, seen)
    recorder.start()
    try:
        _evaluate(job, cls, recorder, evidence, say)
    finally:
        recorder.stop()
    evidence.trace = recorder.finish()
    undefined = sorted(k for k, v in evidence.metrics.items() if not math.isfinite(v))
    if undefined:  # a metric is a number or the run failed: NaN is neither recorded nor lost
        raise UndefinedMetric(metric=", ".join(undefined), reason="it came out NaN or infinite")


def _evaluate(
    job: Job, cls: type[Predictor], recorder: Recorder, evidence: Evidence, say: Say
) -> None:
    body = job.lock.body
    assert body.model is not None and body.dataset is not None  # not an operator run
    model_art = files_of(job.lock, Kind.MODEL)
    data_art = files_of(job.lock, Kind.DATASET)
    if not body.model.inputs:
        raise UserError(f"model {model_art.ref} declares no inputs")
    scenario = body.scenario
    accuracy = scenario.mode == "accuracy"
    similarity = body.dataset.task == "sentence-similarity"
    detection = body.dataset.task == "detection"
    segmentation = body.dataset.task == "segmentation"
    by_task = similarity or detection or segmentation
    scored = {} if by_task else _classification(body.model.outputs)
    embedding = _embedding(body.model.outputs, str(model_art.ref)) if similarity else None
    if accuracy and not by_task and not scored:
        raise NoClassificationOutput(
            model=str(model_art.ref),
            outputs=[f"{o.name} ({o.type})" for o in body.model.outputs],
        )
    samples = load_samples(body.dataset, data_art, job.data_paths)
    truths = (samples.labels, samples.pairs, samples.detection, samples.segmentation)
    if accuracy and all(t is None for t in truths):
        raise DatasetError(
            dataset=f"{body.dataset.name}@{body.dataset.version}",
            reason="an accuracy run needs labels and this dataset has none",
        )
    count = scenario.sample_count
    if accuracy and similarity and count is not None and count < len(samples):
        raise UserError(
            f"a sentence-similarity run needs every sample embedded: sample_count {count} < "
            f"{len(samples)} samples (leave sample_count out)"
        )
    boxes: Plan | None = None
    if accuracy and samples.detection is not None:
        from pinbench.tasks.detection.score import plan  # only detection runs need it

        boxes = plan(
            body.model.inputs,
            body.model.outputs,
            samples.detection,
            job.model_paths,
            model=str(model_art.ref),
        )
    pixels: PixelPlan | None = None
    if accuracy and samples.segmentation is not None:
        from pinbench.tasks.segmentation.score import plan as pixel_plan

        pixels = pixel_plan(
            body.model.inputs,
            body.model.outputs,
            samples.segmentation,
            job.model_paths,
            model=str(model_art.ref),
        )
    job.stop.check()
    say("preprocessing (outside any timed region)")
    with recorder.phase("preprocess"):
        feed = prepare(
            list(body.model.inputs),
            samples,
            cache=job.cache,
            dataset_digest=body.dataset.manifest_digest,
            model_files=job.model_paths,
            model_sha256={f.path: f.sha256 for f in model_art.files},
            say=say,
            stop=job.stop,
        )
    inputs = feed.inputs
    if feed.decoder is not None:
        evidence.details["decoder"] = feed.decoder
    evidence.details.update(
        pipeline_digest=feed.digest.hex,
        preprocess_cache_hit=feed.cached,
        batch_size=body.batch_size,
        threads=body.threads,
        scenario=scenario.name,
        mode=scenario.mode,
    )
    predictor: Predictor = cls()
    options = PredictorOptions(batch_size=body.batch_size, threads=body.threads)
    profiling = recorder.wants("framework")
    if profiling:
        say(f"tracing at level {job.trace}: {cls.TITLE}'s profiler is on")
        predictor.start_profiling(job.scratch / "profile")
    try:
        with recorder.phase("load model", role="load"):
            predictor.open(
                ModelFiles(
                    job.model_paths,
                    body.model.format,
                    body.model.architecture,
                    body.model.trusted and job.allow_pickle,
                    tuple(body.model.inputs),
                    tuple(body.model.outputs),
                ),
                options,
            )
        job.stop.check()
        first = inputs[: body.batch_size]
        predictor.check_input(first)
        with recorder.phase("first predict (cold)", role="cold"):
            answer = predictor.first_predict(first)
        if boxes is not None:
            from pinbench.tasks.detection.score import check_columns

            _check_batch_axis(answer, boxes.names, len(first))
            check_columns(answer, boxes)
        elif pixels is not None:
            from pinbench.tasks.segmentation.score import check_answer

            _check_batch_axis(answer, [pixels.name], len(first))
            check_answer(answer, pixels)
        elif scored:  # in every mode: a declared classification output is honoured or refused
            _check_class_count(
                answer, list(scored), samples if accuracy else None, body.dataset.name, len(first)
            )
        elif embedding is not None:
            _check_embedding(answer, embedding, feed.arrays, len(first))
        with recorder.phase("warm-up"):
            expected, warm_starts, warm_times = _warm_up(predictor, first, options.warmup, job.stop)
        job.stop.check()
        recorder.warm_up(warm_starts, warm_times)
        say(f"running {scenario.name} ({scenario.mode}) with {cls.NAME} {cls.framework_version()}")
        with (
            EnergyMeter.open(job.sysfs) as meter,  # counters found before the region
            recorder.phase("scenario", scenario=scenario.name, mode=scenario.mode),
        ):
            meter.start()
            measurement = run_scenario(
                predictor.predict,
                inputs,
                scenario,
                batch_size=body.batch_size,
                expected_latency_ns=expected,
                log_dir=job.scratch / "loadgen",
                stop=job.stop,
                on_caller=profiling and cls.PROFILES_ONE_THREAD,
            )
            energy = meter.stop()
        recorder.scenario(measurement.starts_ns, measurement.latencies_ns)
        if profiling:
            profiling = False
            recorder.framework(predictor.stop_profiling())
    finally:
        if profiling:  # the run failed: stop the profiler, its events are not wanted
            with contextlib.suppress(Exception):
                predictor.stop_profiling()
        predictor.close()
    evidence.metrics = measurement.summary()
    evidence.details["loadgen"] = measurement.loadgen
    record_energy(energy, measurement.samples, evidence.metrics, evidence.details)
    evidence.latencies = measurement.latencies_ns
    if accuracy and embedding is not None:
        with recorder.phase("postprocess (accuracy)"):
            score_similarity(evidence, measurement, embedding, samples, feed.arrays)
    elif accuracy and boxes is not None:
        with recorder.phase("postprocess (accuracy)"):
            score_detection(evidence, measurement, boxes, samples)
    elif accuracy and pixels is not None:
        with recorder.phase("postprocess (accuracy)"):
            score_segmentation(evidence, measurement, pixels, samples)
    elif accuracy:
        assert samples.labels is not None
        with recorder.phase("postprocess (accuracy)"):
            indexes, outputs = _outputs(measurement, list(scored))
            truth = samples.labels[indexes]
            for name, key in scored.items():
                metrics = classification_metrics(outputs[name], truth, name=name)
                if len(scored) > 1:  # the metric says which output: top1_<output>
                    metrics = {
                        (f"{m}_{key}" if m != "accuracy_samples_count" else m): v
                        for m, v in metrics.items()
                    }
                evidence.metrics.update(metrics)
        recorded = next(iter(scored))
        evidence.outputs = outputs[recorded]
        evidence.details["outputs_name"] = recorded
        evidence.details["samples"] = sample_rows(samples, indexes, outputs[recorded])


class ClassCountMismatch(UserError):
    """A classification output scores another number of classes than the dataset declares:
    its indexes cannot mean the dataset's classes."""

    def __init__(self, *, output: str, scores: int, dataset: str, classes: int) -> None:
        super().__init__(
            f"output {output} scores {scores} classes but dataset {dataset} declares {classes}: "
            "an accuracy run needs the model's class indexes to be the dataset's (pair them "
            "with a dataset labelled for this model)"
        )
        self.output = output
        self.scores = scores
        self.dataset = dataset
        self.classes = classes


class BatchAxisMismatch(UserError):
    """An output scored per sample whose first axis is not the batch's samples: its rows
    would be matched to other samples' ground truth."""

    def __init__(self, *, output: str, shape: tuple[int, ...], batch: int) -> None:
        super().__init__(
            f"output {output!r} has shape {list(shape)} for a batch of {batch} samples: its first "
            "axis must be the batch's samples"
        )
        self.output = output
        self.shape = shape
        self.batch = batch


def _check_batch_axis(
    answer: dict[str, npt.NDArray[np.generic]], names: list[str], batch: int
) -> None:
    for name in names:
        shape = tuple(int(d) for d in np.shape(answer[name]))
        if not shape or shape[0] != batch:
            raise BatchAxisMismatch(output=name, shape=shape, batch=batch)


def _check_class_count(
    answer: dict[str, npt.NDArray[np.generic]],
    names: list[str],
    samples: Samples | None,
    dataset: str,
    batch: int,
) -> None:
    """Each classification output of the first answer is one row of class scores per sample
    (``classification.class_scores``) and, in accuracy mode (``samples`` given), scores as
    many classes as the dataset declares; where it declares none, one for every label."""
    for name in names:
        scores = class_scores(answer[name], name=name, batch=batch).shape[1]
        if samples is not None and samples.classes is not None and scores != samples.classes:
            raise ClassCountMismatch(
                output=name, scores=scores, dataset=dataset, classes=samples.classes
            )
        if samples is not None and samples.labels is not None:
            check_labels(scores, samples.labels, name=name)


class NoEmbeddingOutput(UserError):
    def __init__(self, *, model: str, outputs: list[str]) -> None:
        super().__init__(
            f"model {model} declares {', '.join(outputs) or 'no outputs'}: a sentence-"
            "similarity run needs exactly one output of type embedding (with its pool and "
            "l2_normalize steps)"
        )
        self.model = model
        self.outputs = outputs


def _embedding(outputs: list[Output], model: str) -> Output:
    found = [o for o in outputs if o.type == "embedding"]
    if len(found) != 1:
        raise NoEmbeddingOutput(model=model, outputs=[f"{o.name} ({o.type})" for o in outputs])
    return found[0]


def _check_embedding(
    answer: dict[str, npt.NDArray[np.generic]],
    output: Output,
    arrays: dict[str, npt.NDArray[np.generic]],
    batch: int,
) -> None:
    """The first answer's embedding output, after its steps (over the first batch's inputs), is
    one vector per sample, ``(N, D)``: checked before anything is timed."""
    name = str(output.name)
    raw = np.asarray(answer[name])
    first = {key: value[:batch] for key, value in arrays.items()}
    vectors = postprocess(raw, list(output.steps), first)
    if vectors.ndim != 2 or vectors.shape[0] != batch:
        raise SimilarityError(
            reason=f"the embedding output {name!r} of shape {list(raw.shape)} is "
            f"{list(vectors.shape)} after its steps; want one vector per sample of the batch "
            f"of {batch}, (N, D): pool token states with a `pool` step"
        )


def score_similarity(
    evidence: Evidence,
    measurement: Measurement,
    output: Output,
    samples: Samples,
    arrays: dict[str, npt.NDArray[np.generic]],
) -> None:
    """Every sample's embedding (the output's steps: pool over the mask input, normalize),
    then Spearman's rho of the pairs' cosine similarities against the gold scores."""
    assert samples.pairs is not None
    name = str(output.name)
    indexes, outputs = _outputs(measurement, [name])
    if len(indexes) != len(samples):
        raise UserError(
            f"a sentence-similarity run needs every sample embedded: {len(indexes)} of "
            f"{len(samples)} were (raise the scenario's sample_count)"
        )
    embeddings = postprocess(outputs[name], list(output.steps), arrays)
    evidence.metrics.update(similarity_metrics(embeddings.astype(np.float64), samples.pairs))
    evidence.outputs = embeddings
    evidence.details["outputs_name"] = name


def score_detection(
    evidence: Evidence, measurement: Measurement, boxes: Plan, samples: Samples
) -> None:
    """COCO mAP, mAP@.5 and recall of every sample's detections (``detection.score``)."""
    from pinbench.tasks.detection.score import score_detections

    assert samples.files is not None
    indexes, outputs = _outputs(measurement, boxes.names)
    if len(indexes) != len(samples):
        raise UserError(
            f"a detection run needs every sample answered: {len(indexes)} of {len(samples)} "
            "were (raise the scenario's sample_count)"
        )
    files = [(f.path, f.local) for f in samples.files]
    scored = score_detections(outputs, boxes, files)
    evidence.metrics.update(scored.metrics)
    evidence.outputs = outputs[boxes.name]
    evidence.details["outputs_name"] = boxes.name
    evidence.details["detections"] = scored.details


def score_segmentation(
    evidence: Evidence, measurement: Measurement, pixels: PixelPlan, samples: Samples
) -> None:
    """mIoU and pixel accuracy of every sample's class map (``segmentation.score``)."""
    from pinbench.tasks.segmentation.score import score_masks

    assert samples.files is not None
    indexes, outputs = _outputs(measurement, [pixels.name])
    if len(indexes) != len(samples):
        raise UserError(
            f"a segmentation run needs every sample answered: {len(indexes)} of "
            f"{len(samples)} were (raise the scenario's sample_count)"
        )
    scored = score_masks(outputs[pixels.name], pixels, [(f.path, f.local) for f in samples.files])
    evidence.metrics.update(scored.metrics)
    evidence.outputs = outputs[pixels.name]
    evidence.details["outputs_name"] = pixels.name
    evidence.details["segmentation"] = scored.details


def public_version(version: str) -> str:
    """``2.13.0+cpu`` -> ``2.13.0``: a PEP 440 local label (like semver build metadata, in a
    framework artifact's version ``1.31.0+venv1``) names a build, not a release."""
    return version.split("+", 1)[0]


def _classification(outputs: list[Output]) -> dict[str, str]:
    """The declared outputs of ``type: classification`` (the ones accuracy is computed from),
    by their ``predict`` key, each with its metric suffix (``[a-z0-9_]``)."""
    found = {
        str(o.name): _metric_suffix(str(o.name)) for o in outputs if o.type == "classification"
    }
    clashes = sorted(k for k in found if list(found.values()).count(found[k]) > 1)
    if len(found) > 1 and clashes:
        raise UserError(
            f"classification outputs {', '.join(clashes)} give the same metric names "
            f"(top1_{found[clashes[0]]}): rename one"
        )
    return found


def _metric_suffix(name: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")[:80] or "output"


def _outputs(
    m: Measurement, names: list[str]
) -> tuple[list[int], dict[str, npt.NDArray[np.generic]]]:
    """The sample indexes answered, in order, and the named outputs for them (each stacked
    once, for accuracy and for cross-framework parity)."""
    indexes = sorted(m.outputs)
    return indexes, {
        name: np.concatenate([np.asarray(m.outputs[i][name]) for i in indexes]) for name in names
    }


WARMUP_MIN_NS = 500_000_000
"""Warm up for at least half a second: a cold core (frequency, caches) made the first run in
a process up to 1.6x slower than the next ones on the digits model."""
WARMUP_MAX_CALLS = 100_000


def _warm_up(
    predictor: Predictor, batch: npt.NDArray[np.generic], count: int, stop: Stop
) -> tuple[int, list[int], list[int]]:
    """Untimed predictions (at least ``count`` and half a second); return the median time of
    the last ``count`` as LoadGen's expected latency, and each call's start and time."""
    starts: list[int] = []
    times: list[int] = []
    start = time.perf_counter_ns()
    while not stop.is_set() and (
        len(times) < max(1, count)
        or (time.perf_counter_ns() - start < WARMUP_MIN_NS and len(times) < WARMUP_MAX_CALLS)
    ):
        t0 = time.perf_counter_ns()
        predictor.predict(batch)
        times.append(time.perf_counter_ns() - t0)
        starts.append(t0)
    stop.check()  # stopped during the warm-up
    return int(np.median(times[-max(1, count) :])), starts, times
