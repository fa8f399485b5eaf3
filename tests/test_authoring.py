"""``pinbench manifest model|framework``: manifests written from the files an author has.

Each model is a tiny real one built here in its own format; the manifest written is read back
with ``load_manifest`` and compared with what the model itself says. One test goes from an
ONNX file to an accuracy run with nothing but CLI commands and two YAML edits.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import torch
import yaml
from onnx import TensorProto, helper

from pinbench.catalog import frameworks
from pinbench.registry.manifest import (
    FrameworkManifest,
    ModelManifest,
    load_manifest,
    manifest_digest,
)
from pinbench.registry.ports import Input
from tests.helpers import Cli, dump, sha

CLASSES = 10


class Tiny(torch.nn.Module):
    """``x (N, 1, 8, 8) -> logits (N, 10)``: logit k is pixel (0, k), so a sample whose
    first row is one-hot at k is class k."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, CLASSES)
        with torch.no_grad():
            self.linear.weight.zero_()
            self.linear.bias.zero_()
            for k in range(8):
                self.linear.weight[k, k] = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))  # type: ignore[no-any-return]


EXAMPLE = torch.zeros(2, 1, 8, 8)


def _onnx(path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Tiny().eval(),
            (EXAMPLE,),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["logits"],
            dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}},
        )
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder: the model as ONNX, TorchScript, torch.export, and a state dict."""
    root = tmp_path_factory.mktemp("models")
    _onnx(root / "tiny.onnx")
    module = Tiny().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script, in torch 2.13
        torch.jit.script(module).save(str(root / "tiny.pt"))  # type: ignore[no-untyped-call]
    batch = torch.export.Dim("batch", min=1)
    program = torch.export.export(module, (EXAMPLE,), dynamic_shapes={"x": {0: batch}})
    torch.export.save(program, str(root / "tiny.pt2"))
    torch.save(module.state_dict(), str(root / "weights.pth"))
    (root / "labels.txt").write_text("\n".join(str(k) for k in range(CLASSES)) + "\n")
    return root


def _model(cli: Cli, *args: str, output: Path) -> tuple[ModelManifest, str]:
    result = cli("manifest", "model", *args, "-o", str(output), "--force")  # cases share files
    assert result.code == 0, result.err
    manifest = load_manifest(output)
    assert isinstance(manifest, ModelManifest)
    return manifest, result.err


def _file_entry(manifest: ModelManifest, root: Path, rel: str) -> None:
    entry = next(f for f in manifest.files if f.path == rel)
    data = (root / rel).read_bytes()
    assert (entry.sha256, entry.size) == (sha(data), len(data))


def test_onnx(cli: Cli, models: Path) -> None:
    manifest, notes = _model(cli, str(models / "tiny.onnx"), output=models / "onnx.yaml")
    assert (manifest.name, manifest.version, manifest.format) == ("tiny", "1.0.0", "onnx")
    assert (manifest.framework.name, manifest.framework.range) == ("onnxruntime", ">=1.17 <2")
    assert [f.path for f in manifest.files] == ["tiny.onnx"]
    _file_entry(manifest, models, "tiny.onnx")
    assert manifest.inputs == [Input(name="x", element_type="float32", shape=[1, 8, 8])]
    assert [(o.name, o.type) for o in manifest.outputs] == [("logits", "tensor")]
    assert "type: classification" in notes  # the author is told what is left to them


def test_torchscript_tells_names_only(cli: Cli, models: Path) -> None:
    manifest, notes = _model(cli, str(models / "tiny.pt"), output=models / "ts.yaml")
    assert (manifest.format, manifest.framework.name) == ("torchscript", "torch")
    _file_entry(manifest, models, "tiny.pt")
    assert manifest.inputs == [Input(name="x", element_type="float32", shape=[])]
    assert [o.name for o in manifest.outputs] == [0]  # no names in PyTorch: by index
    assert "records no element type" in notes and "records no shape" in notes


def test_torch_export(cli: Cli, models: Path) -> None:
    manifest, _ = _model(
        cli,
        str(models / "tiny.pt2"),
        "--name",
        "vision/tiny",
        "--version",
        "2.1.0",
        "--framework-range",
        "^2.13",
        output=models / "export.yaml",
    )
    assert (manifest.name, manifest.version, manifest.format) == (
        "vision/tiny",
        "2.1.0",
        "torch-export",
    )
    assert manifest.framework.range == "^2.13"
    _file_entry(manifest, models, "tiny.pt2")
    assert manifest.inputs == [Input(name="x", element_type="float32", shape=[1, 8, 8])]
    assert len(manifest.outputs) == 1


def test_other_files_come_along(cli: Cli, models: Path) -> None:
    manifest, _ = _model(
        cli,
        str(models / "labels.txt"),
        str(models / "tiny.onnx"),
        output=models / "with-labels.yaml",
    )
    assert [f.path for f in manifest.files] == ["tiny.onnx", "labels.txt"]
    _file_entry(manifest, models, "labels.txt")


def _graph_model(path: Path, elem: int, dims: list[int | str]) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["in"], ["out"])],
        "g",
        [helper.make_tensor_value_info("in", elem, dims)],
        [helper.make_tensor_value_info("out", elem, dims)],
    )
    onnx.save(helper.make_model(graph), str(path))
    return path


@pytest.mark.parametrize(
    ("elem", "dims", "element_type", "shape", "note"),
    [
        (TensorProto.FLOAT, ["N", 3, 4], "float32", [3, 4], None),
        (TensorProto.INT64, ["N", 7], "int64", [7], None),  # token ids
        (TensorProto.FLOAT16, [1, 2], "float16", [2], None),  # a static batch axis is dropped
        (TensorProto.UINT8, ["N"], "uint8", [], None),  # rank 1: nothing after the batch axis
        # a dynamic dimension after the batch axis cannot be declared: no shape, and a note
        (TensorProto.FLOAT, ["N", 3, "H", "W"], "float32", [], "dynamic"),
    ],
)
def test_onnx_element_types_and_shapes(
    cli: Cli,
    tmp_path: Path,
    elem: int,
    dims: list[int | str],
    element_type: str,
    shape: list[int],
    note: str | None,
) -> None:
    path = _graph_model(tmp_path / "g.onnx", elem, dims)
    manifest, notes = _model(cli, str(path), output=tmp_path / "g.yaml")
    assert manifest.inputs == [Input(name="in", element_type=element_type, shape=shape)]  # type: ignore[arg-type]
    if note is not None:
        assert note in notes


def test_onnx_external_data_files_are_listed_under_their_folder(cli: Cli, tmp_path: Path) -> None:
    nested = tmp_path / "nested"
    nested.mkdir()
    model = onnx.load(str(_onnx(tmp_path / "plain.onnx")))
    onnx.save_model(
        model,
        str(nested / "big.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="big.onnx.data",
        size_threshold=0,
    )
    manifest, _ = _model(cli, str(nested / "big.onnx"), output=tmp_path / "big.yaml")
    assert [f.path for f in manifest.files] == ["nested/big.onnx", "nested/big.onnx.data"]
    _file_entry(manifest, tmp_path, "nested/big.onnx.data")


def test_keras_and_savedmodel(cli: Cli, tmp_path: Path) -> None:
    import keras

    inp = keras.Input((8, 8, 1), name="image")
    out = keras.layers.Dense(CLASSES, name="scores")(keras.layers.Flatten()(inp))
    model = keras.Model(inp, out)
    model.save(str(tmp_path / "tiny.keras"))
    model.export(str(tmp_path / "saved"), verbose=False)

    manifest, _ = _model(cli, str(tmp_path / "tiny.keras"), output=tmp_path / "keras.yaml")
    assert (manifest.format, manifest.framework.name) == ("keras", "tensorflow")
    assert manifest.inputs == [Input(name="image", element_type="float32", shape=[8, 8, 1])]
    assert [o.name for o in manifest.outputs] == ["scores"]

    manifest, _ = _model(cli, str(tmp_path / "saved"), output=tmp_path / "saved.yaml")
    assert (manifest.name, manifest.format) == ("saved", "savedmodel")
    paths = [f.path for f in manifest.files]
    assert "saved/saved_model.pb" in paths
    assert "saved/variables/variables.index" in paths
    _file_entry(manifest, tmp_path, "saved/variables/variables.index")
    assert manifest.inputs == [Input(name="image", element_type="float32", shape=[8, 8, 1])]
    assert len(manifest.outputs) == 1


def test_printed_without_output_paths_relative_to_the_current_folder(
    cli: Cli, models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(models)
    result = cli("manifest", "model", "tiny.onnx")
    assert result.code == 0, result.err
    data = yaml.safe_load(result.out)
    assert data["files"][0]["path"] == "tiny.onnx"
    assert data["kind"] == "model"


def test_output_dash_prints_as_no_output_does(
    cli: Cli, models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-o -` is standard output, as for most tools (it wrote a file named `-`)."""
    monkeypatch.chdir(models)
    result = cli("manifest", "model", "tiny.onnx", "-o", "-")
    assert result.code == 0, result.err
    assert yaml.safe_load(result.out)["files"][0]["path"] == "tiny.onnx"
    assert not (models / "-").exists()


