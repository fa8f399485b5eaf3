"""Processing as pinned code (issue 50 items 1, 5, 6; decision 220): a model manifest's
``preprocess`` and ``postprocess`` Python, a file of the artifact or inline.

The digits logistic regression of the catalog runs unmodified on a dataset of raw sample files:
``preprocess`` reads each ``.npy`` file and scales it into the model's input, ``postprocess``
turns the graph's ``logits`` into the declared ``probabilities``; the run's top-1 and top-5
equal scikit-learn's on the direct computation. The code never runs at ``manifest``,
``publish``, ``lock``, ``verify`` or ``show`` (it writes a file when it is imported), and
``run`` without ``--allow-code`` is refused before anything executes. What the code gives is
checked against the declaration before anything is timed, naming the input or output.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from sklearn.metrics import accuracy_score, top_k_accuracy_score

from pinbench import catalog as builtin
from pinbench.artifacts.digest import Digest
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import array_of, run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed, collect, write_job
from pinbench.evaluator.runners.store_files import store_paths
from pinbench.processing.consent import CodeRefused
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.names import Kind
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.verify import VerificationFailed, verify_lockfile
from pinbench.worker.job import Evidence
from pinbench.worker.main import main as worker_main
from pinbench.worker.results import RESULT
from pinbench.workspace import Workspace
from tests.helpers import Home, in_process_cli, model_manifest, published_home, sha, write_files

SAMPLES = 40
MARK = "PINBENCH_TEST_IMPORT_MARK"
"""The processing code appends a line to the file this names when it is imported."""
DOC = (Path(__file__).resolve().parent.parent / "docs" / "processing.md").read_text()
EXAMPLE = re.search(r"```python\n# proc\.py\n(.*?)```", DOC, re.S)
MANIFEST = re.search(r"```yaml\n(kind: model\n.*?)```", DOC, re.S)
assert EXAMPLE is not None and MANIFEST is not None, "docs/processing.md's example"
CODE = (  # the docs' example, which also marks its import
    f"import os as _os\n\nif _os.environ.get({MARK!r}):\n"
    f"    with open(_os.environ[{MARK!r}], 'a') as _marks:\n        _marks.write('imported\\n')\n"
    + EXAMPLE.group(1)
)
DECLARED = yaml.safe_load(MANIFEST.group(1))
INPUTS, OUTPUTS = DECLARED["inputs"], DECLARED["outputs"]
PRE, POST = DECLARED["preprocess"], DECLARED["postprocess"]
VERSION = "1.1.0"
"""The catalog's model version whose ONNX file (and weights) the tests use."""


def quiet(_: str) -> None:
    pass


