"""The demo's network transformations (Deep500 L1): micro-batched training runs of the digits
CNN, each validated against full-batch training, and onnxruntime's graph optimization of its
ONNX export validated against the unoptimized graph: one short table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from pinbench.catalog import cnn
from pinbench.catalog.digits import DATASET_NAME, TRAIN_DATASET_NAME
from pinbench.reports.transforms import HEAD, transform_row
from pinbench.sdk.registry import Registry

Step = Callable[[str], None]
MICRO_BATCHES = (1, 2, 4)
BATCH = 32


def transforms(reg: Registry, out: Console, step: Step) -> None:
    """k = 1, 2, 4 micro-batches (one locked and recorded training run each, one epoch), and
    an accuracy run of the ONNX export at graph optimization level ``all``: each validated
    against the untransformed network."""
    step(
        "network transformations (Deep500 L1): micro-batching validated against full-batch "
        "weights, onnxruntime's graph optimization against the unoptimized graph"
    )
    records: list[dict[str, Any]] = []
    for k in MICRO_BATCHES:
        request = {
            "model": f"{cnn.model_name('torch')}@^1",
            "dataset": f"{TRAIN_DATASET_NAME}@^1",
            "framework": "torch@*",
            "training": {
                "validation": f"{DATASET_NAME}@^1",
                "learning_rate": 0.01,
                "batch_size": BATCH,
                "epochs": 1,
                "transform": {"micro_batches": k, "steps": 3},
            },
        }
        done = reg.lock(request)[0].run(runner="local")
        records.append(done.view()["details"]["transform"])
    graph: dict[str, Any] = {
        "model": f"{cnn.model_name('onnxruntime')}@^1",
        "dataset": f"{DATASET_NAME}@^1",
        "framework": "onnxruntime@*",
        "batch_size": 30,  # the 450 test samples in whole batches
        "scenario": {"mode": "accuracy"},
        "transform": {"graph_optimization": "all"},
    }
    done = reg.lock(graph)[0].run(runner="local")
    records.append(done.view()["details"]["transform"])
    shown = (0, 1, 3, 5, 6, 7, 8, 9)  # HEAD less "compared", "max rel err", the reference KiB
    table = Table(*[HEAD[i] for i in shown], box=None)
    for record in records:
        cells = transform_row(record).cells()
        table.add_row(*[cells[i] for i in shown])
    out.print(table)
