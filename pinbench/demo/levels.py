"""The demo's Deep500 levels: an operator table (L0) and a training run to a target (L2),
each locked, run and recorded like the demo's model runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pinbench.catalog import cnn
from pinbench.catalog.digits import DATASET_NAME, TRAIN_DATASET_NAME
from pinbench.errors import UserError
from pinbench.sdk.registry import Registry
from pinbench.tables import operator_table

Step = Callable[[str], None]
FRAMEWORKS = ("onnxruntime", "torch", "tensorflow")
OPERATORS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "conv2d",
        {
            "n": 1,
            "c": 64,
            "h": 56,
            "w": 56,
            "out_channels": 64,
            "kernel_h": 3,
            "kernel_w": 3,
            "padding": 1,
        },
    ),
    ("matmul", {"m": 512, "n": 512, "k": 512}),
)
TARGET = 0.95
TRAINING: dict[str, Any] = {
    "validation": f"{DATASET_NAME}@^1",
    "optimizer": "adam",
    "learning_rate": 0.01,
    "batch_size": 32,
    "epochs": 20,
    "target_top1": TARGET,
    "seed": 0,
    "deterministic": True,
}


def operators(reg: Registry, out: Console, step: Step) -> None:
    """conv2d (a ResNet-50 layer) and a 512^3 matmul on each framework: one lockfile each."""
    step(
        "operator benchmarks (Deep500 L0): the same seeded tensors in three frameworks, "
        "checked against float64 NumPy"
    )
    infos = []
    for op, params in OPERATORS:
        section = {"op": op, "params": params, "samples": 30, "warmup": 5}
        for framework in FRAMEWORKS:
            request = {"operator": section, "framework": f"{framework}@*"}
            done = reg.lock(request)[0].run(runner="local")
            infos.append({"name": op, **done.view()})
    out.print(operator_table(infos))


def training(reg: Registry, workdir: Path, out: Console, step: Step) -> None:
    """The digits CNN trained from its seed to top-1 0.95 in PyTorch and TensorFlow, each in
    a fresh ``pinbench run`` process (TensorFlow fixes its threads at first use)."""
    step(
        f"training benchmarks (Deep500 L2): the digits CNN to top-1 {TARGET} in PyTorch and "
        "TensorFlow (deterministic: one thread, seeded, fixed kernels)"
    )
    table = Table(
        "framework",
        "reached",
        "time to accuracy",
        "eval (excluded)",
        "samples/s",
        "final top-1",
        "weights sha256",
        "run",
        box=None,
    )
    for framework in ("torch", "tensorflow"):
        request = {
            "model": f"{cnn.model_name(framework)}@^1",
            "dataset": f"{TRAIN_DATASET_NAME}@^1",
            "framework": f"{framework}@*",
            "training": TRAINING,
        }
        lock = reg.lock(request)[0]
        path = workdir / f"{lock.digest[:12]}.lock"
        lock.write(path)
        info = _run_fresh(reg, path)
        m, trained = info["metrics"], info["details"]["training"]
        table.add_row(
            framework,
            f"epoch {trained['reached_epoch']}",
            f"{m['time_to_accuracy_s']:.2f} s",
            f"{m['eval_time_s']:.2f} s",
            f"{m['throughput_sps']:,.0f}",
            f"{m['final_top1']:.3f}",
            trained["weights_sha256"][:12],
            info["id"][:8],
        )
    out.print(table)


def _run_fresh(reg: Registry, lockfile: Path) -> dict[str, Any]:
    """``pinbench run LOCKFILE --runner local --json`` in a new process on this registry."""
    env = dict(os.environ)
    env["PINBENCH_HOME"] = str(reg.home)
    env["PINBENCH_DATABASE_URL"] = str(reg.database_url)
    env.pop("PINBENCH_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "pinbench", "run", str(lockfile), "--runner", "local", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise UserError(f"training run of {lockfile.name} failed: {done.stderr.strip()[-2000:]}")
    return reg.run(json.loads(done.stdout)["id"]).view()
