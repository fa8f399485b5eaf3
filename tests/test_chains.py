"""Model chains (issue 50 item 2, decision 240): openwakeword 0.4.0's wake-word detector as
its wheel ships it, three ONNX models (mel spectrogram -> speech embedding -> "alexa"
classifier) published unmodified, chained in one lockfile with pinned code between stages,
run and scored by the last stage's task; the result equals running the three graphs by hand
with onnxruntime here, each stage's file is the wheel's byte for byte, each stage's latency
is recorded. Bad wiring is refused at ``pinbench lock`` naming the stage and what is wrong."""

from __future__ import annotations

import hashlib
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import latencies_of, run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.processing.consent import CodeRefused
from pinbench.registry import service
from pinbench.registry.chain_spec import ChainRefused
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import RequestError, parse_request
from pinbench.registry.yamlsafe import load_yaml
from pinbench.workspace import Workspace
from tests.helpers import model_manifest, published_workspace, write_files
from tests.package_models import package_file, wheel

MODELS = "openwakeword/resources/models/"
SAMPLES = 32000  # two seconds at 16 kHz: 197 mel frames, 16 embedding windows
STAGES = [
    ("mel", "melspectrogram.onnx", "input", [SAMPLES], "output"),
    ("embedding", "embedding_model.onnx", "input_1", [76, 32, 1], "conv2d_19"),
    ("alexa", "alexa_v0.1.onnx", "onnx::Flatten_0", [16, 96], "13"),
]


def quiet(text: str) -> None:
    pass


def publish_stages(ws: Workspace, root: Path) -> dict[str, Path]:
    """The three models, each published from the wheel's file as is; their files by stage."""
    files = {}
    for stage, member, input_name, shape, output in STAGES:
        path = package_file("openwakeword", MODELS + member)
        described = write_files(root / stage, {member: path.read_bytes()})
        manifest = model_manifest(f"oww/{stage}", "0.4.0", described, framework_range="^1")
        out: dict[str, Any] = {"name": output}
        if stage == "alexa":
            out = {**out, "type": "binary"}
        manifest.update(
            inputs=[{"name": input_name, "element_type": "float32", "shape": shape}],
            outputs=[out],
        )
        publish(ws, parse_manifest(manifest), manifest_dir=root / stage, publisher="test")
        files[stage] = path
        if stage == "alexa":  # a float -> int64 cast before it, for a dtype mismatch
            cast = write_files(root / "cast", {"cast.onnx": int64_cast()})
            manifest = model_manifest("oww/cast", "0.4.0", cast, framework_range="^1")
            manifest.update(
                inputs=[{"name": "x", "element_type": "float32", "shape": shape}],
                outputs=[{"name": "y"}],
            )
            publish(ws, parse_manifest(manifest), manifest_dir=root / "cast", publisher="test")
        if stage == "embedding":  # the same graph with its own post-processing: refused in a chain
            post = {"code": "def same(outputs, files):\n    return outputs\n", "function": "same"}
            manifest.update(name="oww/embedding-post", postprocess=post)
            publish(ws, parse_manifest(manifest), manifest_dir=root / stage, publisher="test")
    return files


def publish_variants(ws: Workspace, root: Path) -> None:
    """Models for the refusals: the classifier with an input step, the embedding with output
    steps, and a two-input graph (``x + z``)."""
    alexa = package_file("openwakeword", MODELS + "alexa_v0.1.onnx")
    embedding = package_file("openwakeword", MODELS + "embedding_model.onnx")
    shape = [16, 96]
    for name, member, extra in (
        (
            "oww/alexa-scaled",
            ("alexa_v0.1.onnx", alexa.read_bytes()),
            {
                "inputs": [
                    {
                        "name": "onnx::Flatten_0",
                        "element_type": "float32",
                        "shape": shape,
                        "steps": [{"normalize": {"mean": [0.0], "std": [2.0]}}],
                    }
                ],
                "outputs": [{"name": "13", "type": "binary"}],
            },
        ),
        (
            "oww/embedding-soft",
            ("embedding_model.onnx", embedding.read_bytes()),
            {
                "inputs": [{"name": "input_1", "element_type": "float32", "shape": [76, 32, 1]}],
                "outputs": [
                    {"name": "conv2d_19", "type": "classification", "steps": [{"softmax": {}}]}
                ],
            },
        ),
        (
            "oww/pair",
            ("pair.onnx", pair_graph()),
            {
                "inputs": [
                    {"name": "x", "element_type": "float32", "shape": shape},
                    {"name": "z", "element_type": "float32", "shape": shape},
                ],
                "outputs": [{"name": "y"}],
            },
        ),
    ):
        folder = root / name.replace("/", "_")
        described = write_files(folder, dict([member]))
        manifest = model_manifest(name, "0.4.0", described, framework_range="^1")
        manifest.update(extra)
        publish(ws, parse_manifest(manifest), manifest_dir=folder, publisher="test")


