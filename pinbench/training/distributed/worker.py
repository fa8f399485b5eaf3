"""One worker (rank) of a distributed training run, in its own process.

Every rank builds the model from the same seed (the same initial weights) and draws the same
permutation of the training indexes from ``numpy.random.default_rng(seed)`` each epoch; the
permutation is cut into global batches of ``workers`` x ``batch_size`` samples, and rank r
trains on part r of ``numpy.array_split(global_batch, workers)``: its shard is fixed by the
seed and its rank. A last global batch smaller than ``workers`` is skipped (a worker would
have no sample); with one worker the loop is ``run.train``'s, sample for sample.

After an epoch's steps (timed: ``train_s``) rank 0 evaluates on the validation split and
broadcasts whether training stops (the target reached or the cap); both untimed. Each rank
reports its records through ``queue`` as plain tuples: ``("epoch", rank, EpochShard)``,
``("done", rank, RankSummary)``, rank 0's ``("weights", 0, bytes)``, or
``("error", rank, exception)``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import timedelta
from time import perf_counter
from typing import Any

import numpy as np

from pinbench.specs.distributed import DistributedSpec
from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainData, TrainModel
from pinbench.training.errors import TrainingDiverged

CONNECT_TIMEOUT = timedelta(seconds=120)
"""How long a collective waits for the other ranks before it fails."""


@dataclass(frozen=True, slots=True)
class RankJob:
    """What every rank is handed (pickled by ``multiprocessing`` to the rank's process)."""

    spec: TrainingSpec
    distributed: DistributedSpec
    model: TrainModel
    data: TrainData
    port: int
    threads: int | None


@dataclass(frozen=True, slots=True)
class EpochShard:
    """One rank's epoch: ``loss_sum`` the summed training loss of its ``samples``, its
    ``steps`` timed in ``train_s``; rank 0 adds the validation loss and top-1 (else None)."""

    epoch: int
    samples: int
    steps: int
    loss_sum: float
    train_s: float
    val_loss: float | None
    val_top1: float | None
    eval_s: float


@dataclass(frozen=True, slots=True)
class RankSummary:
    """One rank's totals: steps, payload bytes handed to collectives, parameter bytes."""

    steps: int
    sent_bytes: int
    parameter_bytes: int


def run_rank(rank: int, job: RankJob, queue: Any) -> None:
    """The process target: train as ``rank``, report to ``queue``, then end the process
    without tearing anything down (``os._exit`` once the reports are flushed): destroying
    DDP's reducer drops the last reference to the gloo process group, whose destructor joins
    gloo's run loop thread while holding the GIL that thread waits for (a deadlock seen here
    once in a few dozen DDP runs). ``kept`` holds the scheme (and through it DDP) until then,
    also when training raised. Every collective of the run has completed by then."""
    _end_with_launcher()
    kept: list[Any] = []
    try:
        _train(rank, job, queue, kept)
    except BaseException as exc:  # reported to the launcher, which ends the other ranks
        queue.put(("error", rank, _picklable(exc)))
    finally:
        queue.close()
        queue.join_thread()
        os._exit(0)


def _end_with_launcher() -> None:
    """End this rank when its launcher's end of their pipe closes (the launcher killed, none of
    its ``finally`` run): a rank waiting in a collective for a peer that ended with it would
    wait ``CONNECT_TIMEOUT``, and a rank forked from the fork server, not the launcher's child,
    would keep that server running too."""
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="pinbench-launcher-watch", daemon=True).start()


def _train(rank: int, job: RankJob, queue: Any, kept: list[Any]) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    from pinbench.training.distributed.schemes import parameter_bytes, scheme_for
    from pinbench.training.frameworks.torch import build, optimizer, weights_bytes

    spec, workers = job.spec, job.distributed.workers
    torch.set_num_threads(1 if spec.deterministic or job.threads is None else job.threads)
    if spec.deterministic:
        torch.use_deterministic_algorithms(True)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # 127.0.0.1 only
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{job.port}",
        rank=rank,
        world_size=workers,
        timeout=CONNECT_TIMEOUT,
    )
    torch.manual_seed(spec.seed)
    module, architecture = build(spec, job.model)
    scheme = scheme_for(job.distributed, module, rank=rank)
    kept.append(scheme)  # never destroyed in this process (run_rank)
    opt = optimizer(spec, module.parameters())
    forward = scheme.forward_module
    x, y = job.data.x_train, job.data.y_train
    order = np.random.default_rng(spec.seed)
    span, steps = workers * spec.batch_size, 0
    for epoch in range(1, spec.epochs + 1):
        permutation = order.permutation(len(x))
        samples, epoch_steps, loss_sum = 0, 0, 0.0
        start = perf_counter()
        for begin in range(0, len(x), span):
            batch = permutation[begin : begin + span]
            if len(batch) < workers:
                break
            idx = np.array_split(batch, workers)[rank]
            opt.zero_grad()
            loss = F.cross_entropy(forward(_tensor(x[idx])), _tensor(y[idx]))
            loss.backward()  # type: ignore[no-untyped-call]
            scheme.after_backward(opt)
            value = float(loss.item())
            epoch_steps += 1
            if not math.isfinite(value):
                raise TrainingDiverged(
                    epoch=epoch, step=epoch_steps, value=value, learning_rate=spec.learning_rate
                )
            loss_sum += value * len(idx)
            samples += len(idx)
        scheme.end_epoch()
        train_s = perf_counter() - start
        steps += epoch_steps
        val: tuple[float | None, float | None] = (None, None)
        start = perf_counter()
        if rank == 0:
            val = _evaluate(module, job.data, spec.batch_size)
        eval_s = perf_counter() - start
        target = spec.target_top1
        stop = torch.tensor([int(val[1] is not None and target is not None and val[1] >= target)])
        dist.broadcast(stop, src=0)
        shard = EpochShard(epoch, samples, epoch_steps, loss_sum, train_s, *val, eval_s)
        queue.put(("epoch", rank, shard))
        if int(stop.item()):
            break
    if rank == 0:
        queue.put(("weights", 0, weights_bytes(module, architecture)))
    queue.put(("done", rank, RankSummary(steps, scheme.sent, parameter_bytes(module))))


def _evaluate(module: Any, data: TrainData, size: int) -> tuple[float, float]:
    """Mean cross-entropy and top-1 over the validation split, as ``run._evaluate``."""
    import torch
    import torch.nn.functional as F

    loss, correct = 0.0, 0
    module.eval()
    try:
        with torch.no_grad():
            for begin in range(0, len(data.x_val), size):
                logits = module(_tensor(data.x_val[begin : begin + size]))
                labels = _tensor(data.y_val[begin : begin + size])
                loss += float(F.cross_entropy(logits, labels, reduction="sum").item())
                correct += int((logits.argmax(1) == labels).sum().item())
    finally:
        module.train()
    return loss / len(data.x_val), correct / len(data.x_val)


def _tensor(a: Any) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(a))


def _picklable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles (pinbench's errors carry plain data), else a ``RuntimeError``
    with its type and message."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
