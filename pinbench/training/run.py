"""``train``: one training spec on one framework, timed per epoch, to a quality target.

The loop is the same for every framework (the framework modules only step, evaluate and
save): each epoch draws a permutation of the training indexes from one
``numpy.random.default_rng(seed)``, so the data order is identical in PyTorch and TensorFlow;
mini-batches of ``batch_size`` in that order (the last partial batch kept); cross-entropy on
the logits. ``train_s`` is the wall time (``perf_counter``) of an epoch's training steps;
evaluation on the validation split follows, timed apart (``eval_s``), and is excluded from
the time to accuracy (MLPerf Training's definition).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from time import perf_counter
from typing import Literal

import numpy as np

from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainData, TrainModel, check_arrays, check_labels
from pinbench.training.errors import InvalidThreads, TrainingDiverged
from pinbench.training.frameworks import Trainer, load
from pinbench.training.result import EpochRecord, TrainingResult


def train(
    spec: TrainingSpec,
    framework: str,
    model: TrainModel,
    data: TrainData,
    *,
    threads: int | None = None,
    check: Callable[[], None] = lambda: None,
    say: Callable[[str], None] = print,
) -> TrainingResult:
    """Train ``model`` on ``data`` with ``framework`` until ``spec.target_top1`` is reached on
    the validation split or ``spec.epochs`` have run.

    ``threads``: intra-op threads of a non-deterministic run (None: the framework's default;
    a deterministic run uses one). ``check`` is called before every step and raises to stop
    (cancel, timeout); ``say`` gets one progress line per epoch. Raises ``UnknownFramework``,
    ``InvalidModel``, ``InvalidData``, ``InvalidThreads``, ``ThreadsFixed`` before any step,
    and ``TrainingDiverged`` when a loss becomes NaN or infinite. A target not reached is
    not an error here: the result says so (``reached_epoch`` None, ``unmet_target()``)."""
    module = load(framework)
    if threads is not None and (threads < 1 or (spec.deterministic and threads != 1)):
        reason = "must be >= 1" if threads < 1 else "a deterministic run uses one thread"
        raise InvalidThreads(threads=threads, reason=reason)
    check_arrays(data)
    with module.session(spec, model, threads=threads) as trainer:
        check_labels(data, trainer.bind(data.x_val[:1]))
        epochs = _loop(spec, trainer, data, check, say)
        weights = trainer.weights()
    reached = next(
        (e.epoch for e in epochs if spec.target_top1 and e.val_top1 >= spec.target_top1), None
    )
    top1 = [e.val_top1 for e in epochs]
    fmt: Literal["safetensors", "keras"] = (
        "keras" if module.WEIGHTS_FORMAT == "keras" else "safetensors"
    )
    return TrainingResult(
        framework=module.NAME,
        framework_version=module.version(),
        epochs=epochs,
        target_top1=spec.target_top1,
        reached_epoch=reached,
        time_to_accuracy_s=None if reached is None else sum(e.train_s for e in epochs[:reached]),
        train_time_s=sum(e.train_s for e in epochs),
        eval_time_s=sum(e.eval_s for e in epochs),
        final_top1=top1[-1],
        best_top1=max(top1),
        deterministic=spec.deterministic,
        weights=weights,
        weights_format=fmt,
        weights_sha256=hashlib.sha256(weights).hexdigest(),
    )


def _loop(
    spec: TrainingSpec,
    trainer: Trainer,
    data: TrainData,
    check: Callable[[], None],
    say: Callable[[str], None],
) -> list[EpochRecord]:
    order = np.random.default_rng(spec.seed)
    x, y, size = data.x_train, data.y_train, spec.batch_size
    count = len(x)
    records: list[EpochRecord] = []
    for epoch in range(1, spec.epochs + 1):
        permutation = order.permutation(count)
        total = 0.0
        start = perf_counter()
        for step, begin in enumerate(range(0, count, size), start=1):
            check()
            idx = permutation[begin : begin + size]
            loss = trainer.step(x[idx], y[idx])
            if not math.isfinite(loss):
                raise TrainingDiverged(
                    epoch=epoch, step=step, value=loss, learning_rate=spec.learning_rate
                )
            total += loss * len(idx)
        train_s = perf_counter() - start
        start = perf_counter()
        val_loss, val_top1 = _evaluate(trainer, data, size)
        eval_s = perf_counter() - start
        if not math.isfinite(val_loss):
            raise TrainingDiverged(
                epoch=epoch, step=None, value=val_loss, learning_rate=spec.learning_rate
            )
        record = EpochRecord(
            epoch=epoch,
            train_loss=total / count,
            train_s=train_s,
            samples_per_s=count / train_s if train_s > 0 else 0.0,
            val_loss=val_loss,
            val_top1=val_top1,
            eval_s=eval_s,
        )
        records.append(record)
        say(
            f"epoch {epoch}/{spec.epochs}: train loss {record.train_loss:.4f}, "
            f"val loss {val_loss:.4f}, top-1 {val_top1:.4f}, "
            f"{record.samples_per_s:,.0f} samples/s (train {train_s:.2f} s, eval {eval_s:.2f} s)"
        )
        if spec.target_top1 is not None and val_top1 >= spec.target_top1:
            break
    return records


def _evaluate(trainer: Trainer, data: TrainData, size: int) -> tuple[float, float]:
    """Mean cross-entropy and top-1 over the validation split, in batches of ``size``."""
    x, y = data.x_val, data.y_val
    loss, correct = 0.0, 0
    for begin in range(0, len(x), size):
        batch_loss, batch_correct = trainer.evaluate(
            x[begin : begin + size], y[begin : begin + size]
        )
        loss += batch_loss
        correct += batch_correct
    return loss / len(x), correct / len(x)