def test_a_labels_file_not_among_the_files_says_how_to_list_it(tmp_path: Path) -> None:
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.manifest_parts import ManifestError

    data = {
        "kind": "model",
        "name": "m",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": [{"path": "m.onnx", "sha256": "a" * 64}],
        "outputs": [{"name": "y", "type": "tensor", "labels": {"path": "labels.txt"}}],
    }
    with pytest.raises(ManifestError, match=r"`pinbench manifest model MODEL labels\.txt` does"):
        parse_manifest(data)


def test_framework_manifest_is_the_lock_with_the_evaluators_dependencies(
    cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "fw.yaml"
    result = cli("manifest", "framework", "onnxruntime==1.31.0", "-o", str(path))
    assert result.code == 0, result.err
    manifest = load_manifest(path)
    assert isinstance(manifest, FrameworkManifest)
    assert (manifest.name, manifest.version) == ("onnxruntime", "1.31.0")
    (env,) = manifest.environments
    names = {r.name for r in env.requirements}
    # the wheel alone is not enough: the evaluator imports these in the run's environment
    assert {"onnxruntime", "msgspec", "numpy", "mlcommons-loadgen", "pyyaml"} <= names
    assert all(r.hashes for r in env.requirements)
    # the very manifest the catalog publishes: publishing it next to the catalog is a no-op
    catalog = load_manifest(frameworks.write(tmp_path, "onnxruntime"))
    assert manifest_digest(manifest) == manifest_digest(catalog)


def _refused(result: Any, *words: str) -> None:
    assert result.code == 1, (result.out, result.err)
    assert "Traceback" not in result.err
    for word in words:
        assert word in result.err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["onnxruntime=1.31.0"], ["NAME==VERSION"]),  # one '=': not a pin
        (["onnxruntime"], ["NAME==VERSION"]),  # no version
        (["onnxruntime==1.17.0"], ["onnxruntime==1.31.0", "torch==2.13.0"]),  # no lock
        (["mxnet==1.9.1"], ["no hash-pinned environment for mxnet==1.9.1"]),
    ],
)
def test_framework_refused(cli: Cli, tmp_path: Path, args: list[str], words: list[str]) -> None:
    out = tmp_path / "fw.yaml"
    _refused(cli("manifest", "framework", *args, "-o", str(out)), *words)
    assert not out.exists()


