"""An inference run's ``transform`` (Deep500's level 1), validated on the run's own
preprocessed inputs before anything is timed: a graph optimization level (with or without
micro-batches) against the ONNX model with every optimization disabled, run whole
(``transforms.onnx_graph``); micro-batches alone against the opened predictor run whole
(``transforms.microbatch``). The scenario then measures the transformed network.

At most ``SAMPLES`` samples, in whole batches of the run's batch size (a model with a fixed
batch dimension takes nothing else); outside the tolerance the run fails with the reason and
its errors recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.transforms.result import TransformRecord
    from pinbench.worker.job import Evidence, Job

SAMPLES = 512
Predict = Callable[[Any], dict[str, Any]]


def validate_inference(
    job: Job, inputs: Any, predict: Predict, evidence: Evidence, say: Callable[[str], None]
) -> Predict:
    """Fill ``details["transform"]`` and the ``transform_*`` metrics (and, for a graph level,
    ``evidence.graph``: the optimized graph, which the host stores) and return what the
    scenario calls (``predict`` in micro-batches, where asked); raise ``TransformInvalid``
    outside the tolerance."""
    from pinbench.registry.onnx_files import model_file
    from pinbench.transforms.microbatch import micro_outputs, validate_inference_micro
    from pinbench.transforms.onnx_graph import validate_graph
    from pinbench.worker.model_folder import own_folder

    body = job.lock.body
    transform = body.request.transform
    assert transform is not None and body.model is not None and body.environment is not None
    if not isinstance(inputs, np.ndarray) or len(body.model.inputs) != 1:
        raise UserError(
            f"transform validates a model of one input; {body.model.name} declares "
            f"{len(body.model.inputs)}"
        )
    size = body.batch_size
    x = inputs[: max(min(len(inputs), SAMPLES) // size * size, min(len(inputs), size))]
    if transform.graph_optimization is not None:
        placed = own_folder(job.model_paths, job.scratch / "transform")  # external data too
        record, evidence.graph = validate_graph(
            placed[model_file(placed)], x, transform, batch_size=size
        )
    else:
        framework = body.environment.framework
        try:
            record = validate_inference_micro(
                predict, x, transform, batch_size=size, framework=framework
            )
        except ValueError as exc:  # an output that is not one row per sample
            raise UserError(f"transform: {exc}") from None
    keep(record, evidence, say)
    k = transform.micro_batches
    return predict if k == 1 else micro_outputs(predict, k)


def keep(record: TransformRecord, evidence: Evidence, say: Callable[[str], None]) -> None:
    """Say a validation's errors, record them in the run's details and metrics, and fail the
    run (``TransformInvalid``) when they are outside the tolerance."""
    c = record.comparison
    say(
        f"transform {record.transform}: {record.compared} vs untransformed: {c.errors()} "
        f"({'valid' if c.valid else 'INVALID'})"
    )
    evidence.details["transform"] = record.details()
    evidence.metrics.update(record.metrics())
    record.check()
