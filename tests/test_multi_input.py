"""Models of two inputs on PyTorch and TensorFlow, fed by name: a TorchScript archive named
``.jit`` (found by its content), a ``torch.export`` program taking its second input by keyword,
a SavedModel whose serving signature takes an ``int32`` input beside a ``float32`` one, and a
Keras model of two inputs. Each input is its own pipeline from the same samples; the model
binds them by its own names (``forward``'s arguments, the signature's, the Keras inputs'),
never by position, and a declared input the model lacks is refused before anything is timed.

The end-to-end runs use CLI commands only (manifest, publish, lock, run); the outputs an
accuracy run records equal the framework's own call on the same arrays, made here."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from pinbench.artifacts.torchscript import torchscript_file
from pinbench.authoring.model import model_format
from pinbench.config import Settings
from pinbench.evaluator.run import array_of
from pinbench.registry.formats import FormatMismatch
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.ports import Input
from pinbench.registry.publish import publish
from pinbench.worker.named import NamedInputs
from pinbench.worker.predictors import predictor_class
from pinbench.worker.predictors.base import ModelLoadError, SignatureMismatch
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.workspace import Workspace
from tests.helpers import Cli, dump, sha, write_files
from tests.package_models import package_file

Array = np.ndarray[Any, Any]
CLASSES = 10
SAMPLES = 24
STEPS = {  # each input its own pipeline from the same (N, 8, 8) samples
    "image": [{"normalize": {"scale": 0.0625}}, {"layout": {"to": "NCHW"}}],  # (N, 1, 8, 8)
    "extra": [{"layout": {"to": "NHWC"}}],  # (N, 8, 8, 1), cast to its element type
}
PERFORMANCE = {"mode": "performance", "min_duration_ms": 0, "min_query_count": 20}


def _samples() -> Array:
    """Integer-valued pixels 0..16, as the digits' (so an int input loses nothing)."""
    return np.random.default_rng(0).integers(0, 17, (SAMPLES, 8, 8)).astype(np.float32)


def _fed(samples: Array, extra: type[np.generic]) -> dict[str, Array]:
    """What ``STEPS`` make of the samples, by hand."""
    return {
        "image": (samples * 0.0625)[:, None, :, :].astype(np.float32),
        "extra": samples[:, :, :, None].astype(extra),
    }


class TwoInputs(torch.nn.Module):
    """``image (N, 1, 8, 8) float32, extra (N, 8, 8, 1) int64 -> logits (N, 10)``: each input
    through its own linear layer (swapped inputs give other logits, or none)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Linear(64, CLASSES)
        self.b = torch.nn.Linear(64, CLASSES)

    def forward(self, image: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
        return self.a(image.flatten(1)) + self.b(extra.flatten(1).float() / 4)  # type: ignore[no-any-return]


def _torch_models(root: Path) -> dict[str, Path]:
    """``TwoInputs`` scripted as ``two.jit``, and exported with ``extra`` a keyword argument."""
    module = TwoInputs().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script, in torch 2.13
        torch.jit.script(module).save(str(root / "two.jit"))  # type: ignore[no-untyped-call]
    fed = _fed(_samples()[:2], np.int64)
    batch = torch.export.Dim("batch", min=1)
    program = torch.export.export(
        module,
        (torch.from_numpy(fed["image"]),),
        {"extra": torch.from_numpy(fed["extra"])},
        dynamic_shapes={"image": {0: batch}, "extra": {0: batch}},
    )
    torch.export.save(program, str(root / "two.pt2"))
    return {"torchscript": root / "two.jit", "torch-export": root / "two.pt2"}


def _savedmodel(folder: Path) -> Callable[[dict[str, Array]], Array]:
    """A ``tf.Module`` whose ``serving_default`` takes ``image`` (float32) and ``extra`` (int32)
    and gives ``logits``, saved at ``folder``; its direct call."""
    import tensorflow as tf

    rng = np.random.default_rng(1)

    class Two(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.a = tf.Variable(rng.normal(size=(64, CLASSES)).astype(np.float32))
            self.b = tf.Variable(rng.normal(size=(64, CLASSES)).astype(np.float32))

        @tf.function(  # type: ignore[untyped-decorator]
            input_signature=[
                tf.TensorSpec([None, 1, 8, 8], tf.float32, name="image"),
                tf.TensorSpec([None, 8, 8, 1], tf.int32, name="extra"),
            ]
        )
        def serve(self, image: Any, extra: Any) -> dict[str, Any]:
            flat = tf.cast(tf.reshape(extra, [-1, 64]), tf.float32) / 4
            return {"logits": tf.reshape(image, [-1, 64]) @ self.a + flat @ self.b}

    model = Two()
    tf.saved_model.save(model, str(folder), signatures={"serving_default": model.serve})
    return lambda fed: model.serve(image=fed["image"], extra=fed["extra"])["logits"].numpy()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each two-input model by format: its file or folder and its direct call."""
    root = tmp_path_factory.mktemp("two")
    found: dict[str, Any] = {}
    module = TwoInputs().eval()
    for fmt, path in _torch_models(root).items():

        def direct(fed: dict[str, Array]) -> Array:
            with torch.inference_mode():
                image, extra = torch.from_numpy(fed["image"]), torch.from_numpy(fed["extra"])
                return module(image, extra).numpy()  # type: ignore[no-any-return]

        scores = "0" if fmt == "torchscript" else "add"  # a program names its outputs by node
        found[fmt] = (path, direct, np.int64, "torch==2.13.0", scores)
    direct_tf = _savedmodel(root / "two_savedmodel")
    found["savedmodel"] = (root / "two_savedmodel", direct_tf, np.int32, "tensorflow==2.21.0")
    found["savedmodel"] += ("logits",)
    return found


