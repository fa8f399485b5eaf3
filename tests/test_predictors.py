"""The three predictors on one model: the digits CNN trained in PyTorch and shipped as ONNX,
safetensors and Keras (plus TorchScript, torch.export, SavedModel and a trusted pickle made
here). Same weights must give the same top-1 on every test sample, in every format; bad
models and bad inputs are refused with the reason."""

from __future__ import annotations

import re
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from pinbench import catalog as builtin
from pinbench.catalog import cnn
from pinbench.registry.ports import Input, Output
from pinbench.worker.measure import public_version
from pinbench.worker.predictors import FrameworkUnavailable, predictor_class
from pinbench.worker.predictors.base import (
    DeviceUnavailable,
    InputMismatch,
    ModelLoadError,
    Predictor,
)
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.torch.architectures import digits_cnn

Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Path:
    """The catalog's digits CNN folder (the run's shared build, copied: trained once per run,
    issue 49), plus the formats made here."""
    root = tmp_path_factory.mktemp("cnn")
    for manifest in cnn_catalog_dir.glob("model-digits-cnn-*.yaml"):
        shutil.copy2(manifest, root)
    folder = root / "digits-cnn"
    shutil.copytree(cnn_catalog_dir / "digits-cnn", folder)
    model = digits_cnn().eval()
    from safetensors.torch import load_file

    model.load_state_dict(load_file(str(folder / "digits-cnn.safetensors")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.script(model).save(str(folder / "digits-cnn.ts"))  # type: ignore[no-untyped-call]
    example = (torch.zeros(2, 1, 8, 8),)
    batch = torch.export.Dim("batch", min=1, max=4096)
    program = torch.export.export(model, example, dynamic_shapes=({0: batch},))
    torch.export.save(program, str(folder / "digits-cnn.pt2"))
    torch.save(model, str(folder / "digits-cnn.pth"))
    import keras

    keras.saving.load_model(str(folder / "digits-cnn.keras")).export(
        str(folder / "savedmodel"), verbose=False
    )
    return folder


@pytest.fixture(scope="module")
def test_split() -> tuple[Array, Array]:
    _, x, _, y = builtin.digits_split()
    return (x.astype(np.float32) / 16.0)[:, None, :, :], y


def _files(folder: Path, name: str) -> dict[str, Path]:
    path = folder / name
    if path.is_dir():
        return {p.relative_to(folder).as_posix(): p for p in path.rglob("*") if p.is_file()}
    return {name: path}


# (framework, format, file or folder, architecture, trusted)
FORMATS = [
    ("onnxruntime", "onnx", "digits-cnn.onnx", None, False),
    ("torch", "safetensors", "digits-cnn.safetensors", "digits-cnn", False),
    ("torch", "torchscript", "digits-cnn.ts", None, False),
    ("torch", "torch-export", "digits-cnn.pt2", None, False),
    ("torch", "torch-pickle", "digits-cnn.pth", None, True),
    ("tensorflow", "keras", "digits-cnn.keras", None, False),
    ("tensorflow", "savedmodel", "savedmodel", None, False),
]


# What each format calls its input and output: nn.Sequential's forward takes `input`
# (TorchScript and torch.export keep that name), Keras' serving signature says `output_0`.
NAMES = {
    "onnx": ("x", "logits"),
    "safetensors": ("x", "logits"),
    "torchscript": ("input", "logits"),
    "torch-export": ("input", "logits"),
    "torch-pickle": ("input", "logits"),
    "keras": ("x", "logits"),
    "savedmodel": ("x", "output_0"),
}


def declared(fmt: str) -> dict[str, Any]:
    """The manifest's inputs/outputs for one of the formats above, as ``ModelFiles`` takes them."""
    x, y = NAMES[fmt]
    return {
        "inputs": (Input(name=x, shape=[1, 8, 8]),),
        "outputs": (Output(name=y, type="classification"),),
    }


def one(outputs: dict[str, Array]) -> Array:
    (only,) = outputs.values()
    return only


@pytest.fixture
def opened(built: Path, request: pytest.FixtureRequest) -> Iterator[Predictor]:
    framework, fmt, name, arch, trusted = request.param
    predictor = predictor_class(framework)()
    files = ModelFiles(_files(built, name), fmt, arch, trusted, **declared(fmt))
    predictor.open(files, PredictorOptions())
    yield predictor
    predictor.close()


@pytest.fixture(scope="module")
def reference(built: Path, test_split: tuple[Array, Array]) -> Array:
    predictor = predictor_class("onnxruntime")()
    predictor.open(ModelFiles(_files(built, "digits-cnn.onnx"), "onnx"), PredictorOptions())
    return predictor.predict(test_split[0])["logits"]


@pytest.mark.parametrize("opened", FORMATS, indirect=True, ids=[f[1] for f in FORMATS])
def test_every_format_gives_the_same_top1_on_every_sample(
    opened: Predictor, test_split: tuple[Array, Array], reference: Array
) -> None:
    x, y = test_split
    opened.check_input(x[:1])
    one_by_one = np.concatenate([one(opened.predict(x[i : i + 1])) for i in range(len(x))])
    batched = one(opened.predict(x))
    assert one_by_one.shape == batched.shape == (len(x), 10)
    np.testing.assert_allclose(one_by_one, reference, atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(one_by_one.argmax(1), reference.argmax(1))
    assert np.mean(reference.argmax(1) == y) > 0.95


@pytest.mark.parametrize("opened", FORMATS, indirect=True, ids=[f[1] for f in FORMATS])
@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((1, 1, 12, 12), np.float32),
        np.zeros((1, 8, 8), np.float32),
        np.zeros((1, 1, 8, 8), np.float64),
    ],
    ids=["wrong shape", "missing axis", "wrong dtype"],
)
def test_a_wrong_input_is_named(opened: Predictor, bad: Array) -> None:
    """Checked before the first prediction where the predictor knows the signature, else the
    first (cold) prediction reports the framework's complaint."""
    with pytest.raises(InputMismatch, match=re.escape(f"{bad.dtype.name} {list(bad.shape)}")):
        opened.check_input(bad)
        opened.first_predict(bad)


@pytest.mark.parametrize(
    ("framework", "fmt", "name", "arch", "trusted", "needle"),
    [
        ("torch", "torch-pickle", "digits-cnn.pth", None, False, "trusted: true"),
        ("torch", "safetensors", "digits-cnn.safetensors", "lenet", False, "known: digits-cnn"),
        ("torch", "safetensors", "digits-cnn.safetensors", "resnet50", False, "do not fit"),
        ("torch", "onnx", "digits-cnn.onnx", None, False, "PyTorch loads"),
        ("tensorflow", "safetensors", "digits-cnn.safetensors", None, False, "TensorFlow loads"),
        ("torch", "torch-export", "digits-cnn.ts", None, False, "model digits-cnn.pt2"),
    ],
)
def test_unsafe_or_unloadable_models_are_refused(
    built: Path, framework: str, fmt: str, name: str, arch: str | None, trusted: bool, needle: str
) -> None:
    files = {name.replace(".ts", ".pt2") if fmt == "torch-export" else name: built / name}
    with pytest.raises(ModelLoadError, match=needle.replace(".", r"\.")):
        predictor_class(framework)().open(ModelFiles(files, fmt, arch, trusted), PredictorOptions())


@pytest.mark.parametrize(
    ("framework", "fmt", "name"),
    [
        ("onnxruntime", "onnx", "m.onnx"),
        ("torch", "torchscript", "m.pt"),
        ("torch", "torch-export", "m.pt2"),
        ("torch", "safetensors", "m.safetensors"),
        ("tensorflow", "keras", "m.keras"),
    ],
)
def test_a_corrupt_model_file_is_a_load_error(
    tmp_path: Path, framework: str, fmt: str, name: str
) -> None:
    (tmp_path / name).write_bytes(b"not a model at all")
    arch = "digits-cnn" if fmt == "safetensors" else None
    with pytest.raises(ModelLoadError, match="cannot load model"):
        predictor_class(framework)().open(
            ModelFiles({name: tmp_path / name}, fmt, arch), PredictorOptions()
        )


def test_keras_safe_mode_refuses_python_lambdas(tmp_path: Path) -> None:
    import keras

    x = keras.Input((1, 8, 8))
    model = keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0)(x))
    model.save(tmp_path / "lambda.keras")
    with pytest.raises(ModelLoadError, match=r"(?i)lambda|safe"):
        predictor_class("tensorflow")().open(
            ModelFiles({"lambda.keras": tmp_path / "lambda.keras"}, "keras"), PredictorOptions()
        )


