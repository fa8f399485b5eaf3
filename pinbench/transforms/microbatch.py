"""Micro-batching, validated: trained (PyTorch) and for inference (any ``predict``).

Training: ``validate_training`` takes ``transform.steps`` optimizer steps twice from the same
seeded initial weights on the same batches (the first batches of the training loop's first
epoch: ``numpy.random.default_rng(seed).permutation``, as ``training.run`` draws them), once
whole and once in ``transform.micro_batches`` micro-batches, and compares the weights. Each
side's time is the wall time of its steps (after one untimed step, so neither side pays the
process's first-call costs); its peak memory the peak bytes autograd holds for
backward (``activations.SavedBytes``).
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from pinbench.specs.training import TrainingSpec
from pinbench.specs.transforms import TransformSpec
from pinbench.training.data import TrainData, TrainModel
from pinbench.training.errors import UnknownFramework
from pinbench.training.frameworks import load
from pinbench.transforms.activations import SavedBytes
from pinbench.transforms.compare import compare
from pinbench.transforms.result import TransformRecord

MEMORY = (
    "peak bytes of tensors autograd held for backward at once (activations and the weights "
    "saved with them), counted by saved_tensors_hooks"
)


def validate_training(
    spec: TrainingSpec, framework: str, model: TrainModel, data: TrainData
) -> TransformRecord:
    """``spec.transform`` against the untransformed training (see the module's docstring)."""
    transform = spec.transform
    assert transform is not None
    if framework != "torch":
        raise UnknownFramework(framework=framework, known=("torch",))
    order = np.random.default_rng(spec.seed).permutation(len(data.x_train))
    size = spec.batch_size
    batches = [order[i : i + size] for i in range(0, len(order), size)][: transform.steps]
    plain = msgspec.structs.replace(spec, transform=None)
    _train(plain, model, data, batches[:1])  # untimed: the process's first steps are slower
    reference = _train(plain, model, data, batches)
    transformed = _train(spec, model, data, batches)
    return TransformRecord(
        transform=transform.label(),
        framework=framework,
        compared=f"weights after {len(batches)} steps",
        comparison=compare(transformed[0], reference[0], dtype="float32"),
        time_s=transformed[1],
        reference_time_s=reference[1],
        peak_bytes=transformed[2],
        reference_peak_bytes=reference[2],
        memory=MEMORY,
    )


def _train(
    spec: TrainingSpec, model: TrainModel, data: TrainData, batches: list[npt.NDArray[Any]]
) -> tuple[list[npt.NDArray[Any]], float, int]:
    from safetensors.numpy import load as load_weights

    meter = SavedBytes()
    with load("torch").session(spec, model) as trainer, meter.measure():
        elapsed = 0.0
        for idx in batches:
            x, y = data.x_train[idx], data.y_train[idx]
            start = perf_counter()
            trainer.step(x, y)
            elapsed += perf_counter() - start
        weights = load_weights(trainer.weights())
    return [weights[k] for k in sorted(weights)], elapsed, meter.peak


def predict_micro(
    predict: Callable[[npt.NDArray[Any]], npt.NDArray[Any]], x: npt.NDArray[Any], k: int
) -> npt.NDArray[Any]:
    """Inference in ``k`` contiguous micro-batches, the outputs concatenated in order."""
    parts = np.array_split(np.arange(len(x)), min(k, len(x)))
    return np.concatenate([predict(x[int(p[0]) : int(p[-1]) + 1]) for p in parts])


Outputs = dict[str, npt.NDArray[Any]]
PASSES = 5


def micro_outputs(
    predict: Callable[[npt.NDArray[Any]], Outputs], k: int
) -> Callable[[npt.NDArray[Any]], Outputs]:
    """``predict`` on a batch in ``k`` contiguous micro-batches, each output concatenated in
    order; ``ValueError`` when an output is not one row per sample."""

    def run(batch: npt.NDArray[Any]) -> Outputs:
        parts = np.array_split(np.arange(len(batch)), min(k, len(batch)))
        outs = [predict(batch[int(p[0]) : int(p[-1]) + 1]) for p in parts]
        for part, out in zip(parts, outs, strict=True):
            for name, value in out.items():
                if np.ndim(value) == 0 or len(value) != len(part):
                    raise ValueError(
                        f"output {name} has shape {np.shape(value)} for a micro-batch of "
                        f"{len(part)}: micro-batching needs one row per sample"
                    )
        return {name: np.concatenate([o[name] for o in outs]) for name in outs[0]}

    return run


def validate_inference_micro(
    predict: Callable[[npt.NDArray[Any]], Outputs],
    x: npt.NDArray[Any],
    transform: TransformSpec,
    *,
    batch_size: int,
    framework: str,
) -> TransformRecord:
    """``predict`` in batches of ``batch_size`` over ``x``, whole and in
    ``transform.micro_batches`` micro-batches: every output compared (as float64, with the
    tolerance of the least precise float output's dtype); each side's time the median of
    ``PASSES`` passes after an untimed one."""
    reference, reference_s = _passes(predict, x, batch_size)
    transformed, time_s = _passes(micro_outputs(predict, transform.micro_batches), x, batch_size)
    names = sorted(reference)
    floats = [str(reference[n].dtype) for n in names if reference[n].dtype.kind == "f"]
    dtype = next((d for d in ("float16", "bfloat16", "float32") if d in floats), "float64")
    return TransformRecord(
        transform=transform.label(),
        framework=framework,
        compared=f"outputs of {len(x)} samples",
        comparison=compare(
            [transformed[n].astype(np.float64) for n in names],
            [reference[n].astype(np.float64) for n in names],
            dtype=dtype,
        ),
        time_s=time_s,
        reference_time_s=reference_s,
        peak_bytes=None,
        reference_peak_bytes=None,
        memory="not measured for inference",
    )


def _passes(
    predict: Callable[[npt.NDArray[Any]], Outputs], x: npt.NDArray[Any], batch_size: int
) -> tuple[Outputs, float]:
    batches = [x[i : i + batch_size] for i in range(0, len(x), batch_size)]
    outs = [predict(b) for b in batches]
    times = []
    for _ in range(PASSES):
        start = perf_counter()
        for b in batches:
            predict(b)
        times.append(perf_counter() - start)
    joined = {name: np.concatenate([o[name] for o in outs]) for name in outs[0]}
    return joined, float(np.median(times))