def _ok(result: Any) -> Any:
    assert result.code == 0, result.err
    return result


def _manifests(cli: Cli, root: Path, model: Path, framework: str, scores: str) -> dict[str, Any]:
    """``manifest model`` (each input's steps, the output of class scores) and ``manifest
    framework`` under ``root``: the model manifest's data."""
    steps = root / "steps.yaml"
    steps.write_text(yaml.safe_dump(STEPS))
    model_yaml = root / "model.yaml"
    args = ["--steps", str(steps), "--classification", scores, "-o", str(model_yaml)]
    _ok(cli("manifest", "model", str(model), *args))
    _ok(cli("manifest", "framework", framework, "-o", str(root / "framework.yaml")))
    data: dict[str, Any] = yaml.safe_load(model_yaml.read_text())
    return data


def _dataset(root: Path, labels: Array) -> Path:
    """The samples and ``labels`` as the dataset ``two-inputs@1.0.0``: its manifest."""
    np.save(root / "images.npy", _samples(), allow_pickle=False)
    np.save(root / "labels.npy", labels.astype(np.int64), allow_pickle=False)
    files = [
        {"path": n, "sha256": sha((root / n).read_bytes()), "size": (root / n).stat().st_size}
        for n in ("images.npy", "labels.npy")
    ]
    data = {"format": "npy", "path": "images.npy"}
    truth = {"format": "class-index-npy", "path": "labels.npy", "classes": CLASSES}
    dataset = {"kind": "dataset", "name": "two-inputs", "version": "1.0.0", "samples": SAMPLES}
    return dump(root / "dataset.yaml", {**dataset, "data": data, "labels": truth, "files": files})


def _runs(cli: Cli, root: Path, manifests: list[Path]) -> dict[str, Any]:
    """init, publish the manifests (framework, model, dataset), lock and run an accuracy and
    a performance run: each run as ``runs show --json`` gives it, by mode."""
    _ok(cli("init"))
    for path in manifests:
        _ok(cli("publish", str(path)))
    framework, model, dataset = (yaml.safe_load(p.read_text())["name"] for p in manifests)
    request = {"model": f"{model}@1", "framework": f"{framework}@*", "dataset": f"{dataset}@1"}
    runs = {}
    for mode, scenario in (("accuracy", {"mode": "accuracy"}), ("performance", PERFORMANCE)):
        req = dump(root / f"{mode}.yaml", {**request, "scenario": scenario})
        _ok(cli("lock", str(req), "-o", str(root / f"{mode}.lock")))
        _ok(cli("run", str(root / f"{mode}.lock"), "--runner", "local"))
        newest = json.loads(_ok(cli("runs", "list", "--json")).out)[0]
        assert newest["status"] == "succeeded"
        runs[mode] = json.loads(_ok(cli("runs", "show", newest["id"], "--json")).out)
    return runs


