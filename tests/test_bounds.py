"""Every number of a request, a manifest, an operator or training spec and an API body is
bounded where it is parsed (``pinbench.bounds``): at each bound accepted, one step beyond
refused with "FIELD must be between A and B, got X", through the library, the CLI and a real
server (issue 34 item 6: a request took 10^12 threads from any run token)."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinbench import bounds as b
from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.registry.lockfile import Lockfile, LockfileError
from pinbench.registry.manifest import json_schemas, parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.request import RequestError, parse_request
from pinbench.specs.operators.schema import SIZE
from tests.apiserver import Server
from tests.helpers import DIGITS, Cli, Home, in_process_cli, published_home
from tests.test_api import REQUEST
from tests.test_limits import recorded

SHA = "ab" * 32
ROOT = Path(__file__).resolve().parents[1]


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with ``value`` at the dotted ``path`` (list items by index; missing
    mappings made)."""
    out = copy.deepcopy(doc)
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    node: Any = out
    for key in keys[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    node[keys[-1]] = value
    return out


def _field(path: str) -> str:
    """A dotted path as the message names it: ``inputs[0].shape[1]``."""
    return re.sub(r"\.(\d+)", r"[\1]", path)


def _edges(bound: b.Bound, *, integer: bool) -> tuple[list[Any], list[Any]]:
    """Values at the bounds (or just inside an open end) and one step beyond each end."""

    def step(x: int | float, up: bool) -> int | float:
        if integer:
            return int(x) + (1 if up else -1)
        return math.nextafter(float(x), math.inf if up else -math.inf)

    def kind(x: int | float) -> int | float:
        return int(x) if integer else float(x)

    inside = [
        step(bound.low, True) if bound.low_open else kind(bound.low),
        step(bound.high, False) if bound.high_open else kind(bound.high),
    ]
    beyond = [
        kind(bound.low) if bound.low_open else step(bound.low, False),
        kind(bound.high) if bound.high_open else step(bound.high, True),
    ]
    return inside, beyond


def _cases(
    base: dict[str, Any],
    path: str,
    field: str,
    bound: b.Bound,
    *,
    integer: bool,
    beyond: bool,
    ends: tuple[str, ...] = ("low", "high"),
) -> list[Any]:
    """``(data, field, bound, value)`` cases: ``base`` with, at ``path``, the value at each of
    ``ends`` of ``bound`` (``beyond``: one step past it)."""
    inside, outside = _edges(bound, integer=integer)
    values = zip(("low", "high"), outside if beyond else inside, strict=True)
    return [
        pytest.param(_set(base, path, value), field, bound, value, id=f"{path} {end}")
        for end, value in values
        if end in ends
    ]


# ---------------------------------------------------------------- requests

BASE: dict[str, Any] = {"model": "vision/m@1", "dataset": "d@1"}
TRAIN: dict[str, Any] = {**BASE, "training": {"validation": "v@1"}}
OPERATOR: dict[str, Any] = {
    "framework": "onnxruntime@*",
    "operator": {"op": "matmul", "params": {"m": 2, "n": 2, "k": 2}},
}
CONV = {"n": 1, "c": 1, "h": 3, "w": 3, "out_channels": 1, "kernel_h": 1, "kernel_w": 1}

#           path                          bound                  integer  base      message field
REQUEST_FIELDS = [
    ("threads",                        b.THREADS,             True,  BASE,     None),
    ("batch_size",                     b.BATCH_SIZE,          True,  BASE,     None),
    ("scenario.min_duration_ms",       b.MIN_DURATION_MS,     True,  BASE,     None),
    ("scenario.min_query_count",       b.QUERY_COUNT,         True,  BASE,     None),
    ("scenario.max_query_count",       b.QUERY_COUNT,         True,  BASE,     None),
    ("scenario.sample_count",          b.SAMPLE_COUNT,        True,  BASE,     None),
    ("scenario.samples_per_query",     b.SAMPLES_PER_QUERY,   True,  BASE,     None),
    ("scenario.target_qps",            b.TARGET_QPS,          False, BASE,     None),
    ("scenario.target_latency_ms",     b.TARGET_LATENCY_MS,   False, BASE,     None),
    ("scenario.percentile",            b.PERCENTILE,          False, BASE,     None),
    ("scenario.seed",                  b.SEED,                True,  BASE,     None),
    ("limits.memory_mb",               b.MEMORY_MB,           True,  BASE,     None),
    ("limits.cpus",                    b.CPUS,                False, BASE,     None),
    ("limits.timeout_s",               b.TIMEOUT_S,           True,  BASE,     None),
    ("training.learning_rate",         b.LEARNING_RATE,       False, TRAIN,    "learning_rate"),
    ("training.weight_decay",          b.WEIGHT_DECAY,        False, TRAIN,    "weight_decay"),
    ("training.batch_size",            b.TRAINING_BATCH_SIZE, True,  TRAIN,    "batch_size"),
    ("training.epochs",                b.EPOCHS,              True,  TRAIN,    "epochs"),
    ("training.target_top1",           b.TARGET_TOP1,         False, TRAIN,    "target_top1"),
    ("training.seed",                  b.TRAINING_SEED,       True,  TRAIN,    "seed"),
    ("operator.samples",               b.OPERATOR_SAMPLES,    True,  OPERATOR, "samples"),
    ("operator.warmup",                b.OPERATOR_WARMUP,     True,  OPERATOR, "warmup"),
    ("operator.seed",                  b.SEED,                True,  OPERATOR, "matmul: seed"),
    ("operator.params.m",              SIZE,                  True,  OPERATOR, "matmul: m"),
]  # fmt: skip
TOO_LARGE = {("operator.params.m", "high")}
"""At its bound yet refused by another cap: a 2^28-row matmul holds too many elements."""


def _request_cases(*, beyond: bool) -> list[Any]:
    cases = []
    for path, bound, integer, base, field in REQUEST_FIELDS:
        ends = tuple(e for e in ("low", "high") if beyond or (path, e) not in TOO_LARGE)
        shown = field or _field(path)
        cases += _cases(base, path, shown, bound, integer=integer, beyond=beyond, ends=ends)
    return cases


@pytest.mark.parametrize(("data", "field", "bound", "value"), _request_cases(beyond=False))
def test_a_request_at_each_bound_is_accepted(
    data: dict[str, Any], field: str, bound: b.Bound, value: Any
) -> None:
    parse_request(data)


@pytest.mark.parametrize(("data", "field", "bound", "value"), _request_cases(beyond=True))
def test_a_request_beyond_each_bound_is_refused_naming_field_bounds_and_value(
    data: dict[str, Any], field: str, bound: b.Bound, value: Any
) -> None:
    with pytest.raises(RequestError) as info:
        parse_request(data)
    assert bound.refusal(field, value) in str(info.value)


def test_momentum_and_a_sweep_point_are_bounded_too() -> None:
    sgd = {**TRAIN, "training": {"validation": "v@1", "optimizer": "sgd", "momentum": 0.0}}
    parse_request(sgd)
    with pytest.raises(RequestError, match=re.escape("momentum must be between 0 and 1")):
        parse_request(_set(sgd, "training.momentum", 1.0))
    parse_request({**BASE, "batch_size": [1, 65_536]})
    with pytest.raises(RequestError) as info:
        parse_request({**BASE, "batch_size": [1, 65_537]})
    assert "batch_size[1] must be between 1 and 65536, got 65537" in str(info.value)


@pytest.mark.parametrize(
    ("params", "field", "value"),
    [
        ({**CONV, "stride": 2**28 + 1}, "stride", 2**28 + 1),
        ({**CONV, "dilation": 0}, "dilation", 0),
        ({**CONV, "padding": -1}, "padding", -1),
    ],
)
def test_operator_parameters_are_bounded(params: dict[str, Any], field: str, value: int) -> None:
    at = {**CONV, "stride": 2**28, "dilation": 2**28}  # accepted: a 1x1 kernel, one output
    parse_request(_set(OPERATOR, "operator", {"op": "conv2d", "params": at}))
    with pytest.raises(RequestError) as info:
        parse_request(_set(OPERATOR, "operator", {"op": "conv2d", "params": params}))
    assert f"conv2d: {field} must be between" in str(info.value)
    assert f"got {value}" in str(info.value)


def test_operator_eps_and_dimensions_are_bounded() -> None:
    norm = {"op": "layer_norm", "params": {"shape": [2, 4], "normalized_shape": [4], "eps": 1}}
    parse_request(_set(OPERATOR, "operator", norm))
    with pytest.raises(RequestError, match=re.escape("eps must be between 0 and 1, got 1.5")):
        parse_request(_set(_set(OPERATOR, "operator", norm), "operator.params.eps", 1.5))
    with pytest.raises(RequestError) as info:
        parse_request(_set(OPERATOR, "operator", {"op": "relu", "params": {"shape": [2, 0]}}))
    assert "relu: shape must be between 1 and 268435456 (each dimension), got 0" in str(info.value)


#   scenario                                                               why
PLANS = [
    ({"name": "Server", "target_qps": 10_000_000},                          "1 s at 10M/s"),
    ({"name": "Server", "target_qps": 10_000_000, "min_duration_ms": 86_400_000}, "24 h at it"),
    ({"name": "Server", "target_qps": 115.75, "min_duration_ms": 86_400_000}, "24 h, 116/s"),
    ({"name": "MultiStream", "min_query_count": 152, "samples_per_query": 65_536}, "152 x 64k"),
    ({"name": "MultiStream", "min_query_count": 153, "samples_per_query": 65_536}, "153 x 64k"),
    ({"name": "MultiStream", "preset": "mlperf"},                       "MLPerf's 270,336 x 8"),
]  # fmt: skip


def _planned(scenario: dict[str, Any]) -> int:
    """What LoadGen generates for a scenario before a model is measured, computed here as
    its detail log counts (``generated_query_count`` x samples per query)."""
    seconds = scenario.get("min_duration_ms", 1000) / 1000
    if scenario["name"] == "Server":
        return max(100, int(seconds * scenario["target_qps"]))
    if scenario.get("preset") == "mlperf":
        return 270_336 * 8
    return int(scenario["min_query_count"] * scenario["samples_per_query"])


@pytest.mark.parametrize("scenario", [p[0] for p in PLANS], ids=[p[1] for p in PLANS])
def test_fields_loadgen_multiplies_are_bounded_together(scenario: dict[str, Any]) -> None:
    """Each field within its bound, yet together they plan more samples than LoadGen may hold
    (it generates every one before the first query: 24 h of Server at 10M/s asked it for
    864 billion, hundreds of GB a second, until the machine ran out)."""
    planned = _planned(scenario)
    if planned <= b.PLANNED_SAMPLES.high:
        parse_request({**BASE, "scenario": scenario})
        return
    with pytest.raises(RequestError) as info:
        parse_request({**BASE, "scenario": scenario})
    assert f"plans {planned:,} samples" in str(info.value)
    assert f"at most {b.PLANNED_SAMPLES.high:,}" in str(info.value)


def test_a_run_whose_model_is_fast_for_its_duration_fails_before_loadgen_starts(
    tmp_path: Path,
) -> None:
    """24 h of SingleStream is a valid request; at 1 us a query LoadGen would plan 2 x 86,400 s
    / 1 us of queries. The run fails naming it before LoadGen generates any (no log)."""
    import numpy as np

    from pinbench.registry.request import Scenario
    from pinbench.worker.scenarios import ScenarioError, run_scenario

    calls: list[int] = []

    def predict(batch: Any) -> Any:
        calls.append(1)
        return {"y": batch}

    scenario = Scenario(name="SingleStream", min_duration_ms=86_400_000)
    with pytest.raises(ScenarioError) as info:
        run_scenario(
            predict,
            np.zeros((4, 1), dtype=np.float32),
            scenario,
            batch_size=1,
            expected_latency_ns=1_000,
            log_dir=tmp_path,
        )
    assert f"plans {2 * 86_400 * 10**6:,} samples" in str(info.value)
    assert "lower min_duration_ms" in str(info.value)
    assert not calls and not list(tmp_path.iterdir())


# ---------------------------------------------------------------- manifests

MODEL: dict[str, Any] = {
    "kind": "model",
    "name": "vision/bounded",
    "version": "1.0.0",
    "format": "onnx",
    "framework": {"name": "onnxruntime"},
    "files": [{"path": "m.onnx", "sha256": SHA, "size": 10}, {"path": "tok.json", "sha256": SHA}],
    "inputs": [{"name": "x", "shape": [3, 8, 8], "steps": []}],
    "outputs": [{"name": "y", "steps": []}],
}
DATASET: dict[str, Any] = {
    "kind": "dataset",
    "name": "bounded",
    "version": "1.0.0",
    "files": [{"path": "x.npy", "sha256": SHA}, {"path": "y.npy", "sha256": SHA}],
    "labels": {"format": "class-index-npy", "path": "y.npy"},
}
MASKS: dict[str, Any] = {
    "kind": "dataset",
    "name": "bounded-masks",
    "version": "1.0.0",
    "task": "segmentation",
    "files": [{"path": "img/a.png", "sha256": SHA}, {"path": "masks/a.png", "sha256": SHA}],
    "data": {"format": "images", "path": "img"},
    "labels": {"format": "masks", "path": "masks", "classes": 21},
}
TEXT = _set(MODEL, "inputs.0", {"name": "ids", "type": "text", "element_type": "int64",
            "steps": [{"tokenize": {"tokenizer": "tok.json", "max_length": 8}}]})  # fmt: skip
DETECT = _set(MODEL, "outputs.0", {"name": "boxes", "type": "detection",
              "detection": {"layout": "yolov8", "nms": {}}})  # fmt: skip
SEPARATE = _set(
    MODEL,
    "outputs.0",
    {
        "name": "boxes",
        "type": "detection",
        "detection": {
            "layout": "separate",
            "box_format": "xyxy",
            "scores": 1,
            "masks": 2,
            "mask_kind": "box",
        },
    },
)
SEGMENT = _set(MODEL, "outputs.0", {"name": "mask", "type": "segmentation",
               "segmentation": {"form": "probability"}})  # fmt: skip


def _step(step: dict[str, Any]) -> dict[str, Any]:
    return _set(MODEL, "inputs.0.steps", [step])


STEP = "inputs.0.steps.0"
RESIZE, CROP = _step({"resize": {"size": [8, 8]}}), _step({"crop": {"size": [8, 8]}})
LONGEST, PAD = _step({"max_dimension": {"size": 8}}), _step({"pad": {}})
LETTERBOX = _step({"letterbox": {"size": [8, 8]}})
MULTIPLE = _step({"resize_multiple": {}})
MEAN, STD = _step({"normalize": {"mean": [0.0]}}), _step({"normalize": {"std": [1.0]}})
SCALE = _step({"normalize": {"scale": 1.0}})
SOFTMAX = _set(MODEL, "outputs.0.steps", [{"softmax": {}}])
TOPK = _set(MODEL, "outputs.0.steps", [{"topk": {}}])
INT, FLOAT = True, False

#   base       path                                         bound              integer
MANIFEST_FIELDS = [
    (MODEL,     "files.0.size",                             b.FILE_SIZE,       INT),
    (MODEL,     "inputs.0.shape.1",                         b.DIMENSION,       INT),
    (MODEL,     "inputs.0.name",                            b.PORT_INDEX,      INT),
    (MODEL,     "outputs.0.name",                           b.PORT_INDEX,      INT),
    (RESIZE,    f"{STEP}.resize.size.0",                    b.PIXELS,          INT),
    (CROP,      f"{STEP}.crop.size.1",                      b.PIXELS,          INT),
    (LONGEST,   f"{STEP}.max_dimension.size",               b.PIXELS,          INT),
    (LETTERBOX, f"{STEP}.letterbox.size.0",                 b.PIXELS,          INT),
    (LETTERBOX, f"{STEP}.letterbox.value",                  b.PAD_VALUE,       FLOAT),
    (MULTIPLE,  f"{STEP}.resize_multiple.multiple",         b.MULTIPLE,        INT),
    (MULTIPLE,  f"{STEP}.resize_multiple.limit_side",       b.PIXELS,          INT),
    (PAD,       f"{STEP}.pad.value",                        b.PAD_VALUE,       FLOAT),
    (MEAN,      f"{STEP}.normalize.mean.0",                 b.NORMALIZE,       FLOAT),
    (STD,       f"{STEP}.normalize.std.0",                  b.NORMALIZE,       FLOAT),
    (SCALE,     f"{STEP}.normalize.scale",                  b.NORMALIZE,       FLOAT),
    (TEXT,      f"{STEP}.tokenize.max_length",              b.MAX_LENGTH,      INT),
    (TEXT,      f"{STEP}.tokenize.doc_stride",              b.DOC_STRIDE,      INT),
    (TEXT,      f"{STEP}.tokenize.max_query_length",        b.QUERY_TOKENS,    INT),
    (SOFTMAX,   "outputs.0.steps.0.softmax.axis",           b.AXIS,            INT),
    (TOPK,      "outputs.0.steps.0.topk.k",                 b.TOP_K,           INT),
    (DETECT,    "outputs.0.detection.nms.iou",              b.FRACTION,        FLOAT),
    (DETECT,    "outputs.0.detection.nms.max_detections",   b.MAX_DETECTIONS,  INT),
    (DETECT,    "outputs.0.detection.score_threshold",      b.FRACTION,        FLOAT),
    (SEPARATE,  "outputs.0.detection.mask_threshold",       b.FRACTION,        FLOAT),
    (SEPARATE,  "outputs.0.detection.scores",               b.PORT_INDEX,      INT),
    (SEGMENT,   "outputs.0.segmentation.threshold",         b.FRACTION,        FLOAT),
    (DATASET,   "labels.classes",                           b.CLASSES,         INT),
    (DATASET,   "samples",                                  b.SAMPLES,         INT),
]  # fmt: skip


def _manifest_cases(*, beyond: bool) -> list[Any]:
    cases = []
    for base, path, bound, integer in MANIFEST_FIELDS:
        cases += _cases(base, path, _field(path), bound, integer=integer, beyond=beyond)
    # Bounds checked after parsing, in the same words: what another field sets (masks:
    # fewer classes; ignore_index no class index), and integers among free-form attributes.
    dependent = [
        (MASKS, "labels.classes", b.MASK_CLASSES, ("high",)),
        (MASKS, "labels.ignore_index", b.between(21, 65_535, ""), ("low", "high")),
        (MODEL, "attributes.params", b.ATTRIBUTE_INT, ("low", "high")),
    ]
    for base, path, bound, ends in dependent:
        cases += _cases(base, path, path, bound, integer=True, beyond=beyond, ends=ends)
    return cases


@pytest.mark.parametrize(("data", "field", "bound", "value"), _manifest_cases(beyond=False))
def test_a_manifest_at_each_bound_is_accepted(
    data: dict[str, Any], field: str, bound: b.Bound, value: Any
) -> None:
    parse_manifest(data)


@pytest.mark.parametrize(("data", "field", "bound", "value"), _manifest_cases(beyond=True))
def test_a_manifest_beyond_each_bound_is_refused_naming_field_bounds_and_value(
    data: dict[str, Any], field: str, bound: b.Bound, value: Any
) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, source="m.yaml")
    assert bound.refusal(field, value) in str(info.value)


