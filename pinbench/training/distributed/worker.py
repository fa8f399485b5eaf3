"""One worker (rank) of a distributed training run, in its own process.

Every rank builds the model from the same seed (the same initial weights) and draws the same
permutation of the training indexes from ``numpy.random.default_rng(seed)`` each epoch; the
permutation is cut into global batches of ``workers`` x ``batch_size`` samples, and rank r
trains on part r of ``numpy.array_split(global_batch, workers)``: its shard is fixed by the
seed and its rank. A last global batch smaller than ``workers`` is skipped (a worker would
have no sample); with one worker the loop is ``run.train``'s, sample for sample.

After an epoch's steps (timed: ``train_s``) rank 0 evaluates on the validation split and
broadcasts whether training stops (the target reached or the cap), and every rank's epoch
figures are gathered to rank 0 as float64 tensors (never pickles: a rank may be another
system's); all untimed. Rank 0 reports every rank's records through its ``queue`` as plain
tuples: ``("epoch", r, EpochShard)`` and ``("done", r, RankSummary)`` for each rank r, then
``("weights", 0, bytes)``; every rank reports its own epochs' training times
(``("own", rank, seconds)``: what a system without rank 0 records) and ends with
``("finished", rank, None)`` or ``("error", rank, exception)`` to its own launcher.
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
    """What every rank is handed (pickled by ``multiprocessing`` to the rank's process): rank
    0's store at ``address``:``port``, reached through ``interface`` (gloo's), waiting up to
    ``wait_s`` for its peers."""

    spec: TrainingSpec
    distributed: DistributedSpec
    model: TrainModel
    data: TrainData
    port: int
    threads: int | None
    address: str = "127.0.0.1"
    interface: str = "lo"
    wait_s: float = CONNECT_TIMEOUT.total_seconds()
    """How long a collective waits for the other ranks (the rendezvous too) before it fails."""


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
    """One rank's totals: steps, payload bytes handed to collectives, parameter bytes, and
    the seconds its training steps spent inside the scheme's collectives (None: ``ddp``,
    whose all-reduces overlap its backward pass)."""

    steps: int
    sent_bytes: int
    parameter_bytes: int
    collective_s: float | None


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
        queue.put(("finished", rank, None))
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

    from pinbench.training.distributed.figures import check_epoch, check_totals, shares
    from pinbench.training.distributed.schemes import parameter_bytes, scheme_for
    from pinbench.training.frameworks.torch import build, optimizer, weights_bytes

    spec, workers = job.spec, job.distributed.workers
    torch.set_num_threads(1 if spec.deterministic or job.threads is None else job.threads)
    if spec.deterministic:
        torch.use_deterministic_algorithms(True)
    os.environ["GLOO_SOCKET_IFNAME"] = job.interface
    host = f"[{job.address}]" if ":" in job.address else job.address
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://{host}:{job.port}",
        rank=rank,
        world_size=workers,
        timeout=timedelta(seconds=job.wait_s),
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
    expected, trained = shares(len(x), workers, spec.batch_size), [0.0] * workers
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
        queue.put(("own", rank, train_s))  # its own launcher's word (rank 0's is the run's)
        rows = _gather([samples, epoch_steps, loss_sum, train_s, eval_s], workers)
        trained = [t + row[3] for t, row in zip(trained, rows, strict=True)]
        if rank == 0:
            check_epoch(rows, expected)
            for r, (n, k, total, t, e) in enumerate(rows):
                shard = EpochShard(
                    epoch, int(n), int(k), total, t, *(val if r == 0 else (None, None)), e
                )
                queue.put(("epoch", r, shard))
        if int(stop.item()):
            break
    waited = -1.0 if scheme.collective_s is None else scheme.collective_s
    totals = _gather([steps, scheme.sent, parameter_bytes(module), waited], workers)
    if rank == 0:
        check_totals(totals, trained)
        for r, (k, sent, size, w) in enumerate(totals):
            queue.put(("done", r, RankSummary(int(k), int(sent), int(size), None if w < 0 else w)))
        queue.put(("weights", 0, weights_bytes(module, architecture)))


def _gather(values: list[float], workers: int) -> list[list[float]]:
    """Every rank's ``values`` (float64: counts exact below 2^53), in rank order."""
    import torch
    import torch.distributed as dist

    mine = torch.tensor(values, dtype=torch.float64)
    every = [torch.zeros_like(mine) for _ in range(workers)]
    dist.all_gather(every, mine)
    return [[float(v) for v in t.tolist()] for t in every]


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
