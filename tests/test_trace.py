"""Trace levels: what each records, one timeline per run, the operator table, OpenTelemetry.

A digits CNN run at ``full`` on each of the three frameworks must give a Chrome trace in which
the model-level spans contain the framework's operator spans, and ``pinbench runs trace``
must print its layer table.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import ChecksumMismatch
from pinbench.catalog import DATASET_NAME, cnn
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.verdicts.rerun import rerun
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.trace.align import align, best_point
from pinbench.trace.clock import bracketed_offset
from pinbench.trace.levels import (
    LEVELS,
    PROFILERS,
    TraceUnsupported,
    UnknownTraceLevel,
    check_level,
    offers,
    parts,
)
from pinbench.trace.ops import OpRow, category, op_table
from pinbench.trace.summary import NoTrace, trace_of
from pinbench.workspace import Workspace
from tests.helpers import Cli, in_process_cli, published_workspace

QUICK = {"min_duration_ms": 200, "min_query_count": 50}
FRAMEWORKS = ("onnxruntime", "torch", "tensorflow")


def quiet(text: str) -> None:
    pass


@dataclass
class Traced:
    ws: Workspace
    home: Path
    db: str
    full: dict[str, str]
    """Framework -> id of its digits CNN run at level ``full``."""


def _lock(ws: Workspace, framework: str, **extra: Any) -> Lockfile:
    request = {
        "model": f"{cnn.model_name(framework)}@^1",
        "dataset": f"{DATASET_NAME}@1",
        "scenario": QUICK,
        **extra,
    }
    return service.lock(ws, parse_request(request))[0]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Traced]:
    root = tmp_path_factory.mktemp("trace")
    ws = published_workspace(root, cnn_catalog_dir)
    full = {fw: run_lockfile(ws, _lock(ws, fw), say=quiet, trace="full").id for fw in FRAMEWORKS}
    yield Traced(ws, root / "home", f"sqlite:///{root}/db", full)
    ws.close()


@pytest.fixture
def cli(traced: Traced, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``pinbench ARGS`` in-process against the module's workspace."""
    return in_process_cli(monkeypatch, capsys, traced.home, traced.db)


# ---------------------------------------------------------------- levels


@pytest.mark.parametrize(
    ("level", "recorded"),
    [
        ("none", set()),
        ("model", {"model"}),
        ("framework", {"model", "framework"}),
        ("system", {"model", "system"}),
        ("full", {"model", "framework", "system"}),
    ],
)
def test_what_each_level_records(level: str, recorded: set[str]) -> None:
    assert parts(level) == recorded


@pytest.mark.parametrize("framework", sorted(PROFILERS))
def test_the_three_frameworks_offer_every_level(framework: str) -> None:
    assert offers(framework) == list(LEVELS)
    for level in LEVELS:
        assert check_level(level, framework) == level


@pytest.mark.parametrize(("level", "refused"), [(lvl, "framework" in parts(lvl)) for lvl in LEVELS])
def test_a_framework_without_a_profiler_is_told_what_it_offers(level: str, refused: bool) -> None:
    if not refused:
        assert check_level(level, "mxnet") == level
        return
    with pytest.raises(TraceUnsupported) as info:
        check_level(level, "mxnet")
    assert f"trace level {level!r} is not available for mxnet" in str(info.value)
    assert "mxnet offers none, model, system" in str(info.value)
    assert info.value.offers == ["none", "model", "system"]


def test_an_unknown_level_is_refused_before_anything_runs(
    traced: Traced, cli: Cli, tmp_path: Path
) -> None:
    lock_path = tmp_path / "a.lock"
    _lock(traced.ws, "onnxruntime").write(lock_path)
    before = len(list_runs(traced.ws))
    result = cli("run", str(lock_path), "--trace", "verbose", "--runner", "local")
    assert result.code == 1
    assert "no trace level 'verbose'; levels: none, model, framework, system, full" in result.err
    assert len(list_runs(traced.ws)) == before
    with pytest.raises(UnknownTraceLevel):
        run_lockfile(traced.ws, _lock(traced.ws, "onnxruntime"), say=quiet, trace="all")
    assert len(list_runs(traced.ws)) == before


# ---------------------------------------------------------------- one timeline


