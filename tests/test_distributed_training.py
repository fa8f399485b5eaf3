"""Distributed training (Deep500's level 3, issue 39): ranks as processes on 127.0.0.1 over
gloo, each scheme checked against single-process training and against DDP.

Tolerances: with one worker every scheme is single-process training step for step (a
collective over one rank is the identity, a division by one exact), so the digest is equal.
With two workers allreduce and DDP sum the same two halved gradients per element (a sum of
two addends does not depend on order, a halving is exact), so their weights are equal too;
the test allows ``ALLREDUCE_VS_DDP_ATOL`` for worker counts where the reduction order would
differ.

The data is given canonical strides (``_canonical``): PyTorch picks its convolution path by
the batch tensor's strides, and ``digits_data``'s ``[:, None]`` view has a channels-last-like
stride on its one channel, which a worker's pickled copy loses (a single-process run on such
a view differs from one on a copy by about 1e-6).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.errors import InvalidDocument
from pinbench.registry.request import parse_request
from pinbench.specs.distributed import DistributedSpec, TooManyWorkers, available_here
from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainData, TrainModel
from pinbench.training.distributed.launch import DistributedRecord, start_method, train_distributed
from pinbench.training.errors import TrainingDiverged
from pinbench.training.result import TrainingResult
from pinbench.training.run import train
from tests.helpers import need_two_cores
from tests.test_training import DIVERGE_SCALE, digits_data, start_model

ALLREDUCE_VS_DDP_ATOL = 1e-5
PARAMETER_BYTES = 24_360
"""The digits CNN's float32 parameters: (16*9+16 + 32*16*9+32 + 128*10+10) * 4."""
TWO = pytest.mark.usefixtures("two_cores")  # with CI=true a failure, never a skip


def _canonical(data: TrainData) -> TrainData:
    return TrainData(*(np.array(a, order="C", copy=True) for a in dataclasses.astuple(data)))


def _spec(**changes: Any) -> TrainingSpec:
    base = {"validation": "sklearn/digits@test", "epochs": 1, "batch_size": 32}
    return TrainingSpec(**{**base, "learning_rate": 0.01, **changes})


def _quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def start(tmp_path_factory: pytest.TempPathFactory) -> TrainModel:
    return start_model("torch", tmp_path_factory.mktemp("start"))


@pytest.fixture(scope="module")
def data() -> TrainData:
    return _canonical(digits_data())


def _run(
    start: TrainModel, data: TrainData, scheme: str, workers: int, **changes: Any
) -> tuple[TrainingResult, DistributedRecord]:
    every = 4 if scheme == "mavg" else None
    distributed = DistributedSpec(scheme=scheme, workers=workers, average_every=every)  # type: ignore[arg-type]
    return train_distributed(_spec(**changes), distributed, start, data, say=_quiet)


@pytest.fixture(scope="module")
def single(start: TrainModel, data: TrainData) -> TrainingResult:
    return train(_spec(), "torch", start, data, say=_quiet)


@pytest.fixture(scope="module")
def two(start: TrainModel, data: TrainData) -> dict[str, tuple[TrainingResult, DistributedRecord]]:
    """One epoch with two workers per scheme, and allreduce once more (a rerun)."""
    need_two_cores()
    runs = {s: _run(start, data, s, 2) for s in ("allreduce", "ddp", "pssgd", "mavg")}
    runs["allreduce_again"] = _run(start, data, "allreduce", 2)
    return runs


# ---------------------------------------------------------------- equivalences


@pytest.mark.parametrize("scheme", ["allreduce", "pssgd", "mavg", "ddp"])
def test_one_worker_is_single_process_training(
    start: TrainModel, data: TrainData, single: TrainingResult, scheme: str
) -> None:
    result, record = _run(start, data, scheme, 1)
    assert result.weights_sha256 == single.weights_sha256
    assert [e.train_loss for e in result.epochs] == [e.train_loss for e in single.epochs]
    assert result.final_top1 == single.final_top1
    assert record.workers == 1 and record.global_batch_size == 32


def _max_difference(a: bytes, b: bytes) -> float:
    from safetensors.numpy import load

    left, right = load(a), load(b)
    assert left.keys() == right.keys()
    return max(float(np.abs(left[k] - right[k]).max()) for k in left)