def _raw_dataset(ws: Workspace, root: Path) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The first ``SAMPLES`` test digits as one ``.npy`` file each (uint8, as scikit-learn has
    them), published as ``digits-raw@1.0.0``; their images and labels."""
    _, x_test, _, y_test = builtin.digits_split()
    images, labels = x_test[:SAMPLES], y_test[:SAMPLES]
    for i, image in enumerate(images):
        (root / "data").mkdir(parents=True, exist_ok=True)
        np.save(root / "data" / f"{i:04d}.npy", image, allow_pickle=False)
    np.save(root / "labels.npy", labels, allow_pickle=False)
    files = [
        {"path": p.relative_to(root).as_posix(), "sha256": sha(p.read_bytes())}
        for p in sorted([*(root / "data").glob("*.npy"), root / "labels.npy"])
    ]
    manifest = {
        "kind": "dataset",
        "name": "digits-raw",
        "version": "1.0.0",
        "samples": SAMPLES,
        "data": {"format": "npy-files", "path": "data"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": 10},
        "files": files,
    }
    publish(ws, parse_manifest(manifest), manifest_dir=root, publisher="test")
    return images, labels


def _model_data(
    root: Path, catalog: Path, version: str, code: str = CODE, **fields: Any
) -> dict[str, Any]:
    """The digits model's manifest (the catalog's ONNX file, unmodified, and ``proc.py``)
    written under ``root`` as ``vision/digits-code@version``, with ``fields``."""
    onnx = (catalog / f"digits-logreg-{VERSION}" / "digits-logreg.onnx").read_bytes()
    files = write_files(root, {"digits-logreg.onnx": onnx, "proc.py": code.encode()})
    manifest = model_manifest("vision/digits-code", version, files, framework_range="^1")
    return {**manifest, "inputs": INPUTS, "outputs": OUTPUTS, **fields}


def _publish(ws: Workspace, root: Path, catalog: Path, version: str, **fields: Any) -> str:
    data = _model_data(root / version, catalog, version, **fields)
    publish(ws, parse_manifest(data), manifest_dir=root / version, publisher="test")
    return f"vision/digits-code@{version}"


def _lock(ws: Workspace, model: str, mode: str = "accuracy") -> Lockfile:
    scenario: dict[str, Any] = {"mode": mode}
    if mode == "performance":
        scenario.update(min_duration_ms=0, min_query_count=SAMPLES)
    request = {"model": model, "dataset": "digits-raw@1", "scenario": scenario}
    return service.lock(ws, parse_request(request))[0]


class World:
    def __init__(self, home: Home, root: Path, catalog: Path, images: Any, labels: Any) -> None:
        self.home, self.root, self.catalog = home, root, catalog
        self.images, self.labels = images, labels
        self.model = _publish(home.ws, root, catalog, "1.0.0", preprocess=PRE, postprocess=POST)
        self.lock = _lock(home.ws, self.model)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("processing")
    with published_home(root / "ws", catalog_dir) as home:
        images, labels = _raw_dataset(home.ws, root / "raw")
        yield World(home, root / "models", catalog_dir, images, labels)


def _direct_logits(world: World) -> np.ndarray[Any, Any]:
    """The model by hand: the ONNX file's own weights on pixels / 16."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(world.catalog / f"digits-logreg-{VERSION}" / "digits-logreg.onnx").graph
    found = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in graph.initializer}
    weights, bias = found["W"], found["b"]
    flat = world.images.reshape(len(world.images), -1).astype(np.float64) / 16.0
    logits: np.ndarray[Any, Any] = flat @ weights.T + bias
    return logits


# --- a run ----------------------------------------------------------------------------------


