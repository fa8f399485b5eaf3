"""Network transformations (L1) in training runs end to end: ``training.transform`` pinned in
the lockfile, validated against the untransformed training before the run trains with it,
recorded (errors, tolerance, time, peak memory) and shown in the report's L1 table; bad input
refused with nothing locked or recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinbench import reports
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.registry.verify import check_against_registry
from pinbench.reports.transforms import HEAD
from tests.helpers import Cli, Home, in_process_cli, published_home
from tests.test_training_runs import TORCH, TRAINING, _counts, _request, quiet


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("transform-runs")
    with published_home(root, cnn_catalog_dir) as home:
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _lock(home: Home, **transform: Any) -> Lockfile:
    request = _request(TORCH, "torch", transform=transform)
    return service.lock(home.ws, parse_request(request))[0]


@pytest.fixture(scope="module")
def micro_run(home: Home) -> dict[str, Any]:
    """Batches of 32 in 4 micro-batches, validated over 3 steps, then trained to 0.9."""
    outcome = run_lockfile(home.ws, _lock(home, micro_batches=4), runner="local", say=quiet)
    return show_run(home.ws, outcome.id, nested=True)


def test_the_lockfile_pins_the_transform_and_leaves_it_out_when_unset(home: Home) -> None:
    lock = _lock(home, micro_batches=4)
    data = json.loads(lock.canonical)
    assert data["training"]["transform"] == {
        "micro_batches": 4,
        "graph_optimization": None,
        "steps": 3,
    }
    assert data["request"]["training"]["transform"]["micro_batches"] == 4
    check_against_registry(home.ws, lock)
    assert Lockfile.from_bytes(lock.canonical).digest == lock.digest
    plain = service.lock(home.ws, parse_request(_request(TORCH, "torch")))[0]
    plain_data = json.loads(plain.canonical)
    assert "transform" not in plain_data["training"]  # earlier lockfiles keep their digests
    assert "transform" not in plain_data["request"]["training"]
    assert plain.digest != lock.digest


def test_a_micro_batched_run_records_its_validation_and_trains(
    micro_run: dict[str, Any],
) -> None:
    assert micro_run["status"] == "succeeded", micro_run["error"]
    t = micro_run["details"]["transform"]
    c = t["comparison"]
    assert t["transform"] == "micro_batches=4" and t["framework"] == "torch"
    assert t["compared"] == "weights after 3 steps"
    assert c["valid"] is True and c["dtype"] == "float32"
    assert 0 <= c["max_abs_err"] <= c["atol"]
    assert t["peak_bytes"] < t["reference_peak_bytes"]  # a quarter of the activations
    m = micro_run["metrics"]
    assert m["transform_max_abs_err"] == c["max_abs_err"]
    assert m["transform_l2_err"] == c["l2_err"]
    assert m["transform_peak_bytes"] == t["peak_bytes"]
    assert m["transform_time_s"] == t["time_s"] > 0
    assert "time_to_accuracy_s" in m  # and the training ran, micro-batched, to its target


def test_the_report_has_an_l1_table(home: Home, micro_run: dict[str, Any]) -> None:
    text = reports.render(reports.gather(home.ws, [micro_run["id"]]), "md")[1].decode()
    section = text.split("## Network transformations (L1)", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("| micro_batches=4"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    t = micro_run["details"]["transform"]
    assert cells[:3] == ["micro_batches=4", "torch", "weights after 3 steps"]
    assert cells[3] == format(t["comparison"]["max_abs_err"], ".2e")
    assert cells[6] == "✓"
    assert cells[9] == format(t["peak_bytes"] / 1024, ",.1f")
    page = reports.render(reports.gather(home.ws, [micro_run["id"]]), "html")[1].decode()
    assert '<table class="grid" id="transforms-table">' in page
    assert "".join(f"<th>{h}</th>" for h in HEAD) in page  # the template's head is HEAD
    assert "<tr><th>micro_batches=4</th><td>torch</td><td>weights after 3 steps</td>" in page


MICRO = "training.transform.micro_batches"


@pytest.mark.parametrize(
    ("transform", "framework", "message"),
    [
        ({"micro_batches": 3}, "torch", "transform.micro_batches 3 does not divide batch_size 32"),
        ({"micro_batches": 0}, "torch", f"{MICRO} must be between 1 and 65536, got 0"),
        ({"micro_batches": -1}, "torch", f"{MICRO} must be between 1 and 65536, got -1"),
        ({"micro_batches": 2**40}, "torch", f"{MICRO} must be between 1 and 65536, got 1099511"),
        ({"micro_batches": 64}, "torch", "transform.micro_batches 64 does not divide batch_size"),
        ({"fold_constants": True}, "torch", "unknown field `fold_constants`"),
        ({"graph_optimization": "max"}, "torch", "got 'max' - at `$.training.transform.graph_opt"),
        ({"graph_optimization": "all"}, "torch", "an ONNX inference transformation"),
        ({"micro_batches": 2}, "tensorflow", "training.transform (micro-batching) runs on torch"),
    ],
)
def test_lock_refuses_a_bad_transform_and_records_nothing(
    home: Home, cli: Cli, tmp_path: Path, transform: dict[str, Any], framework: str, message: str
) -> None:
    data = _request(TORCH, framework, transform=transform)
    path = tmp_path / "request.yaml"
    path.write_text(yaml.safe_dump(data))
    before = _counts(home.ws)
    result = cli("lock", str(path), "-o", str(tmp_path / "out.lock"))
    assert result.code == 1, result.out
    assert message in result.err
    assert "Traceback" not in result.err
    assert not (tmp_path / "out.lock").exists()
    assert _counts(home.ws) == before


# ---------------------------------------------------------------- an inference request

ONNX = "vision/digits-cnn-onnx@^1"
ONNX_REQUEST: dict[str, Any] = {
    "model": ONNX,
    "dataset": "sklearn-digits-test@^1",
    "framework": "onnxruntime@*",
    "batch_size": 30,
    "scenario": {"mode": "accuracy"},
}


def test_an_inference_run_validates_and_measures_at_the_requested_graph_level(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime as ort

    levels: list[Any] = []
    session = ort.InferenceSession

    def spy(path: str, options: Any, **kwargs: Any) -> Any:
        levels.append(options.graph_optimization_level)
        return session(path, options, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", spy)
    request = {**ONNX_REQUEST, "transform": {"graph_optimization": "basic"}}
    lock = service.lock(home.ws, parse_request(request))[0]
    assert json.loads(lock.canonical)["request"]["transform"]["graph_optimization"] == "basic"
    # in this process (``--sandbox none``), where the spy is
    outcome = run_lockfile(home.ws, lock, runner="local", say=quiet, sandbox="none")
    info = show_run(home.ws, outcome.id, nested=True)
    assert info["status"] == "succeeded", info["error"]
    t = info["details"]["transform"]
    assert t["transform"] == "graph_optimization=basic" and t["framework"] == "onnxruntime"
    assert t["compared"] == "outputs of 450 samples"  # the test split, in batches of 30
    assert t["comparison"]["valid"] is True and len(t["optimized_graph_sha256"]) == 64
    assert info["metrics"]["transform_max_abs_err"] == t["comparison"]["max_abs_err"]
    basic, disabled = (
        ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    )
    assert levels == [basic, disabled, basic]  # the measured run's, then the validation's two
    plain = service.lock(home.ws, parse_request(ONNX_REQUEST))[0]
    assert "transform" not in json.loads(plain.canonical)["request"]


def test_a_graph_run_stores_its_optimized_graph_and_its_home_backs_up_and_restores(
    home: Home,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 48 item 2 (decision 180): the optimized graph is a blob an author can open, named
    in the run's attestation, and the home passes fsck, backs up and restores clean."""
    import onnxruntime as ort

    from pinbench.artifacts.digest import Digest

    request = {**ONNX_REQUEST, "transform": {"graph_optimization": "extended"}}
    lock = service.lock(home.ws, parse_request(request))[0]
    outcome = run_lockfile(home.ws, lock, runner="local", say=quiet)
    info = show_run(home.ws, outcome.id, nested=True)
    assert info["status"] == "succeeded", info["error"]
    t = info["details"]["transform"]
    assert "graph_sha256" not in t  # no digest of bytes that are not kept
    graph = home.ws.store.verify(Digest(t["optimized_graph_sha256"]), label="graph").read_bytes()
    session = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])  # it opens
    assert [i.name for i in session.get_inputs()] == ["x"]
    cli = in_process_cli(monkeypatch, capsys, home.home, home.db)
    envelope = tmp_path / "run.intoto.jsonl"
    assert cli("runs", "attest", outcome.id, "-o", str(envelope)).code == 0
    verified = cli("attest", "verify", str(envelope), "--json")
    assert verified.code == 0, verified.err
    assert "optimized.onnx" in json.loads(verified.out)[0]["subjects"]
    checked = cli("fsck")
    assert checked.code == 0, checked.out
    made = cli("backup", str(tmp_path / "backup"))
    assert made.code == 0, made.err
    target = in_process_cli(monkeypatch, capsys, tmp_path / "restored", None)
    restored = target("restore", str(tmp_path / "backup"))
    assert restored.code == 0, restored.out + restored.err
    assert restored.out.strip().endswith("no problems")


