"""A training run inside the evaluator (Deep500's level 2): the lockfile's model trained on its
dataset to a target on its validation split, by ``pinbench.training.run``.

Runs in the same worker as a model evaluation (``measure``), so every runner trains in the
environment the lockfile pins; both splits go through the model's declared input pipeline
(the same preprocessing an evaluation of the model uses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.names import Kind

if TYPE_CHECKING:
    from pinbench.registry.lockfile import LockedArtifact, LockedDataset
    from pinbench.training.data import TrainData, TrainModel
    from pinbench.worker.job import Evidence, Job

Say = Callable[[str], None]


class TargetNotReached(UserError):
    """A target accuracy not reached within the epoch cap: a failed run, never a time."""

    def __init__(self, *, message: str) -> None:
        super().__init__(message)


def train_run(job: Job, evidence: Evidence, say: Say) -> None:
    """Train, and fill ``evidence``: per-epoch training times as the run's latencies, the
    metrics and curves, the final weights' bytes. A target not reached fails the run after
    everything is recorded."""
    from pinbench.training.data import TrainData, TrainModel
    from pinbench.training.run import train

    body = job.lock.body
    spec, env, model = body.training, body.environment, body.model
    assert spec is not None and env is not None and model is not None
    assert body.dataset is not None and body.validation is not None
    _check_ranking(model.outputs, framework=env.framework)
    x_train, y_train = _split(job, body.dataset, job.data_paths, "training split", say)
    x_val, y_val = _split(job, body.validation, job.validation_paths, "validation split", say)
    job.stop.check()
    start = TrainModel(format=model.format, architecture=model.architecture, paths=job.model_paths)
    data = TrainData(x_train=x_train, y_train=y_train, x_val=x_val, y_val=y_val)
    distributed = body.request.distributed
    if job.ranks is not None and distributed is not None and not job.ranks.leads:
        from pinbench.training.distributed.launch import train_ranks

        # another system's rank 0 records the run: this one trains its share and says so
        epochs = train_ranks(
            spec,
            distributed,
            start,
            data,
            job.ranks,
            threads=body.threads,
            check=job.stop.check,
            say=say,
            wait_s=body.limits.timeout_s,  # a peer's agent may still be fetching its blobs
        )
        evidence.details["ranks"] = {"first": job.ranks.first, "count": job.ranks.count}
        evidence.latencies = np.asarray([round(t * 1e9) for t in epochs], np.int64)
        return
    if spec.transform is not None:
        _validate_transform(job, evidence, say, start, data)
    if distributed is None:
        result = train(
            spec, env.framework, start, data, threads=body.threads, check=job.stop.check, say=say
        )
    else:
        from pinbench.training.distributed.launch import train_distributed

        result, record = train_distributed(
            spec,
            distributed,
            start,
            data,
            threads=body.threads,
            check=job.stop.check,
            say=say,
            placement=job.ranks,
            wait_s=None if job.ranks is None else body.limits.timeout_s,
        )
        evidence.details["distributed"] = msgspec.to_builtins(record)
        evidence.metrics.update(record.metrics())
    evidence.latencies = np.asarray([round(e.train_s * 1e9) for e in result.epochs], np.int64)
    evidence.details["training"] = result.details()
    evidence.details.update(threads=body.threads)
    evidence.metrics = {**result.metrics(), **evidence.metrics}
    evidence.weights = result.weights
    unmet = result.unmet_target()
    if unmet is not None:
        raise TargetNotReached(message=unmet)


def _validate_transform(
    job: Job, evidence: Evidence, say: Say, start: TrainModel, data: TrainData
) -> None:
    """Level 1: the training spec's transformation against the untransformed training,
    before the training run takes it (``details["transform"]``; invalid: a failed run)."""
    from pinbench.transforms.microbatch import validate_training
    from pinbench.worker.transformrun import keep

    spec, env = job.lock.body.training, job.lock.body.environment
    assert spec is not None and spec.transform is not None and env is not None
    keep(validate_training(spec, env.framework, start, data), evidence, say)


def _check_ranking(outputs: list[Any], *, framework: str) -> None:
    """Training minimises cross-entropy over the model's scores as logits and validates top-1
    by the highest: a classification output declaring the lowest score first (``argsort:
    {descending: false}``) would be trained and judged against its declaration. Refused
    before any data is read (decision 170)."""
    from pinbench.training.errors import InvalidModel

    for out in outputs:
        if out.type == "classification" and any(
            s.argsort is not None and not s.argsort.descending for s in out.steps
        ):
            raise InvalidModel(
                framework=framework,
                reason=f"output {out.name!r} declares `argsort: {{descending: false}}` (its "
                "lowest score is its answer), but training minimises cross-entropy over the "
                "scores as logits and validates top-1 by the highest score",
            )


def _split(
    job: Job, dataset: LockedDataset, paths: dict[str, Any], what: str, say: Say
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """The split's samples through the model's one input pipeline, and their labels."""
    from pinbench.worker.datasets import DatasetError, load_samples
    from pinbench.worker.feed import prepare

    body = job.lock.body
    assert body.model is not None
    ref = f"{dataset.name}@{dataset.version}"
    if len(body.model.inputs) != 1:
        raise UserError(
            f"training takes a model with one input; {body.model.name} declares "
            f"{len(body.model.inputs)}"
        )
    samples = load_samples(dataset, _artifact(job, Kind.DATASET, dataset.name), paths)
    if samples.labels is None:
        raise DatasetError(dataset=ref, reason=f"the {what} needs class labels")
    say(f"preprocessing the {what} {ref} ({len(samples)} samples)")
    model_art = _artifact(job, Kind.MODEL, body.model.name)
    feed = prepare(
        list(body.model.inputs),
        samples,
        cache=job.cache,
        dataset_digest=dataset.manifest_digest,
        model_files=job.model_paths,
        model_sha256={f.path: f.sha256 for f in model_art.files},
        say=say,
        stop=job.stop,
        seal=job.seal,
    )
    x = np.ascontiguousarray(np.asarray(feed.inputs), dtype=np.float32)
    return x, np.asarray(samples.labels, dtype=np.int64)


def _artifact(job: Job, kind: Kind, name: str) -> LockedArtifact:
    for art in job.lock.body.artifacts:
        if art.kind == kind.value and art.name == name:
            return art
    raise UserError(f"the lockfile pins no {kind.value} {name}")