@pytest.mark.parametrize("framework", ["onnxruntime", "torch", "tensorflow"])
def test_cuda_when_absent_is_a_clear_error(built: Path, framework: str) -> None:
    fmt, name, arch = {
        "onnxruntime": ("onnx", "digits-cnn.onnx", None),
        "torch": ("safetensors", "digits-cnn.safetensors", "digits-cnn"),
        "tensorflow": ("keras", "digits-cnn.keras", None),
    }[framework]
    predictor = predictor_class(framework)()
    files = ModelFiles(_files(built, name), fmt, arch)
    has_gpu = torch.cuda.is_available()
    if has_gpu:  # a GPU machine: the same request must work
        predictor.open(files, PredictorOptions(device="cuda"))
        return
    with pytest.raises(DeviceUnavailable, match="cannot run on cuda here; available: "):
        predictor.open(files, PredictorOptions(device="cuda"))


def test_threads_setting_is_restored_after_a_torch_model(built: Path) -> None:
    before = torch.get_num_threads()
    predictor = predictor_class("torch")()
    files = ModelFiles(_files(built, "digits-cnn.safetensors"), "safetensors", "digits-cnn")
    predictor.open(files, PredictorOptions(threads=1))
    assert torch.get_num_threads() == 1
    predictor.close()
    assert torch.get_num_threads() == before


