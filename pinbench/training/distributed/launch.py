"""``train_distributed``: one training spec run by ``workers`` processes on 127.0.0.1, each a
rank of one gloo process group (``worker.run_rank``), their records assembled into the
``TrainingResult`` a single-process run returns and a ``DistributedRecord``. Where a
``placement`` spreads the ranks over systems (decision 317), each system starts its own share:
the one with rank 0 through ``train_distributed`` (it records the run), the others through
``train_ranks``; they meet at rank 0's address, each rank listening on the interface that
reaches it.

Processes are started by ``multiprocessing``'s fork server (``START_METHOD``): a fresh
interpreter, started by the process that launches trainings at its first (``server``: again
when what a rank inherits from it changed), imports PyTorch and the rank's code (``PRELOAD``)
without running an operation, and forks each rank from there. A rank is thus
a clean process as spawn's are (PyTorch's threads, which do not survive a fork, start at a
rank's first operation), without importing PyTorch again: 2.7 s of CPU per rank that spawn
paid (docs/benchmarks.md §15g, ``bench/bench_rank_start.py``). Ranks on one machine talk
through ``tcp://127.0.0.1:PORT`` on a free port; rank 0 reports every rank's figures (gathered
as tensors) through one queue. The first rank to
fail ends the others, and its error (pinbench's errors pickle with their data) is raised
here; so is ``check``'s, polled while they train.

An epoch's ``train_s`` is the slowest rank's (the run advances at its pace), its
``samples_per_s`` every rank's samples over that time; ``throughput_sps_per_worker`` is each
rank's own samples over its own training time.
"""

from __future__ import annotations

import hashlib
import queue as queues
import socket
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import msgspec

from pinbench.errors import UserError
from pinbench.specs.distributed import DistributedSpec, check_workers_here
from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainData, TrainModel, check_arrays
from pinbench.training.distributed.placement import (
    BadPlacement,
    RankPlacement,
    interface_toward,
)
from pinbench.training.distributed.server import rank_context
from pinbench.training.distributed.worker import EpochShard, RankJob, RankSummary, run_rank
from pinbench.training.errors import InvalidThreads
from pinbench.training.result import EpochRecord, TrainingResult

POLL_S = 0.2


def start_method(version: tuple[int, ...]) -> str:
    """``forkserver`` from CPython 3.11.1 to 3.13, ``spawn`` elsewhere: 3.11.0's fork server
    listened on a Linux abstract socket that any local user could connect to and have it run
    a pickle as this user (CVE-2022-42919, fixed in 3.11.1 by a socket file in a private
    folder), and ``server`` starts the server with the standard library's private parts as
    they are up to 3.13 (3.14 added an authentication key to it)."""
    return "forkserver" if (3, 11, 1) <= tuple(version[:3]) < (3, 14) else "spawn"


START_METHOD = start_method(sys.version_info[:3])
"""``multiprocessing``'s start method for ranks; ``spawn`` works the same, slower."""
PRELOAD = (
    "torch",
    "torch.distributed",
    "torch.nn.functional",
    "pinbench.training.distributed.schemes",
    "pinbench.training.distributed.worker",
    "pinbench.training.frameworks.torch",
)
"""What the fork server imports before it forks a rank (the launcher's ``__main__`` is not
preloaded; each rank still prepares it, as under spawn). ``server.rank_context`` starts the
server with the launcher's ``sys.path`` and again when what a rank inherits from it changed;
a rank sets its threads and determinism itself (``worker._train``)."""


class WorkerFailed(UserError):
    """A rank ended without reporting (killed, out of memory) or with an error that did not
    pickle."""

    def __init__(self, *, rank: int, reason: str) -> None:
        super().__init__(f"distributed training: worker {rank} failed: {reason}")
        self.rank = rank
        self.reason = reason


