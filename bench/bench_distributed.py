"""Distributed training (issue 39): pinbench's allreduce scheme vs PyTorch's
DistributedDataParallel on the same model, data and workers, in the same run.

Model: the digits CNN (``digits-cnn``, 6,090 float32 parameters, 24,360 bytes), seeded
initialisation; data: scikit-learn's digits train split (1,347 samples) judged on its test
split; Adam at 0.01, ``--batch-size`` (32) samples per worker per step, ``--epochs`` (4)
epochs, no target (every run does the same steps), deterministic (one thread per worker).
Every training goes through ``pinbench.training.distributed.launch.train_distributed``: the
ranks are processes forked from the fork server (decision 268) on 127.0.0.1, talking over gloo.

Each run trains with ``--workers`` (2) workers, allreduce and DDP back to back (which goes
first alternates from run to run), then pssgd and mavg (``average_every`` 4) for their step
times and bytes, then each scheme with one worker (scaling). Step time: the training time of
epochs 2.. (epoch 1 holds the first calls' warm-up) over their steps, each epoch timed by its
slowest rank, evaluation excluded. Ratio = allreduce step time / DDP step time within each
run; the median over runs is the figure (target <= 1.10, Deep500's "on par with Horovod").

Bytes per step are pinbench's accounting (``schemes``: the payload each worker hands to
collectives); as a cross-check, the loopback interface's transmitted bytes (``/proc/net/dev``,
``lo``) over each training divided by its steps: every rank's traffic, gloo's ring factor and
its framing included, and the rendezvous and stop flags too.

Run: ``.venv/bin/python -m bench.bench_distributed --runs 5`` (``--json``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from bench._common import Check, Report, check_runs, command_line, log, machine, parser
from pinbench.specs.distributed import DistributedSpec
from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainData, TrainModel
from pinbench.training.distributed.launch import DistributedRecord, train_distributed
from pinbench.training.result import TrainingResult

TARGET_RATIO = 1.10
SCHEMES = ("allreduce", "ddp", "pssgd", "mavg")


def _data() -> TrainData:
    import numpy as np

    from pinbench.catalog.digits import digits_split

    x_train, x_val, y_train, y_val = digits_split()

    def inputs(x: Any) -> Any:
        return np.array((x.astype(np.float32) / 16.0)[:, None, :, :], order="C", copy=True)

    return TrainData(inputs(x_train), y_train, inputs(x_val), y_val)


def _model(folder: Path) -> TrainModel:
    import torch

    from pinbench.catalog.torch_files import save_safetensors
    from pinbench.worker.predictors.torch.architectures import digits_cnn

    torch.manual_seed(0)
    path = folder / "digits-cnn.safetensors"
    save_safetensors(path, dict(digits_cnn().state_dict()), "digits-cnn")
    return TrainModel("safetensors", "digits-cnn", {"digits-cnn.safetensors": path})


def _lo_tx() -> int:
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[8])
    return 0


def _train(
    spec: TrainingSpec, scheme: str, workers: int, model: TrainModel, data: TrainData
) -> tuple[TrainingResult, DistributedRecord, int]:
    every = 4 if scheme == "mavg" else None
    distributed = DistributedSpec(scheme=scheme, workers=workers, average_every=every)  # type: ignore[arg-type]
    before = _lo_tx()
    result, record = train_distributed(spec, distributed, model, data, say=lambda _: None)
    return result, record, _lo_tx() - before


def _step_s(result: TrainingResult, record: DistributedRecord) -> float:
    """Training time of epochs 2.. over their steps (every epoch has the same steps)."""
    per_epoch = record.steps / len(result.epochs)
    later = result.epochs[1:] or result.epochs
    return sum(e.train_s for e in later) / (per_epoch * len(later))


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="distributed training: pinbench allreduce vs DistributedDataParallel",
        command=command_line("bench.bench_distributed", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    spec = TrainingSpec(
        validation="sklearn-digits-test@1",
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=0.01,
    )
    data = _data()
    w = args.workers
    with tempfile.TemporaryDirectory() as folder:
        model = _model(Path(folder))
        for run in range(runs):
            pair = ("allreduce", "ddp") if run % 2 == 0 else ("ddp", "allreduce")
            steps: dict[str, float] = {}
            digests: dict[str, str] = {}
            for scheme in (*pair, "pssgd", "mavg"):
                log(f"run {run + 1}/{runs}: {scheme}, {w} workers")
                result, record, lo = _train(spec, scheme, w, model, data)
                steps[scheme], digests[scheme] = _step_s(result, record), result.weights_sha256
                report.metric(f"[{w} workers] {scheme} step time", "ms").values.append(
                    steps[scheme] * 1e3
                )
                report.metric(
                    f"[{w} workers] {scheme} samples/s per worker", "1/s", better="higher"
                ).values.append(sum(record.throughput_sps_per_worker) / w)
                report.metric(f"[{w} workers] {scheme} bytes/step (counted)", "B").values.append(
                    record.bytes_per_step
                )
                report.metric(
                    f"[{w} workers] {scheme} lo bytes/step (measured)", "B"
                ).values.append(lo / record.steps)
            report.metric(f"[{w} workers] ratio allreduce / ddp step time", "x").values.append(
                steps["allreduce"] / steps["ddp"]
            )
            report.metric(f"[{w} workers] allreduce = ddp weights", "bool").values.append(
                float(digests["allreduce"] == digests["ddp"])
            )
            for scheme in SCHEMES:
                log(f"run {run + 1}/{runs}: {scheme}, 1 worker")
                result, record, _ = _train(spec, scheme, 1, model, data)
                report.metric(f"[1 worker] {scheme} step time", "ms").values.append(
                    _step_s(result, record) * 1e3
                )
    ratio = report.metric(f"[{w} workers] ratio allreduce / ddp step time", "x").median
    report.checks.append(
        Check(
            f"[{w} workers] allreduce step time / DDP step time",
            ratio,
            "x",
            f"<= {TARGET_RATIO}",
            ratio <= TARGET_RATIO,
        )
    )
    report.notes += [
        f"model digits-cnn, {args.epochs} epochs, {args.batch_size} samples per worker per "
        f"step (global batch {args.batch_size * w}), Adam 0.01, deterministic, no target",
        "step time: epochs 2.. training time (slowest rank per epoch) over their steps",
        "allreduce and DDP alternate which goes first; each training spawns its ranks afresh",
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
