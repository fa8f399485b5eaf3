"""``run_operator``: one operator spec on one framework, timed and validated.

Plain data in (an ``OperatorSpec``, a framework name, loop settings), plain data out (an
``OperatorResult``, a msgspec struct ready for JSON, SQL or a report).
"""

from __future__ import annotations

import msgspec
import numpy as np

from pinbench.operators.frameworks import load
from pinbench.operators.inputs import generate
from pinbench.operators.reference import Validation, reference, validate_all
from pinbench.operators.timing import time_calls
from pinbench.specs.operators.counts import counts
from pinbench.specs.operators.errors import UnsupportedOperation
from pinbench.specs.operators.loop import check_loop
from pinbench.specs.operators.spec import OperatorSpec


class OperatorResult(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One run. Latencies are raw nanoseconds in sample order; ``median_ns``/``p90_ns`` are
    NumPy's linear-interpolation percentiles of them. ``flops_per_s``/``bytes_per_s`` are
    the counts over the median, and ``None`` when the output is invalid: a result outside
    tolerance is reported as invalid, never as fast."""

    spec: OperatorSpec
    framework: str
    framework_version: str
    threads: int | None
    warmup: int
    latencies_ns: list[int]
    median_ns: float
    p90_ns: float
    flops: int
    bytes: int
    intensity: float
    flops_per_s: float | None
    bytes_per_s: float | None
    validation: Validation
    inputs_digest: str

    @property
    def valid(self) -> bool:
        return self.validation.valid


def run_operator(
    spec: OperatorSpec,
    framework: str,
    *,
    samples: int = 100,
    warmup: int = 10,
    threads: int | None = None,
) -> OperatorResult:
    """Generate the spec's inputs, run it on ``framework`` (``warmup`` untimed calls, then
    ``samples`` timed ones), validate the last timed output against the float64 reference.

    Raises ``UnsupportedOperation`` (with the framework's reason) before anything runs if the
    framework cannot run the spec here."""
    check_loop(samples, warmup, threads)
    module = load(framework)
    reason = module.supports(spec)
    if reason is not None:
        raise UnsupportedOperation(framework=framework, op=spec.op, reason=reason)
    inputs = generate(spec)
    call = module.prepare(spec, inputs, threads=threads)
    timed = time_calls(call, samples=samples, warmup=warmup, sync=module.sync)
    validation = validate_all(module.fetch(spec, timed.last), reference(spec, inputs), spec.dtype)
    work = counts(spec)
    median = float(np.median(timed.latencies_ns))
    seconds = median / 1e9
    fast = validation.valid and seconds > 0
    return OperatorResult(
        spec=spec,
        framework=module.NAME,
        framework_version=module.version(),
        threads=threads,
        warmup=warmup,
        latencies_ns=timed.latencies_ns.tolist(),
        median_ns=median,
        p90_ns=float(np.percentile(timed.latencies_ns, 90)),
        flops=work.flops,
        bytes=work.bytes,
        intensity=work.intensity,
        flops_per_s=work.flops / seconds if fast else None,
        bytes_per_s=work.bytes / seconds if fast else None,
        validation=validation,
        inputs_digest=inputs.digest,
    )