def test_an_unwritable_output_is_a_user_error(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "missing-folder" / "fw.yaml"
    _refused(cli("manifest", "framework", "torch==2.13.0", "-o", str(out)), "does not exist")


def test_model_refused(cli: Cli, models: Path, tmp_path: Path) -> None:
    """Bad input: a clear error, exit 1, no traceback, nothing written."""
    out = tmp_path / "m.yaml"

    def refused(*args: str, words: list[str], output: Path = out) -> None:
        _refused(cli("manifest", "model", *args, "-o", str(output)), *words)
        assert not output.exists()

    work = tmp_path / "work"
    work.mkdir()
    for name in ("tiny.onnx", "tiny.pt", "weights.pth", "labels.txt"):
        shutil.copy(models / name, work / name)
    (work / "junk.jit").write_bytes(b"PK\x03\x04 not a zip")  # a TorchScript name, no archive
    (work / "junk.onnx").write_bytes(b"\xff\xff not protobuf")
    inside = work / "m.yaml"

    refused(str(work / "labels.txt"), words=["exactly one model", "found none"], output=inside)
    refused(
        str(work / "weights.pth"),
        words=["a PyTorch state dict", "declare format: torch-state-dict", "builder"],
        output=inside,
    )
    refused(str(work / "junk.jit"), words=["not a TorchScript or torch.export"], output=inside)
    shutil.copy(models / "tiny.onnx", work / "upper.ONNX")  # the run looks for .onnx
    refused(str(work / "upper.ONNX"), words=["name it upper.onnx"], output=inside)
    refused(str(work / "junk.onnx"), words=["not an ONNX model"], output=inside)
    refused(
        str(work / "tiny.onnx"), str(work / "tiny.pt"), words=["exactly one model"], output=inside
    )
    refused(str(work / "missing.onnx"), words=["no such file"], output=inside)
    # the model is not under the folder of the -o file: no path could reach it
    refused(str(models / "tiny.onnx"), words=["outside", "-o"], output=work / "sub.yaml")
    (work / "link.onnx").symlink_to(models / "tiny.onnx")  # inside by name, outside by bytes
    refused(str(work / "link.onnx"), words=["outside", "symlink"], output=inside)
    refused(str(work / "tiny.onnx"), "--name", "Bad Name", words=["invalid name"], output=inside)


def test_missing_onnx_sidecar_is_refused(cli: Cli, tmp_path: Path) -> None:
    model = onnx.load(str(_onnx(tmp_path / "plain.onnx")))
    onnx.save_model(
        model,
        str(tmp_path / "big.onnx"),
        save_as_external_data=True,
        location="big.onnx.data",
        size_threshold=0,
    )
    (tmp_path / "big.onnx.data").unlink()
    out = tmp_path / "big.yaml"
    _refused(
        cli("manifest", "model", str(tmp_path / "big.onnx"), "-o", str(out)),
        "big.onnx.data",
        "does not exist beside the model",
    )
    assert not out.exists()


def _npy_dataset(root: Path, name: str, images: np.ndarray, labels: np.ndarray) -> Path:
    """``images.npy`` and ``labels.npy`` under ``root`` and ``root/dataset.yaml``, the dataset
    ``NAME@1.0.0`` of those samples (``CLASSES`` classes)."""
    np.save(root / "images.npy", images, allow_pickle=False)
    np.save(root / "labels.npy", labels.astype(np.int64), allow_pickle=False)
    files = [
        {"path": n, "sha256": sha((root / n).read_bytes()), "size": (root / n).stat().st_size}
        for n in ("images.npy", "labels.npy")
    ]
    dataset = {
        "kind": "dataset",
        "name": name,
        "version": "1.0.0",
        "samples": len(images),
        "data": {"format": "npy", "path": "images.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": CLASSES},
        "files": files,
    }
    return dump(root / "dataset.yaml", dataset)


def _accuracy_run(cli: Cli, framework: Path, model: Path, dataset: Path) -> dict[str, Any]:
    """With CLI commands only: ``init``, publish the three manifests, lock an accuracy run of
    the model on the framework and dataset, run it with the local runner; the run, succeeded."""
    assert cli("init").code == 0
    for path in (framework, model, dataset):
        published = cli("publish", str(path))
        assert published.code == 0, published.err
    name = {p: yaml.safe_load(p.read_text())["name"] for p in (framework, model, dataset)}
    request = dump(
        model.parent / "request.yaml",
        {
            "model": f"{name[model]}@1",
            "framework": f"{name[framework]}@*",
            "dataset": f"{name[dataset]}@1",
            "scenario": {"mode": "accuracy"},
        },
    )
    lock = model.parent / "model.lock"
    locked = cli("lock", str(request), "-o", str(lock))
    assert locked.code == 0, locked.err
    ran = cli("run", str(lock), "--runner", "local")
    assert ran.code == 0, ran.err
    (run,) = json.loads(cli("runs", "list", "--json").out)
    assert run["status"] == "succeeded"
    found: dict[str, Any] = run
    return found


@pytest.mark.parametrize(
    ("model_file", "framework"),
    [
        ("tiny.onnx", "onnxruntime==1.31.0"),
        ("tiny.pt", "torch==2.13.0"),  # TorchScript: the manifest declares names only
        ("tiny.pt2", "torch==2.13.0"),
    ],
)
def test_from_a_model_file_to_an_accuracy_run(
    cli: Cli, models: Path, tmp_path: Path, model_file: str, framework: str
) -> None:
    """files -> manifests (two edits: the classification output, the layout step) ->
    publish -> lock -> run: the manifest written binds to the model when the run opens it."""
    root = tmp_path / "work"
    root.mkdir()
    shutil.copy(models / model_file, root / model_file)

    model_yaml = root / "model.yaml"
    written = cli("manifest", "model", str(root / model_file), "-o", str(model_yaml))
    assert written.code == 0, written.err
    data = yaml.safe_load(model_yaml.read_text())
    data["inputs"][0]["steps"] = [{"layout": {"to": "NCHW"}}]
    data["outputs"][0]["type"] = "classification"
    model_yaml.write_text(yaml.safe_dump(data, sort_keys=False))
    fw_yaml = root / "framework.yaml"
    fw = cli("manifest", "framework", framework, "-o", str(fw_yaml))
    assert fw.code == 0, fw.err

    # a dataset whose sample k has its first row one-hot at its label: top-1 is exactly 1
    labels = np.arange(24) % 8
    images = np.zeros((24, 8, 8), dtype=np.float32)
    images[np.arange(24), 0, labels] = 1.0
    dataset_yaml = _npy_dataset(root, "onehot", images, labels)

    run = _accuracy_run(cli, fw_yaml, model_yaml, dataset_yaml)
    assert run["top1"] == 1.0


def test_a_missing_library_names_the_extra(
    cli: Cli, models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx -> ImportError
    shutil.copy(models / "tiny.onnx", tmp_path / "tiny.onnx")
    out = tmp_path / "m.yaml"
    _refused(
        cli("manifest", "model", str(tmp_path / "tiny.onnx"), "-o", str(out)),
        "pip install 'pinbench[catalog]'",
    )
    assert not out.exists()


def test_steps_and_the_classification_output_can_be_given_on_the_command_line(
    cli: Cli, models: Path, tmp_path: Path
) -> None:
    steps = tmp_path / "steps.yaml"
    steps.write_text("- normalize: {scale: 0.0625}\n- layout: {to: NCHW}\n")
    out = models / "steps.yaml"
    args = [str(models / "tiny.onnx"), "--steps", str(steps), "--classification", "logits"]
    manifest, notes = _model(cli, *args, output=out)
    assert [s.layout is not None for s in manifest.inputs[0].steps] == [False, True]
    assert [(o.name, o.type) for o in manifest.outputs] == [("logits", "classification")]
    assert "type: classification" not in notes  # nothing left to the author


@pytest.mark.parametrize(
    ("given", "told", "not_told"),
    [
        ([], ["type: classification", "input `steps`"], []),
        # the output is marked: only the steps are left (the hint was printed all the same)
        (["--classification", "logits"], ["input `steps`"], ["type: classification"]),
        (["--steps", "{steps}"], ["type: classification"], ["input `steps`"]),
    ],
)
def test_notes_name_only_what_is_left_to_the_author(
    cli: Cli, models: Path, tmp_path: Path, given: list[str], told: list[str], not_told: list[str]
) -> None:
    steps = tmp_path / "steps.yaml"
    steps.write_text("- layout: {to: NCHW}\n")
    args = [a.format(steps=steps) for a in given]
    _, notes = _model(cli, str(models / "tiny.onnx"), *args, output=models / "notes.yaml")
    assert [w for w in told if w not in notes] == []
    assert [w for w in not_told if w in notes] == []


@pytest.mark.parametrize(
    ("steps", "classification", "words"),
    [
        ("- resize: {}\n", "logits", ["size", "steps"]),  # a step the schema refuses
        ("{nope: []}\n", "logits", ["--steps names input 'nope'", "inputs: x"]),
        ("[]\n", "probs", ["--classification names output 'probs'", "outputs: logits"]),
        ("just text\n", "logits", ["want a list of steps"]),
    ],
)
def test_bad_steps_or_classification_write_nothing(
    cli: Cli, models: Path, tmp_path: Path, steps: str, classification: str, words: list[str]
) -> None:
    path = tmp_path / "steps.yaml"
    path.write_text(steps)
    out = models / "refused.yaml"
    result = cli(
        "manifest",
        "model",
        str(models / "tiny.onnx"),
        "--steps",
        str(path),
        "--classification",
        classification,
        "-o",
        str(out),
    )
    _refused(result, *words)
    assert not out.exists()


def test_a_keras_sequential_model_from_its_file_to_an_accuracy_run(
    cli: Cli, tmp_path: Path
) -> None:
    """A ``keras.Sequential`` model (no ``output_names``): manifest -> publish -> lock -> run
    with the TensorFlow predictor; top-1 equals the model's own ``predict`` on the samples."""
    import keras

    root = tmp_path / "work"
    root.mkdir()
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1), name="pixels"),
            keras.layers.Flatten(),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(CLASSES, name="scores"),
        ]
    )
    model.save(str(root / "seq.keras"))
    rng = np.random.default_rng(0)
    images = rng.normal(size=(40, 8, 8)).astype(np.float32)
    predicted = model.predict(images[..., None], verbose=0).argmax(1)
    labels = predicted.copy()
    labels[::3] = (labels[::3] + 1) % CLASSES  # a third wrong: top-1 is not trivially 0 or 1
    dataset_yaml = _npy_dataset(root, "noise", images, labels)

    steps = root / "steps.yaml"
    steps.write_text("- layout: {to: NHWC}\n")
    model_yaml = root / "model.yaml"
    args = ["--steps", str(steps), "--classification", "scores", "-o", str(model_yaml)]
    written = cli("manifest", "model", str(root / "seq.keras"), *args)
    assert written.code == 0, written.err
    manifest = load_manifest(model_yaml)
    assert isinstance(manifest, ModelManifest)
    assert manifest.inputs[0].name == "pixels" and manifest.inputs[0].shape == [8, 8, 1]
    assert [(o.name, o.type) for o in manifest.outputs] == [("scores", "classification")]
    fw_yaml = root / "framework.yaml"
    assert cli("manifest", "framework", "tensorflow==2.21.0", "-o", str(fw_yaml)).code == 0
    run = _accuracy_run(cli, fw_yaml, model_yaml, dataset_yaml)
    assert run["top1"] == float(np.mean(predicted == labels))
    assert 0.5 < run["top1"] < 1.0
