"""The defaults give a VALID run for a model of any speed; a request that asks for less is told
before it runs (issue 73, item 10: ``registry.scenario_notes``).

LoadGen's early stopping needs 64 queries (its summary: "Processed at least 64 queries") in
SingleStream, MultiStream and Server; a run capped below that, or below its own minimum, is
INVALID. The notes are checked against LoadGen's own verdict on a real run of a 10 µs model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pinbench.catalog import frameworks
from pinbench.registry.request import Scenario
from pinbench.registry.scenario_notes import early_stopping_queries, invalid_ahead
from tests.helpers import Cli, dump


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({}, []),  # the defaults: 1 s and 100 queries
        ({"name": "MultiStream"}, []),
        ({"name": "Offline", "min_query_count": 1}, []),  # no early stopping in Offline
        ({"mode": "accuracy", "min_query_count": 1}, []),  # no verdict
        ({"min_query_count": 16}, ["min_query_count 16 is below the 64 queries"]),
        ({"name": "Server", "target_qps": 10, "min_query_count": 63}, []),  # Server needs 44
        ({"name": "Server", "target_qps": 10, "min_query_count": 40}, ["40 is below the 44"]),
        ({"min_query_count": 64}, []),
        ({"max_query_count": 32}, ["max_query_count 32 is below min_query_count 100", "32 stops"]),
        ({"min_query_count": 10, "max_query_count": 80}, ["min_query_count 10 is below"]),
        ({"name": "Offline", "min_query_count": 5, "max_query_count": 2}, ["is below"]),
    ],
)
def test_what_a_scenario_asks_for_that_loadgen_calls_invalid_is_named(
    settings: dict[str, object], said: list[str]
) -> None:
    import msgspec

    notes = invalid_ahead(msgspec.convert(settings, Scenario))
    assert len(notes) == len(said)
    for note, part in zip(notes, said, strict=True):
        assert part in note and "INVALID" in note


@pytest.mark.parametrize(
    ("name", "percentile", "queries"),
    [
        ("SingleStream", 90, 64),  # LoadGen's summary: "Processed at least 64 queries"
        ("SingleStream", 99, 662),  # "would need to process at least 662 total queries"
        ("MultiStream", 50, 11),
        ("Server", 90, 44),  # with no query over target_latency_ms
        ("Server", 99, 459),
    ],
)
def test_the_queries_early_stopping_needs_are_loadgens(
    name: str, percentile: float, queries: int
) -> None:
    assert early_stopping_queries(name, percentile) == queries


def _fast_model(cli: Cli, root: Path) -> None:
    """A 4x3 MatMul in ONNX (about 10 µs a query across LoadGen) and 64 labelled samples."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.eye(4, 3, dtype=np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["logits"])],
        "fast",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(root / "fast.onnx"))
    rng = np.random.default_rng(73)
    np.save(root / "x.npy", rng.normal(size=(64, 4)).astype(np.float32))
    np.save(root / "y.npy", rng.integers(0, 3, size=64).astype(np.int64))
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(root, "onnxruntime"))).code == 0
    made = cli("manifest", "model", "fast.onnx", "--name", "test/fast", "-o", "m.yaml")
    assert made.code == 0, made.err
    text = (
        (root / "m.yaml")
        .read_text()
        .replace("- name: logits\n", "- name: logits\n  type: classification\n")
    )
    (root / "m.yaml").write_text(text)
    args = ("manifest", "dataset", "x.npy", "--labels", "y.npy", "--name", "test/x", "-o", "d.yaml")
    assert cli(*args).code == 0
    for manifest in ("d.yaml", "m.yaml"):
        published = cli("publish", manifest)
        assert published.code == 0, published.err


def test_the_defaults_give_a_valid_run_and_a_short_request_is_told_before_it_runs(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _fast_model(cli, tmp_path)
    runs = {}
    for name, scenario in (
        ("defaults", {}),
        ("short", {"min_duration_ms": 0, "min_query_count": 16}),
    ):
        request = {"model": "test/fast@1", "dataset": "test/x@1", "scenario": scenario}
        locked = cli("lock", str(dump(Path(f"{name}.yaml"), request)), "-o", f"{name}.lock")
        assert locked.code == 0, locked.err
        told = [line for line in locked.err.splitlines() if line.startswith("note: ")]
        ran = cli("run", f"{name}.lock", "--runner", "local", "--json")
        assert ran.code == 0, ran.err
        runs[name] = (told, ran.err, json.loads(ran.out))
    told, said, shown = runs["defaults"]
    assert told == [] and "note: " not in said
    assert shown["details"]["loadgen"]["result_validity"] == "VALID"
    told, said, shown = runs["short"]
    (note,) = told
    assert "min_query_count 16 is below the 64 queries" in note
    assert said.splitlines() == [note]  # said again as the run starts (--json: notes only)
    loadgen = shown["details"]["loadgen"]
    assert loadgen["result_validity"] == "INVALID"  # as told: LoadGen's own verdict
    (why,) = [r for r in loadgen["invalid_reasons"] if "early stopping not met" in r]
    assert "Need to process at least 64 queries" in why  # the floor the note named