@TWO
def test_allreduce_and_ddp_give_the_same_weights(two: dict[str, Any]) -> None:
    (allreduce, _), (ddp, _) = two["allreduce"], two["ddp"]
    assert _max_difference(allreduce.weights, ddp.weights) <= ALLREDUCE_VS_DDP_ATOL
    assert allreduce.weights_sha256 == ddp.weights_sha256  # two workers: exactly equal


@TWO
def test_the_parameter_server_computes_what_allreduce_does(two: dict[str, Any]) -> None:
    """The same averaged gradient, one optimizer on rank 0 instead of one per worker."""
    (allreduce, _), (pssgd, _) = two["allreduce"], two["pssgd"]
    assert _max_difference(allreduce.weights, pssgd.weights) <= ALLREDUCE_VS_DDP_ATOL


@TWO
def test_a_rerun_reproduces_the_digest(two: dict[str, Any]) -> None:
    assert two["allreduce"][0].weights_sha256 == two["allreduce_again"][0].weights_sha256


@TWO
def test_two_workers_split_each_global_batch(two: dict[str, Any], single: TrainingResult) -> None:
    """Each worker trains on half of every global batch of 64: half as many steps as one
    worker with batches of 32, every training sample seen once per epoch (1347 samples: 21
    global batches of 64 and one of 3, split 2 + 1)."""
    result, record = two["allreduce"]
    assert record.global_batch_size == 64 and record.batch_size_per_worker == 32
    assert record.steps == 22
    assert len(record.throughput_sps_per_worker) == 2
    assert result.weights_sha256 != single.weights_sha256


# ---------------------------------------------------------------- bytes per step


@TWO
@pytest.mark.parametrize(
    ("scheme", "per_step"),
    [
        ("allreduce", PARAMETER_BYTES),  # one all-reduce of the gradients
        ("ddp", PARAMETER_BYTES),  # DDP's buckets hold every gradient once
        ("pssgd", 2 * PARAMETER_BYTES),  # gradients reduced to rank 0, parameters broadcast
        # an averaging every 4 steps and one at the epoch's end: 6 in 22 steps
        ("mavg", PARAMETER_BYTES * 6 / 22),
    ],
)
def test_bytes_per_step_are_counted_by_the_scheme(
    two: dict[str, Any], scheme: str, per_step: float
) -> None:
    _, record = two[scheme]
    assert record.parameter_bytes == PARAMETER_BYTES
    assert record.bytes_per_step == pytest.approx(per_step)
    assert record.bytes_total == pytest.approx(per_step * record.steps * 2)


# ---------------------------------------------------------------- to the target


@TWO
@pytest.mark.parametrize("scheme", ["allreduce", "pssgd", "mavg", "ddp"])
def test_two_workers_train_the_digits_cnn_to_the_target(
    start: TrainModel, data: TrainData, scheme: str
) -> None:
    result, record = _run(start, data, scheme, 2, epochs=10, target_top1=0.9)
    assert result.reached_epoch is not None, result.unmet_target()
    assert result.best_top1 >= 0.9 and len(result.epochs) == result.reached_epoch
    assert result.time_to_accuracy_s == pytest.approx(
        sum(e.train_s for e in result.epochs[: result.reached_epoch])
    )
    assert record.scheme == scheme and record.workers == 2
    assert record.step_time_s > 0


# ---------------------------------------------------------------- errors


@TWO
def test_a_rank_whose_loss_diverges_raises_its_error_here(
    start: TrainModel, tmp_path: Path
) -> None:
    data = _canonical(digits_data(scale=DIVERGE_SCALE))
    changes = {"optimizer": "sgd", "learning_rate": 10.0, "momentum": 0.9, "epochs": 2}
    with pytest.raises(TrainingDiverged) as caught:
        _run(start, data, "allreduce", 2, **changes)
    assert caught.value.epoch >= 1 and caught.value.learning_rate == 10.0


def test_more_workers_than_cores_are_refused_before_any_process_starts(
    start: TrainModel, data: TrainData
) -> None:
    workers = available_here() + 1
    with pytest.raises(TooManyWorkers) as caught:
        _run(start, data, "allreduce", workers)
    assert caught.value.workers == workers and caught.value.available == available_here()
    assert f"distributed.workers = {workers}" in str(caught.value)


REQUEST = {
    "model": "vision/digits-cnn-torch@^1",
    "dataset": "sklearn-digits-train@^1",
    "framework": "torch@*",
    "training": {"validation": "sklearn-digits-test@^1"},
}


