"""The demo's Deep500 level 3: the digits CNN trained by two workers with pinbench's allreduce
scheme and with PyTorch's DistributedDataParallel, side by side."""

from __future__ import annotations

import os
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from pinbench.catalog import cnn
from pinbench.catalog.digits import TRAIN_DATASET_NAME
from pinbench.demo.levels import TRAINING
from pinbench.sdk.registry import Registry

Step = Callable[[str], None]
WORKERS = 2


def distributed(reg: Registry, out: Console, step: Step) -> None:
    """Two workers (processes over gloo on 127.0.0.1), allreduce then DDP, same seed."""
    if len(os.sched_getaffinity(0)) < WORKERS:  # a core per worker, as runs require
        step(
            f"distributed training (Deep500 L3): skipped, this machine has fewer than "
            f"{WORKERS} cores"
        )
        return
    step(
        f"distributed training (Deep500 L3): the digits CNN to top-1 {TRAINING['target_top1']} "
        f"with {WORKERS} workers, pinbench's allreduce scheme beside DistributedDataParallel"
    )
    table = Table(
        "scheme",
        "workers",
        "reached",
        "time to accuracy",
        "step",
        "bytes/step",
        "weights sha256",
        "run",
        box=None,
    )
    for scheme in ("allreduce", "ddp"):
        request = {
            "model": f"{cnn.model_name('torch')}@^1",
            "dataset": f"{TRAIN_DATASET_NAME}@^1",
            "framework": "torch@*",
            "training": TRAINING,
            "distributed": {"scheme": scheme, "workers": WORKERS},
        }
        info = reg.lock(request)[0].run(runner="local").view()
        m, trained = info["metrics"], info["details"]["training"]
        table.add_row(
            scheme,
            str(WORKERS),
            f"epoch {trained['reached_epoch']}",
            f"{m['time_to_accuracy_s']:.2f} s",
            f"{m['step_time_s'] * 1e3:.2f} ms",
            f"{m['bytes_per_step']:,.0f} B",
            trained["weights_sha256"][:12],
            info["id"][:8],
        )
    out.print(table)
