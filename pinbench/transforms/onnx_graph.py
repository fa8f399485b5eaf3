"""An ONNX model's inference transformed and validated: onnxruntime's graph optimizations at a
pinned level (constant folding, redundant-node elimination at ``basic``; node fusions at
``extended``; layout optimizations at ``all``) and/or micro-batching, against the same model
with every graph optimization disabled, run whole, on the same inputs.

Both sessions run on the CPU provider with one intra-op thread, so the difference is the
graph's. The optimized graph onnxruntime produced is saved (``optimized_model_filepath``) and
handed back with the record: the host stores it as a blob and records its sha256
(``optimized_graph_sha256``, decision 180), the transformed network by content. Time is the
median wall time of 5 passes over the inputs after one untimed pass; peak memory is not
measured here (onnxruntime's arena keeps no peak counter).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.specs.transforms import GraphLevel, TransformSpec
from pinbench.transforms.compare import compare
from pinbench.transforms.microbatch import predict_micro
from pinbench.transforms.result import TransformRecord

PASSES = 5
MEMORY = "not measured (onnxruntime keeps no peak counter)"


def validate_graph(
    model: Path, x: npt.NDArray[Any], transform: TransformSpec, *, batch_size: int
) -> tuple[TransformRecord, bytes]:
    """Outputs of ``model`` (one input, first output) on ``x`` in batches of ``batch_size``:
    transformed by ``transform`` (its level, default ``disabled``; its micro-batches per
    batch) against the unoptimized graph run whole; the record and the optimized graph's bytes
    (an ONNX model). ``ValueError`` when the micro-batches do not divide ``batch_size``."""
    transform.check_batch(batch_size, field="batch_size")
    level = transform.graph_optimization or "disabled"
    with tempfile.TemporaryDirectory() as scratch:
        saved = Path(scratch) / "optimized.onnx"
        reference = _session(model, "disabled", None)
        transformed = _session(model, level, saved)
        graph = saved.read_bytes()
    k = transform.micro_batches
    ref_out, ref_s = _timed(lambda b: _run(reference, b), x, batch_size)
    out, time_s = _timed(
        lambda b: predict_micro(lambda m: _run(transformed, m), b, k), x, batch_size
    )
    dtype = str(ref_out.dtype)
    record = TransformRecord(
        transform=transform.label(),
        framework="onnxruntime",
        compared=f"outputs of {len(x)} samples",
        comparison=compare([out], [ref_out], dtype=dtype),
        time_s=time_s,
        reference_time_s=ref_s,
        peak_bytes=None,
        reference_peak_bytes=None,
        memory=MEMORY,
    )
    return record, graph


def _session(model: Path, level: GraphLevel, saved: Path | None) -> Any:
    import onnxruntime as ort

    levels = {
        "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    so = ort.SessionOptions()
    so.graph_optimization_level = levels[level]
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3  # errors only: saving an `all` graph warns it is host-specific
    if saved is not None:
        so.optimized_model_filepath = str(saved)
    return ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])


def _run(session: Any, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
    name = session.get_inputs()[0].name
    return np.asarray(session.run(None, {name: x})[0])


def _timed(predict: Any, x: npt.NDArray[Any], batch_size: int) -> tuple[npt.NDArray[Any], float]:
    """All outputs in batches, after one untimed pass; the median wall time of ``PASSES``
    timed passes (each must give the first pass's outputs: the session is deterministic)."""
    batches = [x[i : i + batch_size] for i in range(0, len(x), batch_size)]
    out = np.concatenate([predict(batch) for batch in batches])
    times = []
    for _ in range(PASSES):
        start = perf_counter()
        again = [predict(batch) for batch in batches]
        times.append(perf_counter() - start)
        if not np.array_equal(np.concatenate(again), out):
            raise RuntimeError("onnxruntime gave different outputs for the same inputs")
    return out, float(np.median(times))