def test_an_unknown_framework_names_the_known_ones() -> None:
    known = "onnxruntime, onnxruntime-genai, openvino-genai, tensorflow, torch"
    with pytest.raises(FrameworkUnavailable, match=known):
        predictor_class("mxnet")


@pytest.mark.parametrize(
    ("seen", "public"), [("2.13.0+cpu", "2.13.0"), ("2.21.0", "2.21.0"), ("1.31.0", "1.31.0")]
)
def test_a_local_build_label_is_not_part_of_the_pinned_version(seen: str, public: str) -> None:
    assert public_version(seen) == public


def test_the_three_catalog_artifacts_name_the_same_weights(built: Path) -> None:
    import yaml

    weights = {
        yaml.safe_load((built.parent / f"model-digits-cnn-{s}.yaml").read_text())["attributes"][
            "weights_sha256"
        ]
        for _, s, *_ in cnn.ARTIFACTS
    }
    assert len(weights) == 1


def test_a_batch_the_model_refuses_names_the_models_real_inputs(tmp_path: Path) -> None:
    """Issue 83, item 3f: a model that needs four rows per sample (a Reshape inside the graph)
    takes a one-row batch by its signature, then ONNX Runtime refuses it; the error names the
    model's own input (``x``), never an ``'input'`` it does not have, beside the complaint."""
    import onnx
    from onnx import TensorProto, helper

    from pinbench.worker.predictors.base import InputRefused
    from pinbench.worker.predictors.onnxruntime import OnnxRuntimePredictor

    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 16])
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "four-rows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 16])],
        initializer=[shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, tmp_path / "m.onnx")
    predictor = OnnxRuntimePredictor()
    predictor.open(ModelFiles({"m.onnx": tmp_path / "m.onnx"}, "onnx"), PredictorOptions())
    one_row = np.zeros((1, 4), np.float32)
    predictor.check_input(one_row)  # the signature takes it
    with pytest.raises(InputRefused) as refused:
        predictor.first_predict(one_row)
    said = str(refused.value)
    assert refused.value.inputs == ["'x' (float32, shape ['N', 4])"]
    assert "the model's inputs: 'x' (float32, shape ['N', 4])" in said
    assert "Reshape" in refused.value.complaint and "float32 [1, 4]" in said
    assert "'input'" not in said and "what the model accepts" not in said
