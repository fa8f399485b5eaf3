"""An operator benchmark inside the evaluator: the lockfile's ``operator`` section run on its
pinned framework by ``pinbench.operators.run``, turned into the evidence a run records.

Runs in the same worker as a model evaluation (``measure``), so every runner (local, venv,
docker, a cluster agent) benchmarks operators in the environment the lockfile pins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.operators.run import OperatorResult
    from pinbench.worker.job import Evidence, Job

PERCENTILES = (50.0, 90.0, 95.0, 99.0)


class OutsideTolerance(UserError):
    """The framework's output is not the operator's: reported as invalid, never as fast."""

    def __init__(self, *, framework: str, operator: str, reason: str) -> None:
        super().__init__(f"{framework} is outside tolerance on {operator}: {reason}")
        self.framework = framework
        self.operator = operator
        self.reason = reason


def operate(job: Job, evidence: Evidence, say: Callable[[str], None]) -> None:
    """Time and validate the lockfile's operator on its framework; fill ``evidence`` (metrics
    and details are kept even when the output is outside tolerance, which fails the run)."""
    from pinbench.operators.run import run_operator

    body = job.lock.body
    assert body.operator is not None and body.environment is not None
    section, framework = body.operator, body.environment.framework
    spec = section.spec()
    job.stop.check()
    say(
        f"timing {spec.describe()} on {framework}: {section.warmup} warm-up calls, "
        f"then {section.samples} timed"
    )
    result = run_operator(
        spec, framework, samples=section.samples, warmup=section.warmup, threads=body.threads
    )
    job.stop.check()
    evidence.latencies = np.asarray(result.latencies_ns, dtype=np.int64)
    evidence.details["operator"] = details(result)
    evidence.details.update(threads=body.threads)
    evidence.metrics = metrics(result)
    if not result.valid:
        raise OutsideTolerance(
            framework=framework,
            operator=spec.describe(),
            reason=result.validation.reason or "invalid",
        )


def details(result: OperatorResult) -> dict[str, Any]:
    """The result without its raw samples (they are the run's latencies blob); an infinite
    error (a wrong shape, a NaN) is null, as JSON has no infinity."""
    data = msgspec.to_builtins(result)
    data.pop("latencies_ns")
    checked = data["validation"]
    for name in ("max_abs_error", "max_rel_error"):
        if not math.isfinite(checked[name]):
            checked[name] = None
    out: dict[str, Any] = data
    return out


def metrics(result: OperatorResult) -> dict[str, float]:
    """Latency percentiles (ns), work rates over the median (valid results only), errors
    (finite ones), validity and arithmetic intensity."""
    lat = np.asarray(result.latencies_ns, dtype=np.float64)
    out = {f"latency_p{p:g}_ns": float(np.percentile(lat, p)) for p in PERCENTILES}
    out["latency_mean_ns"] = float(lat.mean())
    out["queries_count"] = float(lat.size)
    if result.flops_per_s is not None:
        out["achieved_flop_per_s"] = result.flops_per_s
    if result.bytes_per_s is not None:
        out["achieved_byte_per_s"] = result.bytes_per_s
    checked = result.validation
    for name, value in (
        ("max_abs_error", checked.max_abs_error),
        ("max_rel_error", checked.max_rel_error),
    ):
        if math.isfinite(value):
            out[name] = value
    out["valid_bool"] = 1.0 if result.valid else 0.0
    out["intensity_flop_per_byte"] = result.intensity
    return out