def _spans(trace: dict[str, Any], *cats: str) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["cat"] in cats]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_full_trace_nests_operators_in_model_spans(traced: Traced, framework: str) -> None:
    info = show_run(traced.ws, traced.full[framework])
    assert info["status"] == "succeeded" and info["trace"] == "full"
    trace = trace_of(traced.ws, info)
    meta = trace["pinbench"]
    assert meta["format"] == "pinbench-trace/1" and meta["traced_latency"] is True
    assert meta["framework"] == framework and meta["level"] == "full"
    # Every timed predict is counted; the file shows the first ones.
    assert meta["predictions"] == info["framework_calls_count"]
    predicts = _spans(trace, "predict")
    assert len(predicts) == meta["timeline"]["predictions_shown"] > 0
    latencies = np.load(traced.ws.store.path(Digest(info["latencies_sha256"])))
    assert [round(p["dur"] * 1000) for p in predicts] == latencies[: len(predicts)].tolist()
    phases = [p["name"] for p in _spans(trace, "pipeline")]
    assert phases == ["preprocess", "load model", "first predict (cold)", "warm-up", "scenario"]
    # The framework's operators lie inside pinbench's spans: a predict, the load or the cold one.
    ops = _spans(trace, "operator")
    assert ops, "no operator events in the timeline"
    hosts = sorted(
        (p["ts"], p["ts"] + p["dur"])
        for p in predicts + _spans(trace, "pipeline")
        if p["cat"] == "predict" or p["name"] in ("load model", "first predict (cold)")
    )
    starts = [h[0] for h in hosts]
    for op in ops:
        i = int(np.searchsorted(starts, op["ts"], side="right")) - 1
        assert i >= 0 and hosts[i][0] <= op["ts"] and op["ts"] + op["dur"] <= hosts[i][1] + 1e-3
    in_predicts = [
        op for op in ops if any(p["ts"] <= op["ts"] <= p["ts"] + p["dur"] for p in predicts[:3])
    ]
    assert in_predicts, "the first predictions hold no operators"
    fw = meta["framework_trace"]
    assert fw["in_spans"] >= 0.95 * fw["events"]
    if framework == "tensorflow":  # its own clock, bounded by anchors between two readings
        assert fw["clock_uncertainty_ns"] >= 0 and not fw["notes"]
    # The operator table covers every prediction: each layer runs once per prediction.
    table = meta["ops"]
    assert table and all(row["count"] == meta["predictions"] for row in table)
    assert 0 < sum(row["total_ns"] for row in table) <= meta["model_time_ns"]
    assert {category(row["op"]) for row in table} >= {"convolution", "pooling", "matmul"}
    # Cold start, apart from the warm iterations.
    cold = meta["cold_start"]
    assert cold["load_ns"] > 0 and cold["first_predict_ns"] > 0 and cold["warm_p50_ns"] > 0
    assert meta["cold_ops"]
    # System samples on the same clock; what could not be sampled is said.
    counters = [e for e in trace["traceEvents"] if e.get("ph") == "C"]
    assert min(e["ts"] for e in trace["traceEvents"] if "ts" in e) >= 0  # one origin for all
    assert {c["name"] for c in counters} >= {"cpu", "memory"}
    assert all(c["args"]["rss_mb"] > 0 for c in counters if c["name"] == "memory")
    system = meta["system"]
    assert any(c.startswith("gpu") for c in system["counters"]) or any(
        "no GPU counters" in n for n in system["notes"]
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_runs_trace_prints_the_layer_table(
    traced: Traced, cli: Cli, framework: str, tmp_path: Path
) -> None:
    run_id = traced.full[framework]
    chrome = tmp_path / "trace.json"
    result = cli("runs", "trace", run_id[:8], "--top", "3", "--chrome", str(chrome))
    assert result.code == 0, result.err
    trace = trace_of(traced.ws, show_run(traced.ws, run_id))
    first = trace["pinbench"]["ops"][0]
    for needle in (
        "traced at level full",
        "cold start: load",
        "layer / operator",
        "share",
        first["name"],
        "operators cover",
    ):
        assert needle in result.out
    assert len(trace["pinbench"]["ops"]) > 3 and "more operator(s)" in result.out
    assert json.loads(chrome.read_text()) == trace
    data = json.loads(cli("runs", "trace", run_id, "--json", "--top", "2").out)
    (view,) = data["runs"]
    assert len(view["operators"]) == 2 and view["operators"][0]["name"] == first["name"]
    assert (
        abs(
            sum(r["share"] for r in view["operators"])
            - sum(r["total_ns"] for r in trace["pinbench"]["ops"][:2])
            / trace["pinbench"]["model_time_ns"]
        )
        < 1e-9
    )


def test_two_frameworks_breakdowns_compared(traced: Traced, cli: Cli) -> None:
    a, b = traced.full["onnxruntime"], traced.full["torch"]
    result = cli("runs", "trace", a, b)
    assert result.code == 0, result.err
    assert "category (per prediction)" in result.out and "largest difference" in result.out
    data = json.loads(cli("runs", "trace", a, b, "--json").out)
    cats = {c["category"]: c for c in data["categories"]}
    assert {"convolution", "pooling", "matmul"} <= set(cats)
    conv = cats["convolution"]["per_prediction_ns"]
    assert len(conv) == 2 and all(ns > 0 for ns in conv)


def test_a_model_level_trace_has_spans_but_no_operators(traced: Traced, cli: Cli) -> None:
    outcome = run_lockfile(traced.ws, _lock(traced.ws, "onnxruntime"), say=quiet, trace="model")
    trace = trace_of(traced.ws, show_run(traced.ws, outcome.id))
    assert not _spans(trace, "operator", "framework")
    assert not [e for e in trace["traceEvents"] if e.get("ph") == "C"]
    assert "framework_trace" not in trace["pinbench"] and "system" not in trace["pinbench"]
    result = cli("runs", "trace", outcome.id)
    assert result.code == 0 and "no operator table: traced at level 'model'" in result.out


def test_a_run_without_a_trace_says_so(traced: Traced, cli: Cli) -> None:
    outcome = run_lockfile(traced.ws, _lock(traced.ws, "onnxruntime"), say=quiet)
    info = show_run(traced.ws, outcome.id)
    assert info["trace"] == "none" and info["trace_sha256"] is None
    assert "trace" not in info["details"]
    result = cli("runs", "trace", outcome.id)
    assert result.code == 1
    assert f"run {outcome.id[:8]} has no trace: it ran at trace level 'none'" in result.err
    assert "--trace full" in result.err
    with pytest.raises(NoTrace):
        trace_of(traced.ws, info)


def test_a_tampered_trace_is_refused(traced: Traced) -> None:
    outcome = run_lockfile(traced.ws, _lock(traced.ws, "onnxruntime"), say=quiet, trace="model")
    info = show_run(traced.ws, outcome.id)
    path = traced.ws.store.path(Digest(info["trace_sha256"]))
    path.chmod(0o644)
    path.write_bytes(path.read_bytes().replace(b"predict", b"Predict", 1))
    with pytest.raises(ChecksumMismatch):
        trace_of(traced.ws, info)


def test_traced_runs_are_marked_and_reruns_keep_their_level(traced: Traced) -> None:
    original = run_lockfile(traced.ws, _lock(traced.ws, "onnxruntime"), say=quiet, trace="model")
    same = rerun(traced.ws, original.id, repeat=1, say=quiet)
    assert show_run(traced.ws, same.reruns[0]["id"])["trace"] == "model"
    assert not any(line.startswith("latency not compared") for line in same.lines)
    other = rerun(traced.ws, original.id, repeat=1, say=quiet, trace="none")
    assert show_run(traced.ws, other.reruns[0]["id"])["trace"] == "none"
    assert any(
        "latency not compared: the original ran at trace level 'model', the reruns at 'none'"
        in line
        for line in other.lines
    )


# ---------------------------------------------------------------- OpenTelemetry


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint: keeps every ExportTraceServiceRequest it is sent."""

    received: list[bytes]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    handler: type[_Collector] = type("Handler", (_Collector,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1/traces", handler.received
    server.shutdown()


def test_spans_go_out_through_otlp_with_the_run_and_lockfile(
    traced: Traced, collector: tuple[str, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    url, received = collector
    monkeypatch.setenv("PINBENCH_OTLP_ENDPOINT", url)
    said: list[str] = []
    lock = _lock(traced.ws, "onnxruntime")
    outcome = run_lockfile(traced.ws, lock, say=said.append, trace="framework")
    spans = []
    for body in received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                spans.extend(ss.spans)
    trace = trace_of(traced.ws, show_run(traced.ws, outcome.id))
    assert f"exported {len(spans)} spans to {url}" in said
    by_id = {s.span_id: s for s in spans}
    (root,) = [s for s in spans if s.name == "pinbench run"]
    attrs = {a.key: a.value.string_value for a in root.attributes}
    assert attrs["pinbench.run_id"] == outcome.id
    assert attrs["pinbench.lockfile"] == lock.digest.hex
    assert attrs["pinbench.trace_level"] == "framework"
    predicts = [s for s in spans if s.name == "predict"]
    assert len(predicts) == trace["pinbench"]["timeline"]["predictions_shown"]
    assert all(by_id[s.parent_span_id] is root for s in predicts)
    ops = [s for s in spans if s.parent_span_id in {p.span_id for p in predicts}]
    assert ops and all(
        by_id[s.parent_span_id].start_time_unix_nano <= s.start_time_unix_nano
        and s.end_time_unix_nano <= by_id[s.parent_span_id].end_time_unix_nano
        for s in ops
    )
    assert len({s.trace_id for s in spans}) == 1


def test_an_unreachable_collector_does_not_fail_the_run(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PINBENCH_OTLP_ENDPOINT", "http://127.0.0.1:9/v1/traces")
    said: list[str] = []
    outcome = run_lockfile(
        traced.ws, _lock(traced.ws, "onnxruntime"), say=said.append, trace="model"
    )
    assert outcome.status == "succeeded"
    assert any(s.startswith("OpenTelemetry export to http://127.0.0.1:9") for s in said)
    assert show_run(traced.ws, outcome.id)["trace_sha256"]


# ---------------------------------------------------------------- laws and tables


@given(
    gaps=st.lists(st.integers(1, 50_000), min_size=1, max_size=30),
    widths=st.lists(st.integers(2_000, 80_000), min_size=30, max_size=30),
    offset=st.integers(-(10**12), 10**12),
    error=st.integers(-20_000, 20_000),
    seed=st.integers(0, 2**32 - 1),
)
@settings(max_examples=150, deadline=None)
def test_alignment_puts_every_event_back_in_its_span(
    gaps: list[int], widths: list[int], offset: int, error: int, seed: int
) -> None:
    """Events issued inside spans, stamped on another clock, with a first estimate of that
    clock's offset that is off by up to 20 µs: alignment contains every one of them."""
    rng = np.random.default_rng(seed)
    starts, ends, t = [], [], 0
    for gap, width in zip(gaps, widths, strict=False):
        t += gap
        starts.append(t)
        t += width
        ends.append(t)
    s, e = np.array(starts, np.int64), np.array(ends, np.int64)
    owner = rng.integers(0, len(starts), 200)
    a = rng.integers(0, e[owner] - s[owner])
    b = rng.integers(a, e[owner] - s[owner] + 1)
    ev_start, ev_end = s[owner] + a + offset, s[owner] + b + offset
    if error and min(gaps) < 2 * abs(error):  # a guess that far off cannot tell spans apart
        error = 0
    got = align(s, e, ev_start, ev_end, offset_ns=offset + error)
    assert got.contained == owner.size
    assert (got.span == owner).all()
    assert (got.start_ns >= s[owner]).all() and (got.end_ns <= e[owner]).all()


US = 1000


def test_runtime_spans_that_outlive_predict_cannot_outvote_a_bracketed_clock() -> None:
    """Issue 34 item 14: a TensorFlow operator ended 28 us after its ``predict`` span. The
    refinement counts events, and a profiler's runtime spans are not all inside pinbench's:
    here three executor spans per call end 25 us after the call returned (the executor
    finishes its bookkeeping after waking the caller). Counted as votes they outnumber the two
    operators and pull the offset 24 us, pushing every first operator out of its span. Bounds
    from anchors stamped between two ``perf_counter_ns`` readings hold the offset to the truth."""
    starts = np.arange(20, dtype=np.int64) * 430 * US
    ends = starts + 400 * US
    events = []
    for s, t in zip(starts.tolist(), ends.tolist(), strict=True):
        events += [(s + 20 * US, s + 150 * US, True), (s + 150 * US, t - 40 * US, True)]
        events += [(s + 30 * US, t + 25 * US, False)] * 3
    offset = 7 * 10**9  # the profiler's clock minus perf_counter_ns
    ev_start = np.array([e[0] for e in events], np.int64) + offset
    ev_end = np.array([e[1] for e in events], np.int64) + offset
    is_op = np.array([e[2] for e in events])
    voted = align(starts, ends, ev_start, ev_end, offset_ns=offset, resolution_ns=US)
    assert voted.shift_ns == 24 * US and (voted.span[is_op] < 0).sum() == 20  # the failure
    bounds = (offset - 400, offset + 400)  # an anchor's bracket
    held = align(starts, ends, ev_start, ev_end, offset_ns=offset, resolution_ns=US, bounds=bounds)
    assert held.offset_ns == offset and (held.span[is_op] >= 0).all()
    assert (held.span[~is_op] < 0).all()  # what outlives its span is said to, not moved in
    off_estimate = align(
        starts, ends, ev_start, ev_end, offset_ns=offset + 15 * US, resolution_ns=US, bounds=bounds
    )
    assert off_estimate.offset_ns == offset + 400  # an estimate outside the bounds moved in


#        stamps (profiler clock)    readings (perf_counter_ns)  bounds      why
BRACKETS = [
    ([(110, 120)],              [(5, 30)],                  (90, 105),  "one anchor"),
    ([(110, 120), (210, 214)],  [(5, 30), (108, 118)],      (96, 102),  "the tightest of both"),
    ([(110, 120)],              [],                         None,       "not paired"),
    ([],                        [],                         None,       "no anchor"),
    ([(110, 120), (500, 510)],  [(5, 30), (105, 112)],      None,       "bounds apart"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("stamps", "readings", "bounds"), [b[:3] for b in BRACKETS], ids=[b[3] for b in BRACKETS]
)
def test_bracketed_offset(
    stamps: list[tuple[int, int]],
    readings: list[tuple[int, int]],
    bounds: tuple[int, int] | None,
) -> None:
    assert bracketed_offset(stamps, readings) == bounds


@pytest.mark.parametrize(
    ("lo", "hi", "prefer", "best"),
    [
        ([0], [10], 5, 5),  # inside the only interval: not moved
        ([0], [10], 50, 10),  # the nearest point of it
        ([0, 5], [10, 20], 0, 5),  # covered by both
        ([0, 100], [10, 110], 40, 10),  # a tie: the nearer
        ([], [], 7, 7),  # no constraint
    ],
)
def test_best_point(lo: list[int], hi: list[int], prefer: int, best: int) -> None:
    assert best_point(np.array(lo, np.int64), np.array(hi, np.int64), prefer) == best


def test_op_table_numbers_a_repeated_operator_per_prediction() -> None:
    one = [
        (0, "aten::conv2d", "aten::conv2d", 10),
        (20, "aten::relu", "aten::relu", 1),
        (30, "aten::conv2d", "aten::conv2d", 30),
    ]
    rows = op_table([one, one])
    assert rows == [
        OpRow("aten::conv2d #2", "aten::conv2d", 2, 60),
        OpRow("aten::conv2d", "aten::conv2d", 2, 20),
        OpRow("aten::relu", "aten::relu", 2, 2),
    ]
    assert rows[0].mean_ns == 30


@pytest.mark.parametrize(
    ("op", "kind"),
    [
        ("Conv", "convolution"),
        ("aten::conv2d", "convolution"),
        ("_MklNativeFusedConv2D", "convolution"),
        ("Gemm", "matmul"),
        ("aten::addmm", "matmul"),
        ("aten::linear", "matmul"),
        ("MaxPool", "pooling"),
        ("aten::max_pool2d", "pooling"),
        ("ReLU", "activation"),
        ("BiasAdd", "elementwise"),
        ("Flatten", "reshape"),
        ("aten::to", "conversion"),
        ("TopK", "other"),
    ],
)
def test_operator_categories(op: str, kind: str) -> None:
    assert category(op) == kind
