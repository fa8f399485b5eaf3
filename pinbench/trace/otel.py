"""Sending a run's trace out through OpenTelemetry (OTLP over HTTP), off by default.

Set ``PINBENCH_OTLP_ENDPOINT`` (e.g. ``http://127.0.0.1:4318/v1/traces``) and install the
``otel`` extra. The spans are made from the stored Chrome trace after the run is recorded, so
the run never depends on a collector: one root span per run carrying the run id and lockfile
digest, the pipeline phases and the timeline's predictions under it, and each framework
operator under the prediction it ran in. A failed export is reported, never fatal.
"""

from __future__ import annotations

import bisect
import os
from typing import Any

ENDPOINT_ENV = "PINBENCH_OTLP_ENDPOINT"
BATCH = 512


def endpoint() -> str | None:
    return os.environ.get(ENDPOINT_ENV) or None


def export(
    trace: dict[str, Any], *, run_id: str, lockfile: str, url: str, timeout_s: float = 10
) -> int:
    """Export the trace's spans to ``url``; return how many were sent. Raises ``ImportError``
    without the ``otel`` extra and ``OSError`` when the collector refuses them."""
    from opentelemetry import trace as otel
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    meta = trace["pinbench"]
    origin = int(meta["clock"]["origin_unix_ns"])
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "pinbench"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("pinbench.trace")
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]

    def at(us: float) -> int:
        return origin + round(us * 1000)

    attributes = {
        "pinbench.run_id": run_id,
        "pinbench.lockfile": lockfile,
        "pinbench.trace_level": str(meta["level"]),
        "pinbench.framework": f"{meta['framework']} {meta['framework_version']}",
    }
    first = min((e["ts"] for e in spans), default=0.0)
    last = max((e["ts"] + e["dur"] for e in spans), default=0.0)
    root = tracer.start_span("pinbench run", start_time=at(first), attributes=attributes)
    under_root = otel.set_span_in_context(root)
    model = sorted(
        (e for e in spans if e["cat"] in ("pipeline", "predict")),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    predicts = [e for e in model if e["cat"] == "predict"]
    starts = [e["ts"] for e in predicts]
    contexts = []
    for e in model:
        span = tracer.start_span(
            e["name"], context=under_root, start_time=at(e["ts"]), attributes=_attrs(e)
        )
        span.end(end_time=at(e["ts"] + e["dur"]))
        if e["cat"] == "predict":
            contexts.append(otel.set_span_in_context(span))
    for e in spans:
        if e["cat"] not in ("operator", "framework"):
            continue
        i = bisect.bisect_right(starts, e["ts"]) - 1
        inside = i >= 0 and e["ts"] + e["dur"] <= predicts[i]["ts"] + predicts[i]["dur"]
        parent = contexts[i] if inside else under_root
        span = tracer.start_span(
            e["name"], context=parent, start_time=at(e["ts"]), attributes=_attrs(e)
        )
        span.end(end_time=at(e["ts"] + e["dur"]))
    root.end(end_time=at(last))
    finished = memory.get_finished_spans()
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout_s)
    try:
        for i in range(0, len(finished), BATCH):
            if exporter.export(finished[i : i + BATCH]) is not SpanExportResult.SUCCESS:
                raise OSError(f"the collector at {url} did not accept the spans")
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
        provider.shutdown()
    return len(finished)


def _attrs(event: dict[str, Any]) -> dict[str, str | int | float]:
    out: dict[str, str | int | float] = {"pinbench.category": event["cat"]}
    for key, value in (event.get("args") or {}).items():
        if isinstance(value, (str, int, float)):
            out[f"pinbench.{key}"] = value
    return out