def test_code_makes_the_inputs_and_the_declared_outputs_scored_as_the_direct_computation(
    world: World,
) -> None:
    ws = world.home.ws
    outcome = run_lockfile(ws, world.lock, say=quiet, allow_code=True)
    assert outcome.status == "succeeded"
    info = show_run(ws, outcome.id)
    logits = _direct_logits(world)
    assert np.argmax(logits, axis=1).tolist() != world.labels.tolist()  # the scores can fail
    assert info["top1"] == accuracy_score(world.labels, np.argmax(logits, axis=1))
    assert info["top5"] == top_k_accuracy_score(world.labels, logits, k=5, labels=range(10))
    # the recorded outputs are postprocess's, equal to a softmax of the direct logits
    outputs = array_of(ws, info["details"]["outputs_sha256"], "outputs")
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(outputs, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)
    # what ran is recorded: the code's sha256, the libraries it imports, Python's version
    code = sha(CODE.encode())
    processing = info["details"]["processing"]
    assert processing["preprocess"] == processing["postprocess"] | {"code": "proc.py:prepare"}
    assert processing["postprocess"]["code"] == "proc.py:finish"
    assert processing["postprocess"]["sha256"] == code
    assert processing["postprocess"]["libraries"] == {"numpy": np.__version__}
    assert processing["python"].count(".") == 2
    # post-processing timed apart: one call per sample, its raw times kept
    times = array_of(ws, info["details"]["postprocess_latencies_sha256"], "postprocess")
    assert times.dtype == np.int64 and times.size == SAMPLES and (times > 0).all()
    ordered = np.sort(times)
    assert info["postprocess_latency_p50_ns"] == float(ordered[SAMPLES // 2])
    assert info["postprocess_latency_max_ns"] == float(ordered[-1])
    assert info["framework_latency_p50_ns"] > 0  # the framework's own series stands apart
    # the code file is pinned in the lockfile like every byte
    model = next(a for a in world.lock.body.artifacts if a.kind == "model")
    assert {f.path: f.sha256 for f in model.files}["proc.py"] == code
    assert world.lock.body.model is not None
    assert world.lock.body.model.preprocess is not None
    assert world.lock.body.model.preprocess.file == "proc.py"


def test_preprocessing_is_cached_by_its_digest_and_post_processing_timed_in_performance_runs(
    world: World,
) -> None:
    ws = world.home.ws
    lock = _lock(ws, world.model, "performance")
    first = show_run(ws, run_lockfile(ws, lock, say=quiet, allow_code=True).id)
    again = show_run(ws, run_lockfile(ws, lock, say=quiet, allow_code=True).id)
    assert first["details"]["pipeline_digest"] == again["details"]["pipeline_digest"]
    assert again["details"]["preprocess_cache_hit"] is True
    assert again["postprocess_latency_p50_ns"] > 0
    assert "top1" not in again


SCALED = """\
import json

import numpy as np


def prepare(sample, files):
    scale = json.loads(files["scale.json"].read_text())["scale"]
    image = np.load(sample, allow_pickle=False)
    return {"x": (image.astype(np.float32) / scale)[np.newaxis]}
"""
"""A ``preprocess`` whose answer depends on another file of the artifact (``files``)."""


def test_preprocessing_is_cached_apart_for_models_whose_other_files_differ(world: World) -> None:
    """Two versions with the same code but another ``scale.json``: the code reads it through
    ``files``, so the second never reads the first's arrays from the cache."""
    ws = world.home.ws
    onnx = (world.catalog / f"digits-logreg-{VERSION}" / "digits-logreg.onnx").read_bytes()
    shown = []
    for version, scale in (("6.0.0", 16.0), ("6.0.1", 1.0)):
        root = world.root / version
        files = write_files(
            root,
            {
                "digits-logreg.onnx": onnx,
                "proc.py": SCALED.encode(),
                "scale.json": json.dumps({"scale": scale}).encode(),
            },
        )
        manifest = model_manifest("vision/digits-code", version, files, framework_range="^1")
        outputs = [{"name": "logits", "type": "classification"}]
        data = {**manifest, "inputs": INPUTS, "outputs": outputs, "preprocess": PRE}
        publish(ws, parse_manifest(data), manifest_dir=root, publisher="test")
        lock = _lock(ws, f"vision/digits-code@{version}")
        shown.append(show_run(ws, run_lockfile(ws, lock, say=quiet, allow_code=True).id))
    first, second = shown
    assert second["details"]["preprocess_cache_hit"] is False
    assert first["details"]["pipeline_digest"] != second["details"]["pipeline_digest"]
    assert first["details"]["outputs_sha256"] != second["details"]["outputs_sha256"]


def test_an_isolated_evaluator_runs_code_only_when_its_job_allows_it_and_hands_back_times(
    world: World, tmp_path: Path
) -> None:
    """The evaluator behind the venv, docker and cluster runners: the job carries the
    run's consent (checked again inside), and the code's raw times come back to the host."""
    ws, lock = world.home.ws, world.lock
    model, data = (
        {p: str(v) for p, v in store_paths(ws, lock, kind).items()}
        for kind in (Kind.MODEL, Kind.DATASET)
    )
    for allow in (False, True):
        (tmp_path / str(allow)).mkdir()
        write_job(tmp_path / f"{allow}.json", lock, model, data, allow_code=allow)
        status = worker_main([str(tmp_path / f"{allow}.json"), str(tmp_path / str(allow))])
        assert status == (0 if allow else 1)
    refused = json.loads((tmp_path / "False" / RESULT).read_bytes())
    assert "was not allowed to run it (pinbench run --allow-code)" in refused["error"]
    evidence = Evidence()
    collect("venv", tmp_path / "True", lock, evidence, status=0, tail=[])
    assert evidence.postprocess is not None and evidence.postprocess.size == SAMPLES
    assert evidence.metrics["postprocess_latency_max_ns"] == evidence.postprocess.max()
    assert evidence.details["processing"]["postprocess"]["sha256"] == sha(CODE.encode())


def test_a_model_with_code_never_uses_a_warm_evaluator(world: World, tmp_path: Path) -> None:
    """The publisher's Python could outlast its run in a shared process (module state,
    patched libraries): like a pickle, it runs in an evaluator of its own."""
    from pinbench.evaluator.warm import CODE_REASON
    from tests.helpers import cold_reason

    assert cold_reason(world.lock, tmp_path) == CODE_REASON


# --- consent --------------------------------------------------------------------------------


def test_a_run_without_allow_code_is_refused_naming_the_flag_before_anything_runs(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = world.root / "refused.mark"
    monkeypatch.setenv(MARK, str(mark))
    before = len(list_runs(world.home.ws))
    with pytest.raises(CodeRefused, match="--allow-code"):
        run_lockfile(world.home.ws, world.lock, say=quiet)
    cli = in_process_cli(monkeypatch, capsys, world.home.home, world.home.db)
    path = world.root / "refused.lock"
    world.lock.write(path)
    done = cli("run", str(path), "--runner", "local")
    assert done.code == 1
    assert "pinbench run LOCKFILE --allow-code" in done.err
    assert "preprocess and postprocess code" in done.err
    assert not mark.exists()  # nothing executed
    assert len(list_runs(world.home.ws)) == before  # nothing recorded
    # outside the sandbox, where its mark can be written: the code ran once, at the run
    done = cli("run", str(path), "--runner", "local", "--allow-code", "--sandbox", "none", "--json")
    assert done.code == 0, done.err
    assert mark.read_text() == "imported\n"


def test_a_server_runs_code_only_when_its_operator_allowed_it_then_in_its_runners_sandbox(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 313: without ``serve --allow-code`` no runner runs a model's code (nor a
    cluster's agent, which decides ``auto``): refused, nothing queued, nothing executed. With
    it, any runner does, in its sandbox: the local runner's worker in bubblewrap, never the
    server's own process."""
    from pinbench.api.runpool import RunPool
    from pinbench.evaluator.policy import check_server_policy

    ws = world.home.ws
    mark = world.root / "server.mark"
    monkeypatch.setenv(MARK, str(mark))
    before = len(list_runs(ws))
    for runner, allowed in (
        ("docker", ("docker",)),
        ("local", ("local", "venv", "docker")),
        ("venv", ("local", "venv")),
        ("auto", ("local",)),
    ):
        pool = RunPool(ws, workers=1, queue=1, allow_code=False, runners=allowed)
        try:
            with pytest.raises(CodeRefused, match="pinbench serve --allow-code"):
                pool.submit(world.lock, runner)
        finally:
            pool.close()
    with pytest.raises(CodeRefused, match="never executes processing code"):
        check_server_policy(world.lock, False, False)  # a run --on a cluster's agents too
    check_server_policy(world.lock, False, True)
    assert len(list_runs(ws)) == before  # nothing queued
    assert not mark.exists()  # nothing executed
    pool = RunPool(ws, workers=1, queue=1, allow_code=True, runners=("local",))
    try:
        run_id = pool.submit(world.lock, "local")
        deadline = time.monotonic() + 300
        while show_run(ws, run_id)["status"] in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        pool.close()
    info = show_run(ws, run_id)
    assert info["status"] == "succeeded", info["error"]
    environment = info["details"]["environment"]
    assert environment["sandbox"] == "bwrap" and environment["process"] == "child"
    assert info["details"]["code_sha256"] and info["top1"] > 0.9


@pytest.mark.parametrize("run", ["generation", "training"])
def test_a_generation_or_training_run_of_a_model_with_code_is_refused_naming_the_field(
    world: World, run: str
) -> None:
    """Neither kind of run would call the code (a generation run tokenizes and decodes, a
    training run feeds its own batches): such a lockfile is refused, never run without it."""
    from pinbench.artifacts.canonical import canonical_json
    from pinbench.registry.lockfile import LockfileError

    data = json.loads(world.lock.canonical)
    if run == "generation":
        data["request"]["generation"] = {"max_new_tokens": 2}
        data["dataset"]["task"] = "text-generation"
        data["dataset"]["labels"] = {"format": "prompt-references"}
    else:
        data["training"] = {"validation": "digits-raw@1"}
    with pytest.raises(LockfileError) as raised:
        Lockfile.from_bytes(canonical_json(data))
    said = str(raised.value)
    assert "declares `preprocess` and `postprocess`" in said
    assert f"a {run} run never runs a model's processing code" in said


def test_the_code_never_runs_at_manifest_publish_lock_verify_or_show(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mark = tmp_path / "mark"
    monkeypatch.setenv(MARK, str(mark))
    cli = in_process_cli(monkeypatch, capsys, world.home.home, world.home.db)
    folder = tmp_path / "model"
    data = _model_data(folder, world.catalog, "2.0.0", preprocess=PRE, postprocess=POST)
    written = cli(
        "manifest",
        "model",
        str(folder / "digits-logreg.onnx"),
        str(folder / "proc.py"),
        "--name",
        "vision/digits-code",
        "--version",
        "2.0.0",
        "-o",
        str(folder / "written.yaml"),
    )
    assert written.code == 0, written.err
    assert "proc.py" in (folder / "written.yaml").read_text()
    (folder / "model.yaml").write_text(yaml.safe_dump(data))
    assert cli("publish", str(folder / "model.yaml")).code == 0
    request = tmp_path / "request.yaml"
    request.write_text(
        yaml.safe_dump({"model": "vision/digits-code@2.0.0", "dataset": "digits-raw@1"})
    )
    lockfile = tmp_path / "code.lock"
    assert cli("lock", str(request), "-o", str(lockfile)).code == 0
    assert cli("verify", str(lockfile)).code == 0
    assert cli("show", "model/vision/digits-code@2.0.0").code == 0
    assert not mark.exists()


def test_a_changed_code_file_fails_verify_naming_it(world: World, tmp_path: Path) -> None:
    ws = world.home.ws
    code = CODE + "# a file of its own\n"  # a blob no other model of the module shares
    model = _publish(
        ws, world.root, world.catalog, "3.0.0", code=code, preprocess=PRE, postprocess=POST
    )
    lock = _lock(ws, model)
    pinned = next(a for a in lock.body.artifacts if a.kind == "model")
    code_sha256 = next(f.sha256 for f in pinned.files if f.path == "proc.py")
    assert code_sha256 == sha(code.encode())
    blob = ws.store.path(Digest(code_sha256))
    kept = tmp_path / "kept"
    shutil.copy(blob, kept)
    blob.chmod(0o644)
    blob.write_bytes(code.replace("16.0", "15.0").encode())
    with pytest.raises(VerificationFailed, match=r"proc\.py") as raised:
        verify_lockfile(ws, lock, fetch=False)
    assert code_sha256[:12] in str(raised.value) or "checksum mismatch" in str(raised.value)
    with pytest.raises(VerificationFailed, match=r"proc\.py"):  # and a run stops there
        run_lockfile(ws, lock, say=quiet, allow_code=True)
    blob.write_bytes(kept.read_bytes())


# --- the declaration, checked ---------------------------------------------------------------

GOOD_PRE = "def prepare(sample, files):\n    return {'x': good(sample)}\n"
HEAD = (
    "import numpy as np\n"
    "def good(sample):\n"
    "    return (np.load(sample).astype(np.float32) / 16.0)[np.newaxis]\n"
)
# (reason, preprocess body, postprocess body, what the error names)
MISMATCHES = [
    (
        "an input under another name",
        "def prepare(sample, files):\n    return {'image': good(sample)}\n",
        None,
        "preprocess (<inline>:prepare) input 'x' is missing for sample data/0000.npy",
    ),
    (
        "an input the manifest does not declare",
        "def prepare(sample, files):\n    return {'x': good(sample), 'y': good(sample)}\n",
        None,
        "input 'y' is not declared",
    ),
    (
        "float64 where float32 is declared",
        "def prepare(sample, files):\n    return {'x': good(sample).astype(np.float64)}\n",
        None,
        "input 'x' has dtype float64 for sample data/0000.npy, the manifest declares "
        "element_type float32",
    ),
    (
        "the batch axis added by the code",
        "def prepare(sample, files):\n    return {'x': good(sample)[np.newaxis]}\n",
        None,
        "input 'x' has shape [1, 1, 8, 8] for sample data/0000.npy, the manifest declares shape "
        "[1, 8, 8]",
    ),
    (
        "a list, not an array",
        "def prepare(sample, files):\n    return {'x': good(sample).tolist()}\n",
        None,
        "input 'x' is a list for sample data/0000.npy, not a numpy array",
    ),
    (
        "the declared output under the graph's name",
        GOOD_PRE,
        "def finish(outputs, files):\n    return {'logits': outputs['logits']}\n",
        "postprocess (<inline>:finish) output 'probabilities' is missing",
    ),
    (
        "an output the manifest does not declare",
        GOOD_PRE,
        "def finish(o, files):\n    return {'probabilities': o['logits'], 'raw': o['logits']}\n",
        "output 'raw' is not declared",
    ),
    (
        "one row for the whole batch's axis",
        GOOD_PRE,
        "def finish(outputs, files):\n    return {'probabilities': outputs['logits'][0]}\n",
        "output 'probabilities' has shape [10] for the first prediction: its first axis must "
        "be the batch's 1",
    ),
    (
        "class names, not numbers",
        GOOD_PRE,
        "def finish(outputs, files):\n"
        "    return {'probabilities': outputs['logits'].astype(str)}\n",
        "output 'probabilities' has dtype <U",
    ),
]


@pytest.mark.parametrize(
    ("n", "pre", "post", "message"),
    [(n, *m[1:]) for n, m in enumerate(MISMATCHES)],
    ids=[m[0] for m in MISMATCHES],
)
def test_code_that_gives_other_than_the_declaration_fails_before_timing_naming_it(
    world: World, n: int, pre: str, post: str | None, message: str
) -> None:
    ws = world.home.ws
    version = f"4.0.{n}"
    fields: dict[str, Any] = {"preprocess": {"code": HEAD + pre, "function": "prepare"}}
    if post is not None:
        fields["postprocess"] = {"code": "import numpy as np\n" + post, "function": "finish"}
    model = _publish(ws, world.root, world.catalog, version, **fields)
    with pytest.raises(EvaluationFailed) as raised:  # the code's own process said it
        run_lockfile(ws, _lock(ws, model), say=quiet, allow_code=True)
    assert message in str(raised.value)
    failed = show_run(ws, list_runs(ws)[0]["id"])
    assert failed["status"] == "failed" and message in failed["error"]
    assert "latencies_sha256" in failed and failed["latencies_sha256"] is None  # none timed
    assert "loadgen" not in failed["details"]


def test_code_that_raises_fails_the_run_naming_the_code_the_sample_and_its_line(
    world: World,
) -> None:
    ws = world.home.ws
    code = "def prepare(sample, files):\n    raise ValueError('no such pixel')\n"
    model = _publish(
        ws, world.root, world.catalog, "5.0.0", preprocess={"code": code, "function": "prepare"}
    )
    with pytest.raises(EvaluationFailed) as raised:  # the code's own process said it
        run_lockfile(ws, _lock(ws, model), say=quiet, allow_code=True)
    assert str(raised.value) == (
        "preprocess (<inline>:prepare) failed on sample data/0000.npy: ValueError: no such "
        "pixel (<inline preprocess> line 2)"
    )


# (reason, the model's fields, what the refusal says)
BAD_DECLARATIONS = [
    (
        "a code file not among the files",
        {"preprocess": {"file": "other.py", "function": "prepare"}},
        "preprocess file 'other.py' is not among the files",
    ),
    (
        "both a file and inline code",
        {"postprocess": {"file": "proc.py", "code": "x = 1", "function": "finish"}},
        "either a `file` of the artifact or inline `code`, exactly one",
    ),
    (
        "a function name that is not one",
        {"postprocess": {"file": "proc.py", "function": "finish()"}},
        "function 'finish()' is not a Python function name",
    ),
    (
        "input steps beside preprocess",
        {"preprocess": PRE, "inputs": [{**INPUTS[0], "steps": [{"layout": {"to": "NCHW"}}]}]},
        "input 'x' declares steps, but `preprocess` makes every input fed from the samples",
    ),
    (
        "preprocess with no input declared",
        {"preprocess": PRE, "inputs": []},
        "`preprocess` gives the inputs fed from the samples: declare them",
    ),
    (
        "a file that is not Python",
        {"preprocess": {"file": "digits-logreg.onnx", "function": "prepare"}},
        "processing code file 'digits-logreg.onnx' must be a .py file",
    ),
]


@pytest.mark.parametrize(
    ("fields", "words"), [b[1:] for b in BAD_DECLARATIONS], ids=[b[0] for b in BAD_DECLARATIONS]
)
def test_a_wrong_processing_declaration_is_refused_when_the_manifest_is_read(
    world: World, tmp_path: Path, fields: dict[str, Any], words: str
) -> None:
    with pytest.raises(ManifestError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_manifest(_model_data(tmp_path, world.catalog, "9.0.0", **fields))


def test_a_model_without_code_keeps_its_manifest_and_lockfile_digests(world: World) -> None:
    """The new fields are left out of the stored data while unset."""
    data = _model_data(world.root / "plain", world.catalog, "9.9.9")
    plain = parse_manifest(data)
    from pinbench.registry.manifest import manifest_data

    assert "preprocess" not in manifest_data(plain)
    assert "postprocess" not in manifest_data(plain)
    catalog_lock = service.lock(
        world.home.ws,
        parse_request({"model": f"{builtin.MODEL_NAME}@1.1.0", "dataset": "digits-raw@1"}),
    )[0]
    assert b"preprocess" not in catalog_lock.canonical


def test_a_library_installed_after_the_first_record_is_recorded_with_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed distributions are read once per process for speed; a distribution
    installed since (a long-lived runner, a ``pip install`` between two runs) is still found,
    not recorded as ``not installed`` while the code imports it. (The map of installed
    distributions is this test's own: the real one takes seconds to read.)"""
    from importlib import metadata

    from pinbench.processing import loading

    info = tmp_path / "pinbench_probe_lib-1.2.3.dist-info"
    reads: list[int] = []

    def installed() -> dict[str, list[str]]:
        reads.append(1)
        probe = {"pinbench_probe_lib": ["pinbench-probe-lib"]} if info.exists() else {}
        return {"numpy": ["numpy"], **probe}

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(metadata, "packages_distributions", installed)
    loading._distributions.cache_clear()
    try:
        source = b"import pinbench_probe_lib\n"
        assert loading.libraries(source)["pinbench_probe_lib"] == "not installed"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: pinbench-probe-lib\nVersion: 1.2.3\n"
        )
        reads.clear()
        want = {"numpy": np.__version__, "pinbench-probe-lib": "1.2.3"}
        assert loading.libraries(source) == want
        assert loading.libraries(source) == want
        assert len(reads) == 1  # read again once, then kept
    finally:
        loading._distributions.cache_clear()  # not this test's map for the next