def pair_graph() -> bytes:
    from onnx import TensorProto, helper

    value = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 16, 96]) for n in "xzy"]
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "z"], ["y"])], "pair", value[:2], value[2:]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def int64_cast() -> bytes:
    """A one-node graph: ``(N, 16, 96)`` float32 in, the same as int64 out."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64)],
        "cast",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 96])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["N", 16, 96])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def audio(count: int) -> np.ndarray[Any, Any]:
    """Tones and noise at int16 scale, as openwakeword is fed (float32)."""
    rng = np.random.default_rng(240)
    t = np.arange(SAMPLES) / 16000
    rows = [
        (3000 * np.sin(2 * np.pi * (200 + 150 * i) * t) + rng.normal(0, 300 + 200 * i, SAMPLES))
        for i in range(count)
    ]
    return np.array(rows, dtype=np.float32)


def by_hand(files: dict[str, Path], clips: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The three graphs run here with onnxruntime, openwakeword's steps between them."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # as the request's threads: 1
    mel, embed, alexa = (ort.InferenceSession(str(files[s]), options) for s, *_ in STAGES)
    scores = []
    for clip in clips:
        spec = np.squeeze(mel.run(None, {"input": clip[None]})[0]) / 10 + 2
        windows = [spec[s : s + 76] for s in range(0, spec.shape[0] - 75, 8)]
        batch = np.array(windows)[..., None].astype(np.float32)
        emb = embed.run(None, {"input_1": batch})[0].reshape(len(windows), 96)
        scores.append(alexa.run(None, {"onnx::Flatten_0": emb[-16:][None]})[0][0, 0])
    return np.array(scores)


def documented() -> dict[str, Any]:
    """The walkthrough's ``chain.yaml`` (docs/chains.md) as the page has it: the request run
    here, and the base of every refused variant."""
    page = (Path(__file__).parent.parent / "docs" / "chains.md").read_text()
    block = page.split("The request, `chain.yaml`", 1)[1].split("```yaml\n", 1)[1]
    data: dict[str, Any] = load_yaml(block.split("```", 1)[0])
    return data


def chain(**changes: dict[str, Any]) -> dict[str, Any]:
    """The walkthrough's stages with ``changes`` by stage name (a key set to None is left
    out); a stage it does not have is added, listed first."""
    stages = {stage["name"]: stage for stage in documented()["chain"]["stages"]}
    stages = {**{n: {} for n in changes if n not in stages}, **stages}
    for name, change in changes.items():
        stages[name] = {k: v for k, v in {**stages[name], **change}.items() if v is not None}
    return {"stages": list(stages.values())}


@pytest.fixture(scope="module")
def wakeword(
    tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path
) -> Iterator[tuple[Workspace, dict[str, Path], Any]]:
    """One workspace for the module (the catalog's onnxruntime, the three stages, a dataset
    of six clips): the refusals lock in it, one test runs in it."""
    tmp_path = tmp_path_factory.mktemp("chains")
    ws = published_workspace(tmp_path, catalog_dir)
    files, data = publish_wakeword(ws, tmp_path)
    publish_variants(ws, tmp_path / "variants")
    yield ws, files, data
    ws.close()


def publish_wakeword(ws: Workspace, tmp_path: Path) -> tuple[dict[str, Path], Any]:
    """The walkthrough's three stages and a dataset of six clips, published in ``ws`` (its
    onnxruntime framework already there); the stages' files, and the clips with their labels."""
    files = publish_stages(ws, tmp_path / "models")
    clips = audio(6)
    truth = np.array([0, 1, 0, 1, 1, 0], dtype=np.int64)
    arrays = {}
    for name, array in (("audio.npy", clips), ("labels.npy", truth)):
        np.save(tmp_path / name, array, allow_pickle=False)
        arrays[name] = (tmp_path / name).read_bytes()
    dataset = {
        "kind": "dataset", "name": "wakeword-clips", "version": "1.0.1",
        "data": {"format": "npy", "path": "audio.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": 2},
        "files": write_files(tmp_path / "data", arrays),
    }  # fmt: skip
    publish(ws, parse_manifest(dataset), manifest_dir=tmp_path / "data", publisher="test")
    return files, (clips, truth)