@pytest.mark.parametrize(
    ("distributed", "changes", "message"),
    [
        (
            {"scheme": "horovod", "workers": 2},
            {},
            "must be one of allreduce, ddp, mavg, pssgd; got 'horovod' - at `$.distributed.scheme`",
        ),
        ({"scheme": "allreduce", "workers": 0}, {}, "distributed.workers"),
        ({"scheme": "allreduce", "workers": 65}, {}, "distributed.workers"),
        ({"scheme": "allreduce"}, {}, "missing required field `workers` - at `$.distributed`"),
        ({"scheme": "mavg", "workers": 2}, {}, "scheme mavg needs average_every"),
        (  # a setting of another scheme
            {"scheme": "ddp", "workers": 2, "average_every": 4},
            {},
            "average_every is the mavg scheme's setting; scheme ddp takes none",
        ),
        ({"scheme": "ddp", "workers": 2, "backend": "nccl"}, {}, "unknown field `backend`"),
        (  # not a training request
            {"scheme": "ddp", "workers": 2},
            {"training": None},
            "distributed goes with a training section",
        ),
        (  # torch.distributed only
            {"scheme": "ddp", "workers": 2},
            {"framework": "tensorflow@*"},
            "distributed training runs on torch",
        ),
        (  # L1's micro-batching is not a distributed scheme's
            {"scheme": "allreduce", "workers": 2},
            {
                "training": {
                    "validation": "sklearn-digits-test@^1",
                    "transform": {"micro_batches": 2},
                }
            },
            "distributed with training.transform",
        ),
    ],
)
def test_a_bad_distributed_section_names_the_field(
    distributed: dict[str, Any], changes: dict[str, Any], message: str
) -> None:
    data = {**REQUEST, "distributed": distributed, **changes}
    with pytest.raises(InvalidDocument) as caught:
        parse_request({k: v for k, v in data.items() if v is not None})
    assert message in str(caught.value)


def test_a_request_without_distributed_keeps_its_digest() -> None:
    """``distributed`` is left out of a request's plain data while unset."""
    from pinbench.registry.request import request_data

    plain = request_data(parse_request(REQUEST))
    assert "distributed" not in plain
    spec = parse_request(
        {**REQUEST, "distributed": {"scheme": "mavg", "workers": 2, "average_every": 3}}
    )
    assert request_data(spec)["distributed"] == {
        "scheme": "mavg",
        "workers": 2,
        "average_every": 3,
    }  # ``systems`` (decision 317) left out while unset: earlier lockfiles keep their digests
    spread = {"scheme": "ddp", "workers": 4, "systems": 2}
    spec = parse_request({**REQUEST, "distributed": spread})
    assert request_data(spec)["distributed"] == {**spread, "average_every": None}


def test_an_epoch_over_no_samples_fails_instead_of_a_zero_loss() -> None:
    """The epoch record divides the workers' summed loss by their samples; none is an error
    naming the epoch, never a train loss of 0.0. With samples, the loss is their mean."""
    from pinbench.training.distributed.launch import WorkerFailed, _epochs
    from pinbench.training.distributed.worker import EpochShard

    def shard(rank: int, samples: int, loss_sum: float) -> EpochShard:
        val = (0.5, 0.9) if rank == 0 else (None, None)
        return EpochShard(1, samples, 1, loss_sum, 0.25 + rank, val[0], val[1], 0.1)

    (record,) = _epochs([[shard(0, 30, 6.0)], [shard(1, 10, 4.0)]], 2)
    assert record.train_loss == pytest.approx(10.0 / 40) and record.train_s == 1.25
    assert record.samples_per_s == pytest.approx(40 / 1.25)
    with pytest.raises(WorkerFailed, match="epoch 1 trained no samples"):
        _epochs([[shard(0, 0, 0.0)], [shard(1, 0, 0.0)]], 2)


@pytest.mark.parametrize(
    ("version", "method"),
    [
        ((3, 11, 0), "spawn"),
        ((3, 11, 1), "forkserver"),
        ((3, 12, 0, "final", 0), "forkserver"),
        ((3, 13, 9), "forkserver"),
        ((3, 14, 0), "spawn"),
    ],
)
def test_ranks_fork_from_a_fork_server_only_where_its_socket_is_private(
    version: tuple[int, ...], method: str
) -> None:
    """Decision 268: CPython 3.11.0's fork server listened on an abstract socket any local user
    could reach (CVE-2022-42919), and ``server`` starts it the way 3.11.1 to 3.13 do; elsewhere
    the ranks are spawned."""
    assert start_method(version) == method
