"""How long a short distributed training takes with its ranks spawned (a fresh interpreter
each, importing PyTorch) against forked from the fork server that imported PyTorch once
(``pinbench.training.distributed.launch.START_METHOD``, docs/benchmarks.md §15g).

Each training: the digits CNN, one epoch, two workers, allreduce, deterministic (one thread a
rank), as ``tests/test_distributed_training.py`` runs them. The two ways alternate round by
round in one process; the fork server's own start (one import of PyTorch) falls in its first
training, which is printed apart and left out of the median. Printed: the median wall time of
a training both ways over ``--rounds`` rounds, and the ratio. The ranks' CPU is not a child of
this process under the fork server, so wall time is the measure; on two cores the two ranks'
imports ran side by side, so the wall time saved is about one import.

Run: ``.venv/bin/python -m bench.bench_rank_start``
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from bench.bench_distributed import _data, _model
    from pinbench.specs.distributed import DistributedSpec
    from pinbench.specs.training import TrainingSpec
    from pinbench.training.distributed import launch

    spec = TrainingSpec(
        validation="sklearn/digits@test", epochs=1, batch_size=32, learning_rate=0.01
    )
    distributed = DistributedSpec(scheme="allreduce", workers=2)
    data = _data()
    times: dict[str, list[float]] = {"spawn": [], "forkserver": []}
    digests: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        model = _model(Path(tmp))

        def once(method: str) -> float:
            launch.START_METHOD = method
            started = time.monotonic()
            result, _ = launch.train_distributed(spec, distributed, model, data, say=print_none)
            digests.add(hashlib.sha256(result.weights).hexdigest())
            return time.monotonic() - started

        first = once("forkserver")
        print(f"forkserver, first training (the server starts): {first:.2f} s")
        for r in range(args.rounds):
            order = ("spawn", "forkserver") if r % 2 == 0 else ("forkserver", "spawn")
            for method in order:
                times[method].append(once(method))
    spawn = statistics.median(times["spawn"])
    fork = statistics.median(times["forkserver"])
    print(f"spawn (baseline):             {spawn:.2f} s a training (median of {args.rounds})")
    print(f"forkserver (a later training): {fork:.2f} s a training")
    print(f"ratio: {fork / spawn:.3f} of the baseline; the same weights both ways: "
          f"{len(digests) == 1}")  # fmt: skip


def print_none(_: str) -> None:
    pass


if __name__ == "__main__":
    main()