def request(**fields: Any) -> Any:
    return parse_request({**documented(), **fields})


def test_a_chain_scores_as_its_stages_run_by_hand(wakeword: Any) -> None:
    ws, files, (clips, truth) = wakeword
    lock = service.lock(ws, request())[0]  # the walkthrough's chain.yaml, as the page has it
    stages = lock.body.chain.stages  # type: ignore[union-attr]
    assert [s.name for s in stages] == ["mel", "embed", "alexa"]
    pinned = {a.name: a.files[0].sha256 for a in lock.body.artifacts if a.kind == "model"}
    with zipfile.ZipFile(wheel("openwakeword")) as whl:
        for stage, member, *_ in STAGES:
            upstream = hashlib.sha256(whl.read(MODELS + member)).hexdigest()
            assert pinned[f"oww/{stage}"] == upstream  # each stage keeps its own digest
    assert Lockfile.from_bytes(lock.canonical).digest == lock.digest  # canonical, re-read

    with pytest.raises(CodeRefused, match="--allow-code"):  # the code between stages is code
        run_lockfile(ws, lock, say=quiet)
    scores = by_hand(files, clips)
    # the venv runner's evaluator is handed every stage's files (checked there against the
    # lockfile) and gives the same outputs as this interpreter does
    isolated = run_lockfile(ws, lock, runner="venv", say=quiet, allow_code=True).id
    in_venv = show_run(ws, isolated)
    assert in_venv["status"] == "succeeded" and in_venv["runner"] == "venv", in_venv.get("error")
    run_lockfile(ws, lock, say=quiet, allow_code=True)
    run = list_runs(ws)[0]
    assert run["status"] == "succeeded", run.get("error")
    recorded = np.load(show_run(ws, run["id"])["details"]["outputs_sha256"] and _outputs(ws, run))
    np.testing.assert_allclose(recorded.reshape(-1), scores, rtol=1e-5, atol=1e-6)
    assert (
        in_venv["details"]["outputs_sha256"] == show_run(ws, run["id"])["details"]["outputs_sha256"]
    )
    assert in_venv["binary_roc_auc"] == run["binary_roc_auc"]
    here = show_run(ws, run["id"])["details"]["chain"]
    timed = ("worker_clock",)  # each run's own times; the rest is the chain as it ran
    assert {k: v for k, v in in_venv["details"]["chain"].items() if k not in timed} == {
        k: v for k, v in here.items() if k not in timed
    }
    from sklearn import metrics as sk

    predicted = (scores >= 0.5).astype(int)
    assert run["binary_accuracy"] == pytest.approx(float(np.mean(predicted == truth)))
    assert run["binary_roc_auc"] == pytest.approx(sk.roc_auc_score(truth, scores), abs=1e-6)
    # code between the stages: the host keeps the clock (issue 71); the worker's own times,
    # stage by stage, are its account in the details, never the run's figures
    shown = show_run(ws, run["id"])
    assert shown["details"]["clock"]["side"] == "host"
    own = shown["details"]["chain"]["worker_clock"]
    assert not [k for k in run if k.startswith(("stage_", "chain_"))]
    for stage in ("mel", "embed", "alexa"):
        p50, top = own[f"stage_{stage}_latency_p50_ns"], own[f"stage_{stage}_latency_max_ns"]
        assert 0 < p50 <= top <= own["chain_latency_max_ns"]
    assert "stage_embed_code_latency_p50_ns" in own and "stage_mel_code_latency_p50_ns" not in own
    parts = sum(own[f"stage_{s}_latency_mean_ns"] for s in ("mel", "embed", "alexa"))
    with_code = parts + own["stage_embed_code_latency_mean_ns"]
    assert with_code < own["chain_latency_mean_ns"]  # the end to end holds every stage and code
    # the host's per query: the whole chain across the pipe, so never under the worker's own
    assert run["framework_latency_mean_ns"] >= own["chain_latency_mean_ns"]
    raw = np.sort(latencies_of(ws, shown["latencies_sha256"]))
    assert raw[len(raw) // 2] == run["framework_latency_p50_ns"]  # the gate's raw series
    details = shown["details"]["chain"]
    assert [s["files"] for s in details["stages"]] == [
        {a.files[0].path: a.files[0].sha256}
        for s in stages
        for a in lock.body.artifacts
        if a.name == s.model
    ]
    assert details["stages"][1]["code"]["code"] == "<inline>:windows"


def test_a_chain_with_code_is_timed_by_the_host_and_audited(wakeword: Any) -> None:
    """The code between a chain's stages runs in the worker, so the host keeps the clock of
    its performance test (issue 71) and audits it as any code run: after its test, TEST04's
    new worker answers every sample once, then TEST01's answers every sample alike in
    accuracy mode."""
    ws, _, _ = wakeword
    scenario = {"name": "SingleStream", "min_duration_ms": 0, "min_query_count": 64}
    lock = service.lock(ws, request(scenario=scenario))[0]
    shown = show_run(ws, run_lockfile(ws, lock, say=quiet, allow_code=True).id)
    assert shown["status"] == "succeeded", shown.get("error")
    assert shown["details"]["clock"]["side"] == "host"
    assert shown["queries_count"] >= 64 and shown["latency_p50_ns"] > 0  # the host's LoadGen
    test01 = shown["details"]["audits"]["TEST01"]
    assert test01["passed"] is True, test01
    from tests.test_host_clock import compared_every_sample

    assert compared_every_sample(test01, shown["details"]["clock"]["samples"]), test01
    assert test01["bound"] is True  # the answers scored are the chain's, sealed as handed back
    assert shown["details"]["audits"]["TEST04"]["passed"] is not False


def _outputs(ws: Workspace, run: dict[str, Any]) -> Path:
    from pinbench.artifacts.digest import Digest

    digest = show_run(ws, run["id"])["details"]["outputs_sha256"]
    path: Path = ws.store.verify(Digest(digest), label="outputs")
    return path


BAD = [
    # (why, changes to the chain, the request's model, what the refusal says)
    (
        "a wire to a stage the chain does not have",
        {"embed": {"inputs": {"input_1": "spectrogram.output"}}},
        None,
        "stage 'embed': input 'input_1' is wired to 'spectrogram.output', but the chain has no "
        "stage 'spectrogram'",
    ),
    (
        "a wire to an output the model does not declare",
        {"alexa": {"inputs": {"onnx::Flatten_0": "embed.nope"}}},
        None,
        "stage 'alexa': input 'onnx::Flatten_0' is wired to 'embed.nope', but stage 'embed' "
        "declares no output 'nope'",
    ),
    (
        "a cycle between two stages",
        {"embed": {"inputs": {"input_1": "alexa.13"}}},
        None,
        "the wiring makes a cycle: embed -> alexa -> embed",
    ),
    (
        "a shape mismatch on a direct wire, read from the graph",
        {"embed": {"code": None}},
        None,
        "stage 'embed': input 'input_1' is wired to 'mel.output', whose graph gives shape "
        "['?', 1, '?', 32]; model oww/embedding@0.4.0 declares [76, 32, 1]",
    ),
    (
        "a wire to an input the model does not declare",
        {"alexa": {"inputs": {"x": "embed.conv2d_19"}}},
        None,
        "stage 'alexa': input 'x' (wired to 'embed.conv2d_19') is not an input model "
        "oww/alexa@0.4.0 declares",
    ),
    (
        "an input of the model wired to nothing (z of x + z)",
        {
            "pair": {"name": "pair", "model": "oww/pair@0.4.0", "inputs": {"x": "embed.conv2d_19"}},
            "alexa": {"inputs": {"onnx::Flatten_0": "pair.y"}, "code": None},
        },
        None,
        "stage 'pair': input(s) ['z'] of model oww/pair@0.4.0 are wired to nothing",
    ),
    (
        "two stages fed from the samples",
        {"embed": {"inputs": None, "code": None}},
        None,
        "exactly one stage is fed from the samples (it has no wired `inputs`); this chain has "
        "2: ['mel', 'embed']",
    ),
    (
        "output steps on a stage before the last: the task applies them to the last's only",
        {"embed": {"model": "oww/embedding-soft@0.4.0"}},
        None,
        "stage 'embed': output(s) ['conv2d_19'] of model oww/embedding-soft@0.4.0 declare `steps`",
    ),
    (
        "input steps on a wired input: they apply to a sample",
        {"alexa": {"model": "oww/alexa-scaled@0.4.0"}},
        "oww/alexa-scaled@0.4.0",
        "stage 'alexa': input 'onnx::Flatten_0' declares `steps`, which apply to a sample",
    ),
    (
        "a code file that is not among the stage's model's files",
        {"embed": {"code": {"function": "windows", "file": "windows.py"}}},
        None,
        "stage 'embed': its code's file 'windows.py' is not a file of model "
        "oww/embedding@0.4.0 (its files: ['embedding_model.onnx'])",
    ),
    (
        "a stage that feeds nothing is run and timed for no score",
        {"spare": {"name": "spare", "model": "oww/cast@0.4.0", "inputs": {"x": "embed.conv2d_19"}}},
        None,
        "stage 'spare': it feeds nothing the last stage 'alexa' is fed from",
    ),
    (
        "a stage whose model carries its own post-processing",
        {"embed": {"model": "oww/embedding-post@0.4.0"}},
        None,
        "stage 'embed': model oww/embedding-post@0.4.0 declares `postprocess`: inside a chain",
    ),
    (
        "the request's model is not the last stage",
        {},
        "oww/embedding@0.4.0",
        "the last stage to run is model 'oww/alexa@0.4.0', but the request's model is "
        "'oww/embedding'",
    ),
]


@pytest.mark.parametrize(("why", "changes", "model", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_wiring_is_refused_at_lock(
    wakeword: Any, why: str, changes: dict[str, Any], model: str | None, message: str
) -> None:
    ws = wakeword[0]
    fields: dict[str, Any] = {"chain": chain(**changes)}
    if model is not None:
        fields["model"] = model
    with pytest.raises(ChainRefused) as refused:
        service.lock(ws, request(**fields))
    assert message in str(refused.value), why


def wired(inputs: dict[str, str]) -> dict[str, Any]:
    """A two-stage chain whose second stage is wired ``inputs``."""
    return {
        "chain": {
            "stages": [
                {"name": "a", "model": "x@1"},
                {"name": "b", "model": "y@1", "inputs": inputs},
            ]
        }
    }


NOT_A_CHAIN = [
    # (why, the request's fields, what the refusal says)
    (
        "more wires than a model has inputs (bounds.CHAIN_WIRES)",
        wired({f"i{n}": "a.o" for n in range(4097)}),
        "Expected `object` of length <= 4096 - at `$.chain.stages[1].inputs`",
    ),
    (
        "an input name past 1024 characters (bounds.CHAIN_WIRE_CHARS)",
        wired({"x" * 1025: "a.o"}),
        "Expected `str` of length <= 1024 - at `key` in `$.chain.stages[1].inputs`",
    ),
    (
        "a STAGE.OUTPUT past 1024 characters",
        wired({"x": "a." + "o" * 1023}),
        "Expected `str` of length <= 1024 - at `$.chain.stages[1].inputs[...]`",
    ),
    (
        "an empty input name",
        wired({"": "a.o"}),
        "Expected `str` of length >= 1 - at `key` in `$.chain.stages[1].inputs`",
    ),
    ("a chain runs one sample per query", {"batch_size": 4}, "batch_size 1"),
    (
        "the request's model is the last stage",
        {"model": "oww/other@1"},
        "the request's model 'oww/other' is none of the chain's",
    ),
    (
        "a chain has two stages or more",
        {"chain": {"stages": [{"name": "a", "model": "x@1"}]}},
        "of length >= 2",
    ),
    (
        "a stage name is lower case",
        {"chain": {"stages": [{"name": "Mel", "model": "x@1"}] * 2}},
        "must match",
    ),
    (
        "stage mid_code's latencies would be stage mid's code's: stage_mid_code_latency_*",
        {
            "chain": {
                "stages": [{"name": "mid", "model": "x@1"}, {"name": "mid_code", "model": "y@1"}]
            }
        },
        "chain stage name 'mid_code' must not end in '_code'",
    ),
    (
        "the last stage's range was dropped for the request's model's",
        {"model": "oww/alexa@>=0.4"},
        "chain stage 'alexa' names model 'oww/alexa@0.4.0' and the request's model is "
        "'oww/alexa@>=0.4'",
    ),
    (
        "a model named twice, once with a space before its range",
        {
            "chain": {
                "stages": [
                    {"name": "a", "model": "x@1"},
                    {"name": "b", "model": "x @2", "inputs": {"i": "a.o"}},
                ]
            }
        },
        "chain stages name model 'x' twice",
    ),
]


@pytest.mark.parametrize(("why", "fields", "message"), NOT_A_CHAIN, ids=[n[0] for n in NOT_A_CHAIN])
def test_a_request_that_cannot_be_a_chain_is_refused(
    why: str, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(RequestError) as refused:
        request(**fields)
    assert message in str(refused.value), why


def test_a_stage_model_with_spaces_locks_as_without(wakeword: Any) -> None:
    """A stage's ``NAME @ RANGE`` is parsed as the request's own model is (spaces dropped):
    was a KeyError (a server's 500) or a refusal naming the last stage."""
    spaced = {
        name: {"model": f" {model.replace('@', ' @ ')} "}
        for name, model in (
            ("mel", "oww/mel@0.4.0"),
            ("embed", "oww/embedding@0.4.0"),
            ("alexa", "oww/alexa@0.4.0"),
        )
    }
    lock = service.lock(wakeword[0], request(chain=chain(**spaced)))[0]
    plain = service.lock(wakeword[0], request())[0]
    assert lock.body.chain.stages == plain.body.chain.stages  # type: ignore[union-attr]


def test_a_dtype_mismatch_on_a_direct_wire_is_refused_at_lock(wakeword: Any) -> None:
    """A cast stage giving int64 wired straight into the classifier's float32 input: the
    graph's own output type, read at lock, against the declared input."""
    last16 = documented()["chain"]["stages"][2]["code"]
    to_x = {**last16, "code": last16["code"].replace('"onnx::Flatten_0"', '"x"')}
    cast = {"name": "cast", "model": "oww/cast@0.4.0", "inputs": {"x": "embed.conv2d_19"}}
    stages = chain(alexa={"inputs": {"onnx::Flatten_0": "cast.y"}, "code": None})["stages"]
    fields = {"chain": {"stages": [*stages[:2], {**cast, "code": to_x}, stages[2]]}}
    with pytest.raises(ChainRefused) as refused:
        service.lock(wakeword[0], request(**fields))
    assert str(refused.value).startswith(
        "chain stage 'alexa': input 'onnx::Flatten_0' is wired to 'cast.y', whose graph gives "
        "int64; model oww/alexa@0.4.0 declares element_type float32"
    )


def loose_outputs() -> bytes:
    """A graph whose outputs the lock check cannot type: ``seq`` a sequence of tensors (no
    element type), ``y`` a tensor with no shape field."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("SequenceConstruct", ["x"], ["seq"]),
            helper.make_node("Identity", ["x"], ["y"]),
        ],
        "loose",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 96])],
        [
            helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def test_the_graph_reader_types_outputs_as_onnx_does(tmp_path: Path) -> None:
    """``onnx_proto.graph_outputs`` (what lock reads) against the ``onnx`` package itself, on
    the wheel's three graphs and on outputs with no tensor type or no shape."""
    import onnx

    from pinbench.artifacts.onnx_proto import graph_outputs

    (tmp_path / "loose.onnx").write_bytes(loose_outputs())
    paths = [package_file("openwakeword", MODELS + member) for _, member, *_ in STAGES]
    for path in [*paths, tmp_path / "loose.onnx"]:
        expected = []
        for value in onnx.load(str(path), load_external_data=False).graph.output:
            tensor = value.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
            typed = value.type.HasField("tensor_type")
            shaped = typed and tensor.HasField("shape")
            expected.append(
                (value.name, tensor.elem_type if typed else 0, dims if shaped else None)
            )
        assert [(o.name, o.elem_type, o.dims) for o in graph_outputs(path)] == expected, path.name


@pytest.mark.parametrize(
    ("output", "why"),
    [
        ("seq", "a sequence output has no element type: was a KeyError (a server's 500)"),
        ("y", "an output with no shape field: was refused as 'shape []'"),
    ],
)
def test_a_wire_the_graph_does_not_type_is_left_to_the_run(
    wakeword: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, why: str
) -> None:
    """The graph check reads the graph with pinbench's own reader (a server installed without
    the ``onnx`` package locks a chain) and checks only what the graph states."""
    ws = wakeword[0]
    described = write_files(tmp_path, {"loose.onnx": loose_outputs()})
    manifest = model_manifest("oww/loose", "0.4.0", described, framework_range="^1")
    manifest.update(
        inputs=[{"name": "x", "element_type": "float32", "shape": [16, 96]}],
        outputs=[{"name": "seq"}, {"name": "y"}],
    )
    publish(ws, parse_manifest(manifest), manifest_dir=tmp_path, publisher="test")
    last16 = documented()["chain"]["stages"][2]["code"]
    to_x = {**last16, "code": last16["code"].replace('"onnx::Flatten_0"', '"x"')}
    loose = {"name": "loose", "model": "oww/loose@0.4.0", "inputs": {"x": "embed.conv2d_19"}}
    stages = chain(alexa={"inputs": {"onnx::Flatten_0": f"loose.{output}"}, "code": None})
    fields = {
        "chain": {"stages": [*stages["stages"][:2], {**loose, "code": to_x}, stages["stages"][2]]}
    }
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` fails, as without the extra
    lock = service.lock(ws, request(**fields))[0]
    assert [s.name for s in lock.body.chain.stages] == ["mel", "embed", "loose", "alexa"], why  # type: ignore[union-attr]


def test_the_graph_check_runs_again_at_verify_and_run(
    wakeword: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lockfile locked where the graph check did not run (its graph not in this store then,
    as on S3 uncached) is checked when verify or run re-derive it, the blob fetched from the
    store as a run fetches it: was checked at lock only."""
    from pinbench.registry import chain_signature as signature
    from pinbench.registry.verify import check_against_registry

    ws = wakeword[0]
    with monkeypatch.context() as patched:
        patched.setattr(signature, "check_signatures", lambda lock, locate: None)
        lock = service.lock(ws, request(chain=chain(embed={"code": None})))[0]
    with pytest.raises(ChainRefused, match="whose graph gives shape"):
        check_against_registry(ws, lock)
    with pytest.raises(ChainRefused, match="whose graph gives shape"):
        run_lockfile(ws, lock, say=quiet, allow_code=True)


def test_an_edited_chain_section_is_refused_as_the_registry_would_not_make_it(
    wakeword: Any,
) -> None:
    """The lockfile's chain is re-derived from the request and the stages' manifests: a wire
    edited in the lockfile (and the lockfile made canonical again) names the field."""
    from pinbench.artifacts.canonical import canonical_json
    from pinbench.registry.trust import LockfileMismatch
    from pinbench.registry.verify import check_against_registry

    ws = wakeword[0]
    data = service.lock(ws, request())[0].to_json()
    data["chain"]["stages"][2]["wires"] = {"onnx::Flatten_0": "mel.output"}
    edited = Lockfile.from_bytes(canonical_json(data))
    with pytest.raises(LockfileMismatch, match=r"\$\.chain\.stages\[2\]\.wires"):
        check_against_registry(ws, edited)


def test_code_that_feeds_a_stage_other_than_it_declares_fails_before_timing(wakeword: Any) -> None:
    """The code's answer is checked on the first prediction against the receiving model's
    declared input, naming the stage, the input and the code; nothing is timed."""
    ws = wakeword[0]
    embed = documented()["chain"]["stages"][1]
    code = embed["code"]["code"].replace(".astype(np.float32)", ".astype(np.float64)")
    assert code != embed["code"]["code"]
    lock = service.lock(ws, request(chain=chain(embed={"code": {**embed["code"], "code": code}})))
    with pytest.raises(EvaluationFailed) as refused:  # the code's own process said it
        run_lockfile(ws, lock[0], say=quiet, allow_code=True)
    assert str(refused.value) == (
        "chain stage 'embed': input 'input_1' (made by <inline>:windows) has dtype float64, "
        "model oww/embedding@0.4.0 declares element_type float32"
    )
    failed = list_runs(ws)[0]
    assert failed["status"] == "failed" and "has dtype float64" in failed["error"]
    assert not any(k.startswith(("stage_", "latency_")) for k in failed)


@pytest.mark.parametrize(
    ("fmt", "trusted", "why"),
    [
        ("torch-pickle", True, "a pickled first stage: was looked past (the last model only)"),
        ("hf-folder", True, "a Hugging Face folder of pickles as a stage"),
    ],
)
def test_a_pickled_stage_is_refused_as_a_pickled_model_is(
    wakeword: Any, fmt: str, trusted: bool, why: str
) -> None:
    """The pickle policy reads every model the run loads, so a chain with a pickled stage is
    refused before a run row exists (unless the run allows pickles)."""
    from pinbench.artifacts.canonical import canonical_json
    from pinbench.evaluator.policy import PickleRefused, check_pickle, needs_pickle

    data = service.lock(wakeword[0], request())[0].to_json()
    assert not needs_pickle(Lockfile.from_bytes(canonical_json(data)))
    data["chain"]["stages"][0].update(format=fmt, trusted=trusted)
    lock = Lockfile.from_bytes(canonical_json(data))
    assert needs_pickle(lock), why
    with pytest.raises(PickleRefused, match=r"model oww/mel@0\.4\.0 is a pickle"):
        check_pickle(lock, allow=False)
    check_pickle(lock, allow=True)


def test_a_traced_chain_is_refused_before_anything_is_recorded(wakeword: Any) -> None:
    ws = wakeword[0]
    lock = service.lock(ws, request())[0]
    before = len(list_runs(ws))
    with pytest.raises(ChainRefused, match=r"a chain is not traced \(--trace framework\)"):
        run_lockfile(ws, lock, say=quiet, allow_code=True, trace="framework")
    assert len(list_runs(ws)) == before


def test_a_chain_is_queued_for_any_runner_here_and_refused_for_a_cluster_system(
    wakeword: Any,
) -> None:
    """A server queues a chain for any of its runners (a chain with code once its operator
    allows code: decision 313); for a cluster system it is refused when submitted, nothing
    queued."""
    import uuid

    from pinbench.chains.policy import check_chain_run
    from pinbench.evaluator.run import queue_run

    ws = wakeword[0]
    lock = service.lock(ws, request())[0]
    for runner in ("local", "venv", "docker"):
        check_chain_run(lock, runner=runner, trace="none", on_cluster=False)
    run_id = str(uuid.uuid4())
    with pytest.raises(ChainRefused, match=r"not on a cluster system .*leave --on out"):
        queue_run(ws, lock, runner="local", run_id=run_id, system="gpu-box")
    assert run_id not in {r["id"] for r in list_runs(ws)}


def test_an_isolated_evaluator_checks_every_stages_files_against_the_lockfile(
    wakeword: Any, tmp_path: Path
) -> None:
    """The evaluator behind the venv and docker runners (``pinbench.worker.main``) is
    handed each stage's files: bytes other than the lockfile's, a file not handed in, or a
    stage the chain has not fail the run before anything is loaded, naming each."""
    import json

    from pinbench.evaluator.runners.process import write_job
    from pinbench.evaluator.runners.store_files import model_folder, stage_folders, store_paths
    from pinbench.registry.names import Kind
    from pinbench.worker.main import main as worker_main
    from pinbench.worker.results import RESULT

    ws = wakeword[0]
    lock = service.lock(ws, request())[0]
    model = {p: str(v) for p, v in model_folder(ws, lock, tmp_path / "model").items()}
    data = {p: str(v) for p, v in store_paths(ws, lock, Kind.DATASET).items()}
    placed = stage_folders(ws, lock, tmp_path / "stages")
    stages = {name: {p: str(v) for p, v in files.items()} for name, files in placed.items()}
    forged = tmp_path / "forged" / "embedding_model.onnx"  # a copy: the placed ones are links
    forged.parent.mkdir()
    forged.write_bytes(placed["embed"]["embedding_model.onnx"].read_bytes()[:-1] + b"\0")
    stages["embed"] = {"embedding_model.onnx": str(forged)}
    del stages["alexa"]
    stages["spare"] = {}
    write_job(tmp_path / "job.json", lock, model, data, allow_code=True, stages=stages)
    (tmp_path / "out").mkdir()
    assert worker_main([str(tmp_path / "job.json"), str(tmp_path / "out")]) == 1
    error = json.loads((tmp_path / "out" / RESULT).read_bytes())["error"]
    pinned = hashlib.sha256(placed["embed"]["embedding_model.onnx"].read_bytes()).hexdigest()
    assert error.startswith("inputs handed to the evaluator failed verification: ")
    assert error.split(": ", 1)[1].split("; ") == [
        "chain stage 'spare' is not the lockfile's",
        f"stage embed model file embedding_model.onnx is sha256 "
        f"{hashlib.sha256(forged.read_bytes()).hexdigest()[:12]}, pinned {pinned[:12]}",
        "stage alexa model file alexa_v0.1.onnx was not handed in",
    ]


def test_a_chain_runs_warm_only_when_every_stage_may(wakeword: Any, tmp_path: Path) -> None:
    """The review of decision 271: a warm evaluator's format rule read the last stage's format
    alone, so a chain with a TorchScript stage before an ONNX one could share a warm process
    once chains ran in the venv and docker runners. Every stage's format counts."""
    import msgspec

    from pinbench.evaluator.warm import format_reason
    from tests.helpers import cold_reason

    lock = service.lock(ws := wakeword[0], request())[0]
    chain = lock.body.chain
    assert chain is not None and ws is not None
    stages = [msgspec.structs.replace(s, code=None) for s in chain.stages]
    stages[0] = msgspec.structs.replace(stages[0], format="torchscript")
    body = msgspec.structs.replace(lock.body, chain=msgspec.structs.replace(chain, stages=stages))
    mixed = Lockfile(body)

    assert cold_reason(mixed, tmp_path) == format_reason("torchscript")