def test_the_json_schemas_carry_the_bounds() -> None:
    """Editors see them: each bounded field's schema has its minimum and maximum."""
    text = json.dumps(json_schemas()["model"])
    assert '"minimum": 1, "maximum": 65536' in text  # tokenize.max_length
    assert '"minimum": 0, "maximum": 255' in text  # pad values
    assert '"exclusiveMinimum"' not in text  # no open end in a manifest


# ---------------------------------------------------------------- lockfiles


def test_a_lockfile_beyond_a_bound_is_refused(tmp_path: Path, home: Home) -> None:
    """A lockfile's own copies of the request's numbers are bounded as the request's are: an
    edited lockfile (made canonical again) asking for 10^12 threads is refused on reading."""
    lock = _locked(home)
    data = json.loads(lock.canonical)
    data["threads"] = data["request"]["threads"] = 10**12
    with pytest.raises(LockfileError) as info:
        Lockfile.from_bytes(canonical_json(data))
    assert "threads must be between 1 and 1024, got 1000000000000" in str(info.value)


# ---------------------------------------------------------------- through the CLI


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Home]:
    with published_home(tmp_path_factory.mktemp("bounds"), catalog_dir) as h:
        yield h


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _locked(home: Home) -> Lockfile:
    from pinbench.registry import service

    return service.lock_points(home.ws, parse_request({**DIGITS, "threads": 4}))[0][0]