class DistributedRecord(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """What a distributed run adds to a training run's record (``details["distributed"]``).

    ``steps`` per worker over the run; ``bytes_per_step`` the payload bytes one worker hands
    to collectives per step (``schemes``' accounting), ``parameter_bytes`` P;
    ``throughput_sps_per_worker`` each rank's samples per second of its training time;
    ``step_time_s`` the run's training time over its steps; ``collective_s_per_worker`` each
    rank's seconds inside the scheme's collectives and ``collective_share`` their sum over
    the ranks' training time (the network's share of a step with the waits it brings; None
    for ``ddp``: ``schemes``); ``systems`` the cluster systems the ranks were spread over,
    rank 0's first (empty: every rank on one machine)."""

    scheme: str
    workers: int
    average_every: int | None
    batch_size_per_worker: int
    global_batch_size: int
    steps: int
    parameter_bytes: int
    bytes_per_step: float
    bytes_total: int
    throughput_sps_per_worker: list[float]
    step_time_s: float
    collective_s_per_worker: list[float] | None = None
    collective_share: float | None = None
    systems: list[str] = msgspec.field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        per_worker = self.throughput_sps_per_worker
        figures = {
            "workers": float(self.workers),
            "bytes_per_step": self.bytes_per_step,
            "throughput_sps_per_worker": sum(per_worker) / len(per_worker),
            "step_time_s": self.step_time_s,
        }
        if self.collective_share is not None:
            figures["collective_share"] = self.collective_share
        return figures


def train_distributed(
    spec: TrainingSpec,
    distributed: DistributedSpec,
    model: TrainModel,
    data: TrainData,
    *,
    threads: int | None = None,
    check: Callable[[], None] = lambda: None,
    say: Callable[[str], None] = print,
    placement: RankPlacement | None = None,
    wait_s: float | None = None,
) -> tuple[TrainingResult, DistributedRecord]:
    """Train as ``run.train`` does, with ``distributed.workers`` ranks on this machine, or
    its share of them where ``placement`` spreads them over systems and this one leads (rank
    0: ``train_ranks`` starts the others' share), its ranks waiting up to ``wait_s`` for
    their peers (``worker.CONNECT_TIMEOUT`` when None). Raises ``TooManyWorkers`` and the
    data/thread errors before any process starts, ``TrainingDiverged`` or ``WorkerFailed``
    from a rank."""
    from pinbench.training.frameworks.torch import version

    job = _job(spec, distributed, model, data, threads, placement, wait_s)
    if placement is not None and not placement.leads:
        raise BadPlacement(reason=f"rank 0 is not on this system (ranks {placement.first}..)")
    shards, summaries, weights, _ = _run(job, _local(distributed, placement), check, say)
    epochs = _epochs(shards, distributed.workers)
    reached = next(
        (e.epoch for e in epochs if spec.target_top1 and e.val_top1 >= spec.target_top1), None
    )
    top1 = [e.val_top1 for e in epochs]
    train_s = sum(e.train_s for e in epochs)
    result = TrainingResult(
        framework="torch",
        framework_version=version(),
        epochs=epochs,
        target_top1=spec.target_top1,
        reached_epoch=reached,
        time_to_accuracy_s=None if reached is None else sum(e.train_s for e in epochs[:reached]),
        train_time_s=train_s,
        eval_time_s=sum(e.eval_s for e in epochs),
        final_top1=top1[-1],
        best_top1=max(top1),
        deterministic=spec.deterministic,
        weights=weights,
        weights_format="safetensors",
        weights_sha256=hashlib.sha256(weights).hexdigest(),
    )
    return result, _record(distributed, spec.batch_size, shards, summaries, placement)


def train_ranks(
    spec: TrainingSpec,
    distributed: DistributedSpec,
    model: TrainModel,
    data: TrainData,
    placement: RankPlacement,
    *,
    threads: int | None = None,
    check: Callable[[], None] = lambda: None,
    say: Callable[[str], None] = print,
    wait_s: float | None = None,
) -> list[float]:
    """Start this system's share of a run whose rank 0 is another system's
    (``placement``), and return when they have trained: each epoch's training time of its
    slowest rank here (the run's records are rank 0's)."""
    job = _job(spec, distributed, model, data, threads, placement, wait_s)
    if placement.leads:
        raise BadPlacement(reason="rank 0 is on this system: it trains with train_distributed")
    say(
        f"ranks {placement.first}..{placement.first + placement.count - 1} of "
        f"{distributed.workers}, meeting rank 0 on {placement.systems[0]} at {placement.address}"
    )
    *_, own = _run(job, _local(distributed, placement), check, say)
    return [max(times) for times in zip(*own.values(), strict=True)]


def _job(
    spec: TrainingSpec,
    distributed: DistributedSpec,
    model: TrainModel,
    data: TrainData,
    threads: int | None,
    placement: RankPlacement | None,
    wait_s: float | None,
) -> RankJob:
    """The job every local rank is handed, once what it holds is checked."""
    if placement is not None:
        placement.check(distributed)
    check_workers_here(distributed, spread=placement is not None)
    if threads is not None and (threads < 1 or (spec.deterministic and threads != 1)):
        reason = "must be >= 1" if threads < 1 else "a deterministic run uses one thread"
        raise InvalidThreads(threads=threads, reason=reason)
    check_arrays(data)
    if placement is None:
        job = RankJob(spec, distributed, model, data, _free_port(), threads)
    else:
        job = RankJob(spec, distributed, model, data, placement.port, threads, placement.address)
        job = replace(job, interface=interface_toward(placement.address))
    return job if wait_s is None else replace(job, wait_s=wait_s)


def _local(distributed: DistributedSpec, placement: RankPlacement | None) -> range:
    if placement is None:
        return range(distributed.workers)
    return range(placement.first, placement.first + placement.count)


def _record(
    distributed: DistributedSpec,
    batch_size: int,
    shards: list[list[EpochShard]],
    summaries: list[RankSummary],
    placement: RankPlacement | None,
) -> DistributedRecord:
    steps = summaries[0].steps
    sent = [s.sent_bytes for s in summaries]
    train_s = [sum(s.train_s for s in shards[r]) for r in range(distributed.workers)]
    waited = [s.collective_s for s in summaries]
    known = [w for w in waited if w is not None]
    share = None
    if len(known) == len(waited) and sum(train_s) > 0:
        share = sum(known) / sum(train_s)
    total = sum(e.train_s for e in _epochs(shards, distributed.workers))
    return DistributedRecord(
        scheme=distributed.scheme,
        workers=distributed.workers,
        average_every=distributed.average_every,
        batch_size_per_worker=batch_size,
        global_batch_size=batch_size * distributed.workers,
        steps=steps,
        parameter_bytes=summaries[0].parameter_bytes,
        bytes_per_step=sum(sent) / len(sent) / max(steps, 1),
        bytes_total=sum(sent),
        throughput_sps_per_worker=[
            sum(s.samples for s in shards[r]) / max(train_s[r], 1e-12)
            for r in range(distributed.workers)
        ],
        step_time_s=total / max(steps, 1),
        collective_s_per_worker=None if share is None else known,
        collective_share=share,
        systems=[] if placement is None else list(placement.systems),
    )


def _run(
    job: RankJob, local: range, check: Callable[[], None], say: Callable[[str], None]
) -> tuple[list[list[EpochShard]], list[RankSummary], bytes, dict[int, list[float]]]:
    """Start the ``local`` ranks and wait until each has finished; what rank 0 reported of
    every rank (nothing where rank 0 is another system's), and each local rank's own epochs'
    training times."""
    workers = job.distributed.workers
    processes: dict[int, Any] = {}
    reports: Any = None
    shards: list[list[EpochShard]] = [[] for _ in range(workers)]
    summaries: dict[int, RankSummary] = {}
    weights = b""
    finished: set[int] = set()
    own: dict[int, list[float]] = {rank: [] for rank in local}
    try:
        with rank_context(START_METHOD, PRELOAD) as context:
            reports = context.Queue()
            for rank in local:
                process = context.Process(
                    target=run_rank, args=(rank, job, reports), name=f"pinbench-rank-{rank}"
                )
                processes[rank] = process
                process.start()
        while len(finished) < len(local):
            check()
            try:
                kind, rank, payload = reports.get(timeout=POLL_S)
            except queues.Empty:
                _check_alive(processes, finished)
                continue
            if kind == "error":
                raise payload
            if kind == "epoch":
                shards[rank].append(payload)
                _progress(shards, payload.epoch, job.spec.epochs, say)
            elif kind == "weights":
                weights = payload
            elif kind == "done":
                summaries[rank] = payload
            elif kind == "own":
                own[rank].append(payload)
            else:
                finished.add(rank)
        for process in processes.values():
            process.join(timeout=30)
    finally:
        for process in processes.values():
            if process.is_alive():
                process.terminate()
                process.join(timeout=10)
        if reports is not None:
            reports.close()
    if 0 in local and (len(summaries) < workers or not weights):
        raise WorkerFailed(rank=0, reason="finished without reporting every rank's records")
    return shards, [summaries[r] for r in sorted(summaries)], weights, own


def _check_alive(processes: dict[int, Any], finished: set[int]) -> None:
    for rank, process in processes.items():
        if process.exitcode is not None and rank not in finished:
            raise WorkerFailed(rank=rank, reason=f"exited with code {process.exitcode}")


def _progress(
    shards: list[list[EpochShard]], epoch: int, cap: int, say: Callable[[str], None]
) -> None:
    """One line per epoch, once every rank has reported it."""
    if any(len(s) < epoch for s in shards):
        return
    record = _epochs([s[:epoch] for s in shards], len(shards))[-1]
    say(
        f"epoch {epoch}/{cap}: train loss {record.train_loss:.4f}, val loss "
        f"{record.val_loss:.4f}, top-1 {record.val_top1:.4f}, {record.samples_per_s:,.0f} "
        f"samples/s over {len(shards)} workers (train {record.train_s:.2f} s, eval "
        f"{record.eval_s:.2f} s)"
    )


def _epochs(shards: list[list[EpochShard]], workers: int) -> list[EpochRecord]:
    out = []
    for epoch, ranks in enumerate(zip(*shards, strict=True), start=1):
        first = ranks[0]
        assert first.val_loss is not None and first.val_top1 is not None  # rank 0 evaluates
        samples = sum(r.samples for r in ranks)
        if samples == 0:  # a loss over no samples is undefined, never a 0.0
            raise WorkerFailed(
                rank=0, reason=f"epoch {epoch} trained no samples (fewer samples than workers)"
            )
        train_s = max(r.train_s for r in ranks)
        out.append(
            EpochRecord(
                epoch=epoch,
                train_loss=sum(r.loss_sum for r in ranks) / samples,
                train_s=train_s,
                samples_per_s=samples / train_s if train_s > 0 else 0.0,
                val_loss=first.val_loss,
                val_top1=first.val_top1,
                eval_s=first.eval_s,
            )
        )
    assert len(out) and workers == len(shards)
    return out


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