@pytest.mark.parametrize("fmt", ["torchscript", "torch-export", "savedmodel"])
def test_a_two_input_model_runs_from_its_files_with_cli_commands(
    cli: Cli, models: dict[str, Any], tmp_path: Path, fmt: str
) -> None:
    """files -> manifests (the element types TorchScript does not record set by the author)
    -> publish -> lock -> accuracy and performance runs. The accuracy run's recorded outputs
    are the framework's own call on the two inputs."""
    path, direct, extra_type, framework, scores = models[fmt]
    root = tmp_path / "work"
    root.mkdir()
    if path.is_dir():
        shutil.copytree(path, root / path.name)
    else:
        shutil.copy(path, root / path.name)
    data = _manifests(cli, root, root / path.name, framework, scores)
    assert data["format"] == fmt  # two.jit: a TorchScript archive by its content
    assert sorted(i["name"] for i in data["inputs"]) == ["extra", "image"]
    for spec in data["inputs"]:
        if fmt == "torchscript":
            spec["element_type"] = "int64" if spec["name"] == "extra" else "float32"
        assert spec["element_type"] == np.dtype(extra_type if spec["name"] == "extra" else "f4")
    dump(root / "model.yaml", data)

    expected = direct(_fed(_samples(), extra_type))
    labels = expected.argmax(1)
    labels[::3] = (labels[::3] + 1) % CLASSES  # a third wrong: top-1 is not trivially 1
    manifests = [root / "framework.yaml", root / "model.yaml", _dataset(root, labels)]
    runs = _runs(cli, root, manifests)

    accuracy = runs["accuracy"]
    assert accuracy["top1"] == pytest.approx(np.mean(expected.argmax(1) == labels))
    ws = Workspace(Settings.from_env({"PINBENCH_HOME": str(tmp_path / "home")}))
    try:
        recorded = array_of(ws, accuracy["details"]["outputs_sha256"], "outputs")
    finally:
        ws.close()
    np.testing.assert_allclose(recorded, expected, rtol=1e-5, atol=1e-5)
    assert runs["performance"]["queries_count"] >= PERFORMANCE["min_query_count"]


@pytest.fixture(scope="module")
def keras_two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A functional Keras model of two inputs, ``image`` then ``extra``: its file, the model."""
    import keras

    keras.utils.set_random_seed(0)
    image = keras.Input((1, 8, 8), name="image")
    extra = keras.Input((8, 8, 1), name="extra")
    both = keras.layers.Concatenate()(
        [keras.layers.Flatten()(image), keras.layers.Flatten()(extra)]
    )
    model = keras.Model([image, extra], keras.layers.Dense(CLASSES, name="scores")(both))
    path = tmp_path_factory.mktemp("keras") / "two.keras"
    model.save(path)
    return path, model


def _files(path: Path) -> dict[str, Path]:
    if path.is_dir():
        return {p.relative_to(path.parent).as_posix(): p for p in path.rglob("*") if p.is_file()}
    return {path.name: path}


def _inputs(*names: str | int) -> tuple[Input, ...]:
    return tuple(Input(name=n) for n in names)


def test_a_keras_model_takes_its_inputs_by_name_whatever_the_declared_order(
    keras_two: tuple[Path, Any],
) -> None:
    path, model = keras_two
    fed = _fed(_samples(), np.float32)
    predictor = predictor_class("tensorflow")()
    predictor.open(
        ModelFiles(_files(path), "keras", inputs=_inputs("extra", "image")), PredictorOptions()
    )
    try:
        batch = NamedInputs({"extra": fed["extra"], "image": fed["image"]})
        predictor.check_input(batch[:1])
        got = predictor.predict(batch)["scores"]
    finally:
        predictor.close()
    direct = np.asarray(model([fed["image"], fed["extra"]]), dtype=np.float32)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float32), direct, rtol=1e-5, atol=1e-5)


FORMATS = ["torchscript", "torch-export", "savedmodel", "keras"]
IMAGE_AT = {"torchscript": 0, "torch-export": 0, "savedmodel": 1, "keras": 0}
"""The index of ``image`` among the model's inputs: ``forward``'s order, a program's, a
signature's (by name: TensorFlow keeps them sorted), the Keras model's."""


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("declared", "words"),
    [
        # a name the model lacks is refused, never matched by position (both count two)
        (("image", "extras"), ["input 'extras'", "'image'", "'extra'"]),
        (("image",), ["input 'extra'", "needs data for"]),  # the model needs both
        (("image", "#image"), ["'image' twice"]),  # one input by its name and by its index
    ],
    ids=["a name the model lacks", "one of two", "one input twice"],
)
def test_declared_inputs_that_do_not_fit_the_model_are_refused_at_open(
    models: dict[str, Any],
    keras_two: tuple[Path, Any],
    fmt: str,
    declared: tuple[str | int, ...],
    words: list[str],
) -> None:
    path = keras_two[0] if fmt == "keras" else models[fmt][0]
    framework = "torch" if fmt.startswith("torch") else "tensorflow"
    names = [IMAGE_AT[fmt] if d == "#image" else d for d in declared]
    files = ModelFiles(_files(path), fmt, inputs=_inputs(*names))
    with pytest.raises(SignatureMismatch) as caught:
        predictor_class(framework)().open(files, PredictorOptions())
    assert [w for w in words if w not in str(caught.value)] == [], str(caught.value)


class Scalar(torch.nn.Module):
    """``forward(x, sr: int)``: silero-vad's TorchScript signature (a sample rate beside the
    audio)."""

    def forward(self, x: torch.Tensor, sr: int) -> torch.Tensor:
        return x * sr


class Nested(torch.nn.Module):
    """One argument holding two tensors."""

    def forward(self, pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return pair[0] + pair[1]


def test_arguments_pinbench_cannot_feed_are_refused_at_open(tmp_path: Path) -> None:
    """Each declared input is fed as one tensor: a TorchScript ``int`` argument, or a program
    taking its tensors nested in one argument, is refused naming it, not at the first call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(Scalar()).save(str(tmp_path / "scalar.jit"))  # type: ignore[no-untyped-call]
    pair = (torch.zeros(2, 3), torch.zeros(2, 3))
    torch.export.save(torch.export.export(Nested(), (pair,)), str(tmp_path / "nested.pt2"))
    cases = [
        ("scalar.jit", "torchscript", ("x", "sr"), "argument 'sr' is int, not a Tensor"),
        ("nested.pt2", "torch-export", ("pair_0", "pair_1"), "nested in 1 positional"),
    ]
    for name, fmt, declared, words in cases:
        files = ModelFiles({name: tmp_path / name}, fmt, inputs=_inputs(*declared))
        with pytest.raises(ModelLoadError, match=re.escape(words)):
            predictor_class("torch")().open(files, PredictorOptions())