@pytest.mark.parametrize(("model", "framework"), [(TORCH, "torch"), (ONNX, "onnxruntime")])
def test_an_inference_run_in_micro_batches_is_validated_and_measured_so(
    home: Home, model: str, framework: str
) -> None:
    from pinbench.transforms import microbatch

    calls: list[int] = []
    micro = microbatch.micro_outputs

    def counted(predict: Any, k: int) -> Any:
        run = micro(predict, k)

        def call(batch: Any) -> Any:
            calls.append(len(batch))
            return run(batch)

        return call

    request = {**ONNX_REQUEST, "model": model, "framework": f"{framework}@*"}
    request["transform"] = {"micro_batches": 3}
    lock = service.lock(home.ws, parse_request(request))[0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(microbatch, "micro_outputs", counted)  # in this process: --sandbox none
        outcome = run_lockfile(home.ws, lock, runner="local", say=quiet, sandbox="none")
    info = show_run(home.ws, outcome.id, nested=True)
    assert info["status"] == "succeeded", info["error"]
    t = info["details"]["transform"]
    assert t["transform"] == "micro_batches=3" and t["framework"] == framework
    assert t["compared"] == "outputs of 450 samples" and t["comparison"]["valid"] is True
    assert t["peak_bytes"] is None and t["memory"] == "not measured for inference"
    # the validation's 6 passes of 15 batches, then the warm-up's (10 at least) and the
    # scenario's queries: all through the micro-batched predict
    assert calls[: 6 * 15] == [30] * (6 * 15) and len(calls) > 6 * 15 + 10 + 15
    baseline = service.lock(home.ws, parse_request({**request, "transform": None}))[0]
    plain = run_lockfile(home.ws, baseline, runner="local", say=quiet)
    top1 = show_run(home.ws, plain.id, nested=True)["metrics"]["top1"]
    assert info["metrics"]["top1"] == top1  # the same answers, micro-batched


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"transform": {"micro_batches": 4}}, "micro_batches 4 does not divide batch_size 30"),
        (  # every size of a sweep
            {"batch_size": [10, 25], "transform": {"micro_batches": 2}},
            "micro_batches 2 does not divide batch_size 25",
        ),
        ({"transform": {}}, "transform names no transformation: give micro_batches"),
        ({"transform": {"graph_optimization": "max"}}, "got 'max' - at `$.transform.graph_opt"),
        ({"transform": {"prune": True}}, "unknown field `prune` - at `$.transform`"),
        (
            {"framework": "torch@*", "model": TORCH, "transform": {"graph_optimization": "all"}},
            "transform.graph_optimization is onnxruntime's: name framework onnxruntime@",
        ),
    ],
)
def test_lock_refuses_a_bad_inference_transform_and_records_nothing(
    home: Home, cli: Cli, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = tmp_path / "request.yaml"
    path.write_text(yaml.safe_dump({**ONNX_REQUEST, **change}))
    before = _counts(home.ws)
    result = cli("lock", str(path), "-o", str(tmp_path / "out.lock"))
    assert result.code == 1, result.out
    assert message in result.err
    assert not (tmp_path / "out.lock").exists()
    assert _counts(home.ws) == before


def test_the_training_fields_stay_as_they_were() -> None:
    assert TRAINING["batch_size"] == 32  # the divisibility cases above are against it


def test_the_demo_prints_a_validated_l1_table(home: Home) -> None:
    import io

    from rich.console import Console

    from pinbench.demo.transforms import transforms
    from pinbench.sdk.registry import Registry

    buffer = io.StringIO()
    steps: list[str] = []
    transforms(Registry.over(home.ws), Console(file=buffer, width=250), steps.append)
    text = buffer.getvalue()
    print(text)
    assert len(steps) == 1 and "Deep500 L1" in steps[0]
    lines = [line.split() for line in text.splitlines()]
    rows = {line[0]: line for line in lines if line and line[0].startswith(("micro", "graph"))}
    assert set(rows) == {
        "micro_batches=1",
        "micro_batches=2",
        "micro_batches=4",
        "graph_optimization=all",
    }
    assert all(row[1] in ("torch", "onnxruntime") and "✓" in row for row in rows.values())
    peaks = [float(rows[f"micro_batches={k}"][-1].replace(",", "")) for k in (1, 2, 4)]
    assert peaks[0] > peaks[1] > peaks[2]  # peak memory falls as k grows
