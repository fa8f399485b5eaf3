"""An inference run's ``transform`` (Deep500's level 1): the lockfile's ONNX model at the
requested graph optimization level validated against its unoptimized graph on the run's own
preprocessed inputs, before the run measures it at that level.

At most ``SAMPLES`` samples, in whole batches of the run's batch size (a model with a fixed
batch dimension takes nothing else); outside the tolerance the run fails with the reason and
its errors recorded, before anything is timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.evaluator.job import Evidence, Job

SAMPLES = 512


def validate_inference(
    job: Job, inputs: Any, evidence: Evidence, say: Callable[[str], None]
) -> None:
    """Fill ``details["transform"]`` and the ``transform_*`` metrics; raise
    ``TransformInvalid`` outside the tolerance."""
    from pinbench.evaluator.model_folder import own_folder
    from pinbench.registry.onnx_files import model_file
    from pinbench.transforms.onnx_graph import validate_graph

    body = job.lock.body
    transform = body.request.transform
    assert transform is not None and body.model is not None
    if not isinstance(inputs, np.ndarray) or len(body.model.inputs) != 1:
        raise UserError(
            f"transform validates a model of one input; {body.model.name} declares "
            f"{len(body.model.inputs)}"
        )
    placed = own_folder(job.model_paths, job.scratch / "transform")  # external data beside it
    onnx = placed[model_file(placed)]
    size = body.batch_size
    count = max(min(len(inputs), SAMPLES) // size * size, min(len(inputs), size))
    record = validate_graph(onnx, inputs[:count], transform, batch_size=size)
    c = record.comparison
    say(
        f"transform {record.transform}: {record.compared} vs the unoptimized graph: max abs "
        f"err {c.max_abs_err:.3g}, max rel err {c.max_rel_err:.3g}, L2 err {c.l2_err:.3g} "
        f"({'valid' if c.valid else 'INVALID'})"
    )
    evidence.details["transform"] = record.details()
    evidence.metrics.update(record.metrics())
    record.check()