def test_a_torchscript_model_without_one_archive_is_refused_at_publish(
    ws: Workspace, tmp_path: Path, models: dict[str, Any]
) -> None:
    """The run loads the one file that is a TorchScript archive by its content: a manifest
    with none (a state dict named .pt: named as what it is, decision 281), or with two, is
    refused when published, nothing stored."""
    from pinbench.registry.declared_format import DeclaredFormatMismatch

    weights = tmp_path / "weights.pt"
    torch.save(TwoInputs().state_dict(), weights)
    script = models["torchscript"][0].read_bytes()
    for files, found in (
        ({"weights.pt": weights.read_bytes()}, "declare format: torch-state-dict"),
        ({"a.jit": script, "b.pt": script}, "found 2 (a.jit, b.pt)"),
    ):
        manifest = {
            "kind": "model",
            "name": "test/two",
            "version": "1.0.0",
            "format": "torchscript",
            "framework": {"name": "torch"},
            "files": write_files(tmp_path / "m", files),
        }
        with pytest.raises((FormatMismatch, DeclaredFormatMismatch), match=re.escape(found)):
            publish(ws, parse_manifest(manifest), manifest_dir=tmp_path / "m", publisher="test")
    assert list(ws.store.iter_digests()) == []


@pytest.mark.parametrize("name", ["two.jit", "two.pth", "two.PT", "two.bin", "two"])
def test_a_torchscript_archive_is_recognised_by_its_content_whatever_its_name(
    models: dict[str, Any], tmp_path: Path, name: str
) -> None:
    """As silero-vad ships ``silero_vad.jit``: ``manifest model`` writes ``torchscript`` for
    it, and the run finds it the same way (``artifacts.torchscript``)."""
    path = tmp_path / name
    shutil.copy(models["torchscript"][0], path)
    labels = tmp_path / "labels.txt"
    labels.write_text("speech\n")
    assert model_format(path) == "torchscript"
    assert torchscript_file({"labels.txt": labels, name: path}) == name


def test_silero_vads_jit_is_described_as_torchscript_and_its_int_argument_named(
    cli: Cli, tmp_path: Path
) -> None:
    """silero-vad 6.2.3 ships ``silero_vad.jit``: ``manifest model`` writes a TorchScript
    manifest from it (its ``forward(x, sr: int)`` read as data), and the run refuses it at
    open naming ``sr``, the argument no tensor batch can be (its raw ONNX is what runs)."""
    model = shutil.copy(package_file("silero-vad", "silero_vad/data/silero_vad.jit"), tmp_path)
    _ok(cli("manifest", "model", str(model), "-o", str(tmp_path / "model.yaml")))
    data = yaml.safe_load((tmp_path / "model.yaml").read_text())
    assert (data["format"], [i["name"] for i in data["inputs"]]) == ("torchscript", ["x", "sr"])
    files = ModelFiles({"silero_vad.jit": Path(model)}, "torchscript", inputs=_inputs("x", "sr"))
    with pytest.raises(ModelLoadError, match="argument 'sr' is int, not a Tensor"):
        predictor_class("torch")().open(files, PredictorOptions())