#            path                          bound                integer
CLI_FIELDS = [
    ("threads",                        b.THREADS,           True),
    ("batch_size",                     b.BATCH_SIZE,        True),
    ("scenario.min_duration_ms",       b.MIN_DURATION_MS,   True),
    ("scenario.sample_count",          b.SAMPLE_COUNT,      True),
    ("scenario.percentile",            b.PERCENTILE,        False),
    ("scenario.seed",                  b.SEED,              True),
    ("limits.cpus",                    b.CPUS,              False),
    ("limits.timeout_s",               b.TIMEOUT_S,         True),
]  # fmt: skip


@pytest.mark.parametrize(("path", "bound", "integer"), CLI_FIELDS, ids=[c[0] for c in CLI_FIELDS])
def test_pinbench_lock_takes_each_bound_and_refuses_beyond_writing_nothing(
    cli: Cli, home: Home, tmp_path: Path, path: str, bound: b.Bound, integer: bool
) -> None:
    inside, outside = _edges(bound, integer=integer)
    request = tmp_path / "request.yaml"
    for value in inside:
        request.write_text(yaml.safe_dump(_set(DIGITS, path, value)))
        result = cli("lock", str(request), "-o", str(tmp_path / "ok.lock"), "--force")
        assert result.code == 0, result.err
    before = recorded_here(home)
    for value in outside:
        request.write_text(yaml.safe_dump(_set(DIGITS, path, value)))
        result = cli("lock", str(request), "-o", str(tmp_path / "refused.lock"))
        assert result.code == 1
        assert bound.refusal(_field(path), value) in " ".join(result.err.split())
        assert "Traceback" not in result.err
        assert not (tmp_path / "refused.lock").exists()
    assert recorded_here(home) == before


