"""The demo's network transformations (Deep500 L1): micro-batched training runs of the digits
CNN, each validated against full-batch training, and onnxruntime's graph optimization of its
ONNX export validated against the unoptimized graph: one short table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from pinbench.catalog import cnn
from pinbench.catalog.digits import DATASET_NAME, TRAIN_DATASET_NAME, digits_split
from pinbench.reports.transforms import HEAD, transform_row
from pinbench.sdk.registry import Registry
from pinbench.transforms.onnx_graph import validate_graph
from pinbench.transforms.spec import TransformSpec

Step = Callable[[str], None]
MICRO_BATCHES = (1, 2, 4)
BATCH = 32


def transforms(reg: Registry, workdir: Path, out: Console, step: Step) -> None:
    """k = 1, 2, 4 micro-batches (one locked and recorded training run each, one epoch), and
    the ONNX export at graph optimization level ``all``."""
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
    x = digits_split()[1].astype(np.float32)[:, None, :, :] / np.float32(16)
    onnx = workdir / "digits-cnn" / "digits-cnn.onnx"
    graph = validate_graph(onnx, x, TransformSpec(graph_optimization="all"), batch_size=BATCH)
    records.append(graph.details())
    table = Table(*[h for h in HEAD if h != "compared"], box=None)
    for record in records:
        cells = transform_row(record).cells()
        table.add_row(*cells[:2], *cells[3:])
    out.print(table)