def recorded_here(home: Home) -> int:
    from sqlalchemy import func, select

    from pinbench.db.models import Lockfile as LockfileRow

    with home.ws.transaction() as session:
        return session.scalar(select(func.count()).select_from(LockfileRow)) or 0


def test_pinbench_publish_refuses_a_manifest_beyond_a_bound(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(b"not read: refused before")
    manifest = tmp_path / "model.yaml"
    manifest.write_text(yaml.safe_dump(_step({"resize": {"size": [100_000, 8]}})))
    result = cli("publish", str(manifest))
    assert result.code == 1
    message = "inputs[0].steps[0].resize.size[0] must be between 1 and 16384, got 100000"
    assert message in " ".join(result.err.split())


# ---------------------------------------------------------------- through a real server
# (``server``: the module's own, tests/conftest.py)


def test_a_run_token_asking_for_a_trillion_threads_gets_400_and_nothing_is_queued(
    server: Server,
) -> None:
    """``other`` holds the run scope and no namespace: any run token."""
    before = recorded(server)
    with server.client("other") as c:
        response = c.post("/api/v1/lockfiles", json={**REQUEST, "threads": 10**12})
        assert response.status_code == 400, response.text
        assert "threads must be between 1 and 1024, got 1000000000000" in response.json()["detail"]
        at_bound = c.post("/api/v1/lockfiles", json={**REQUEST, "threads": 1024})
        assert at_bound.status_code == 201, at_bound.text
        # the same through a lockfile's bytes, made canonical again after the edit
        digest = at_bound.json()["points"][0]["digest"]
        data = c.get(f"/api/v1/lockfiles/{digest}").json()
        data["threads"] = data["request"]["threads"] = 10**12
        edited = canonical_json(data)
        put = c.put(f"/api/v1/lockfiles/{Digest.of_bytes(edited).hex}", content=edited)
        assert put.status_code == 400, put.text
        assert "threads must be between 1 and 1024" in put.json()["detail"]
        run = c.post("/api/v1/runs", json={"lockfile": Digest.of_bytes(edited).hex})
        assert run.status_code in (400, 404), run.text
        retries = c.post("/api/v1/runs/on", json={"lockfile": digest, "on": ["all"], "retries": 4})
        assert retries.status_code == 400, retries.text
        assert "retries must be between 0 and 3, got 4" in retries.json()["detail"]
    after = recorded(server)
    assert after[2] == before[2]  # no run
    assert after[1] == before[1] + 1  # the one lockfile at the bound


# ---------------------------------------------------------------- the table, documented


def test_the_docs_list_every_bound() -> None:
    """docs/running.md's "Bounds" table: one row per ``bounds.TABLE`` entry, the same numbers."""
    page = (ROOT / "docs" / "running.md").read_text()
    section = page.split("## Bounds", 1)[1].split("\n#", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| `")]
    documented = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        documented[cells[0].strip("`")] = cells[1]
    assert documented == {name: bound.text().removeprefix("between ") for name, bound in
                          b.TABLE.items()}  # fmt: skip


def test_user_errors_for_bounds_are_user_errors() -> None:
    """Refusals are the caller's fault (exit 1, HTTP 400), never a crash."""
    for call in (
        lambda: parse_request({**BASE, "threads": 0}),
        lambda: parse_manifest(_set(MODEL, "files.0.size", -1)),
    ):
        with pytest.raises(UserError):
            call()
