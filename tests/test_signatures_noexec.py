"""``pinbench manifest model`` reads a model's signature without running the model.

Each model here runs code when its framework loads it: a SavedModel whose initializer writes
a file (a TF2 resource's ``_initialize``, a TF1 ``main_op``), a ``torch.export`` archive whose
symbolic shape (evaluated by ``torch.export.load`` with ``sympy.sympify``) writes one. The
manifest is written from the files and the file is not. The readers that replace loading are
checked against the frameworks' own loading of harmless models: they read what the loaded
model says.
"""

from __future__ import annotations

import os
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from pinbench.authoring.torch_archives import SCALAR_TYPES, read_torch_export, read_torchscript
from pinbench.registry.manifest import ModelManifest, load_manifest
from pinbench.registry.ports import Input
from tests.helpers import Cli
from tests.torch_archives import Tiny, export_to, hostile_archive

# ---------------------------------------------------------------- models that run code on load


def _savedmodel_resource(folder: Path, target: Path) -> None:
    """TF2: a resource whose initializer (run by ``tf.saved_model.load``) writes ``target``."""
    import tensorflow as tf

    class Writer(tf.saved_model.experimental.TrackableResource):  # type: ignore[misc]
        def _create_resource(self) -> Any:
            return tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[], shared_name="")

        def _initialize(self) -> Any:
            tf.io.write_file(str(target), "written by the model")
            return tf.raw_ops.AssignVariableOp(resource=self.resource_handle, value=1.0)

    class Model(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            self.w = tf.Variable(tf.ones([64, 10]))
            self.writer = Writer()

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32)])  # type: ignore[untyped-decorator]
        def serve(self, image: Any) -> Any:
            return {"scores": tf.matmul(tf.reshape(image, [-1, 64]), self.w)}

    model = Model()
    tf.saved_model.save(model, str(folder), signatures={"serving_default": model.serve})


def _savedmodel_main_op(folder: Path, target: Path) -> None:
    """TF1: a ``main_op`` (run by ``tf.saved_model.load`` after restoring) that writes
    ``target``."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        image = v1.placeholder(tf.float32, [None, 8, 8, 1], name="image")
        w = v1.get_variable("w", [64, 10], initializer=v1.ones_initializer())
        scores = tf.matmul(tf.reshape(image, [-1, 64]), w)
        session.run(v1.global_variables_initializer())
        builder = v1.saved_model.Builder(str(folder))
        signature = v1.saved_model.predict_signature_def({"image": image}, {"scores": scores})
        builder.add_meta_graph_and_variables(
            session,
            ["serve"],
            signature_def_map={"serving_default": signature},
            main_op=tf.io.write_file(str(target), "written by the model"),
        )
        builder.save()


SAVEDMODELS = [
    ("a TF2 resource initializer writes a file", _savedmodel_resource),
    ("a TF1 main_op writes a file", _savedmodel_main_op),
]


@pytest.mark.parametrize("build", [s[1] for s in SAVEDMODELS], ids=[s[0] for s in SAVEDMODELS])
def test_a_savedmodel_is_described_without_running_its_initializers(
    cli: Cli, tmp_path: Path, build: Callable[[Path, Path], None]
) -> None:
    import tensorflow as tf

    target = tmp_path / "written.txt"
    build(tmp_path / "saved", target)
    assert not target.exists()  # saving ran nothing
    out = tmp_path / "saved.yaml"
    result = cli("manifest", "model", str(tmp_path / "saved"), "-o", str(out))
    assert result.code == 0, result.err
    assert not target.exists(), "reading the signature ran the model's initializer"
    manifest = load_manifest(out)
    assert isinstance(manifest, ModelManifest)
    assert manifest.format == "savedmodel"
    assert manifest.inputs == [Input(name="image", element_type="float32", shape=[8, 8, 1])]
    assert [o.name for o in manifest.outputs] == ["scores"]
    # what loading the model (as the run does) says, and that loading is what runs the code
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    assert target.exists()
    signature = loaded.signatures["serving_default"]
    assert sorted(signature.structured_input_signature[1]) == ["image"]
    assert sorted(signature.structured_outputs) == ["scores"]


def test_a_torch_export_archive_is_read_without_evaluating_its_expressions(
    cli: Cli, tmp_path: Path
) -> None:
    """A symbolic size's expression that writes a file when evaluated (``torch.export.load``
    evaluates it with ``sympy.sympify``, which is ``eval``): reading it runs nothing, and the
    model is refused, since loading it would (tests/test_shape_exprs.py)."""
    from pinbench.worker.predictors.torch.predictor import _no_unpickling

    model, target = hostile_archive(tmp_path)
    out = tmp_path / "m.yaml"
    result = cli("manifest", "model", str(model), "-o", str(out))
    assert result.code == 1, result.err
    assert "shape expression" in result.err and "Traceback" not in result.err
    assert not target.exists(), "reading the signature evaluated the archive's code"
    assert not out.exists(), "a model pinbench would not load gets no manifest"
    with warnings.catch_warnings(), _no_unpickling(str(model)):  # what loading does
        warnings.simplefilter("ignore")
        torch.export.load(str(model))
    assert target.exists()


@pytest.mark.parametrize("model_file", ["tiny.pt", "tiny.pt2"])
def test_pytorch_archives_are_read_without_importing_pytorch(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_file: str
) -> None:
    if model_file.endswith(".pt2"):
        export_to(Tiny(), tmp_path / model_file)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.jit.script(Tiny().eval()).save(str(tmp_path / model_file))  # type: ignore[no-untyped-call]
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    out = tmp_path / "m.yaml"
    result = cli("manifest", "model", str(tmp_path / model_file), "-o", str(out))
    assert result.code == 0, result.err
    manifest = load_manifest(out)
    assert isinstance(manifest, ModelManifest)
    assert [i.name for i in manifest.inputs] == ["x"]


# ---------------------------------------------------------------- the readers agree with loading


class TwoOut(torch.nn.Module):
    def forward(self, x: torch.Tensor, scale: float = 2.0) -> tuple[torch.Tensor, torch.Tensor]:
        return x * scale, x.sum(dim=(1, 2, 3))


class TwoIn(torch.nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x * mask


class Nested(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = TwoOut()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a, b = self.inner(x)
        return a, b, x


# (reason, module, example inputs)
MODULES: list[tuple[str, Callable[[], torch.nn.Module], tuple[torch.Tensor, ...]]] = [
    ("one input, one output", Tiny, (torch.zeros(2, 1, 8, 8),)),
    ("a default argument, a tuple of two", TwoOut, (torch.zeros(2, 1, 8, 8),)),
    ("two inputs", TwoIn, (torch.zeros(2, 1, 8, 8), torch.ones(2, 1, 8, 8))),
    ("a submodule, a tuple of three", Nested, (torch.zeros(2, 1, 8, 8),)),
]


@pytest.mark.parametrize(
    ("build", "example"), [m[1:] for m in MODULES], ids=[m[0] for m in MODULES]
)
def test_the_torchscript_reader_says_what_loading_says(
    tmp_path: Path, build: Callable[[], torch.nn.Module], example: tuple[torch.Tensor, ...]
) -> None:
    path = tmp_path / "m.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(build().eval()).save(str(path))  # type: ignore[no-untyped-call]
        schema = torch.jit.load(str(path)).forward.schema  # type: ignore[no-untyped-call]
    read = read_torchscript(path)
    required = [a.name for a in schema.arguments[1:] if not a.has_default_value()]
    returned = schema.returns[0].type
    count = len(returned.elements()) if isinstance(returned, torch._C.TupleType) else 1
    assert [t.name for t in read.inputs] == required
    assert [t.name for t in read.outputs] == list(range(count))


@pytest.mark.parametrize(
    ("build", "example"), [m[1:] for m in MODULES], ids=[m[0] for m in MODULES]
)
@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic batch", "static"])
def test_the_torch_export_reader_says_what_loading_says(
    tmp_path: Path,
    build: Callable[[], torch.nn.Module],
    example: tuple[torch.Tensor, ...],
    dynamic: bool,
) -> None:
    from pinbench.worker.predictors.torch.predictor import _no_unpickling
    from pinbench.worker.predictors.torch.signatures import _export_inputs, _export_outputs

    path = tmp_path / "m.pt2"
    batch = torch.export.Dim("batch", min=1)
    shapes = [{0: batch} for _ in example] if dynamic else None
    torch.export.save(torch.export.export(build().eval(), example, dynamic_shapes=shapes), path)
    with warnings.catch_warnings(), _no_unpickling(str(path)):
        warnings.simplefilter("ignore")
        program = torch.export.load(str(path))
    ports = _export_inputs(program)
    read = read_torch_export(path)
    assert [(t.name, t.element_type) for t in read.inputs] == [(p.name, p.dtype) for p in ports]
    assert [t.shape for t in read.inputs] == [
        tuple(d if isinstance(d, int) else None for d in p.shape or ()) for p in ports
    ]
    user = list(program.graph_signature.user_outputs)
    assert [t.name for t in read.outputs] == [str(n) for n in user[: _export_outputs(program)]]


def test_the_scalar_types_are_torchs_own() -> None:
    from torch._export.serde.serialize import _SERIALIZE_TO_TORCH_DTYPE

    theirs = {
        int(k): str(v).removeprefix("torch.")
        for k, v in _SERIALIZE_TO_TORCH_DTYPE.items()
        if int(k) in SCALAR_TYPES
    }
    assert theirs == SCALAR_TYPES


# ---------------------------------------------------------------- Keras, from its config


def _keras(path: Path, build: Callable[[Any], Any]) -> Path:
    import keras

    build(keras).save(str(path))
    return path


def _sequential(keras: Any) -> Any:
    return keras.Sequential(
        [keras.Input((8, 8, 1), name="pixels"), keras.layers.Flatten(), keras.layers.Dense(10)],
        name="seq",
    )


def _sequential_built(keras: Any) -> Any:
    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10, name="scores")])
    model.build((None, 8, 8, 1))
    return model


def _functional_dicts(keras: Any) -> Any:
    image = keras.Input((8, 8, 1), name="image")
    flat = keras.layers.Flatten()(image)
    outputs = {"b": keras.layers.Dense(2, name="second")(flat)}
    outputs["a"] = keras.layers.Dense(10, name="first")(flat)
    return keras.Model({"image": image}, outputs)


KERAS = [
    ("Sequential from keras.Input", _sequential),
    ("Sequential built before saving", _sequential_built),
    ("functional with dicts (flattened by key)", _functional_dicts),
]


@pytest.mark.parametrize("build", [k[1] for k in KERAS], ids=[k[0] for k in KERAS])
def test_the_keras_reader_says_what_loading_says(
    cli: Cli, tmp_path: Path, build: Callable[[Any], Any]
) -> None:
    import keras

    path = _keras(tmp_path / "m.keras", build)
    out = tmp_path / "m.yaml"
    result = cli("manifest", "model", str(path), "-o", str(out))
    assert result.code == 0, result.err
    manifest = load_manifest(out)
    assert isinstance(manifest, ModelManifest)
    loaded = keras.saving.load_model(str(path), compile=False, safe_mode=True)
    assert [(i.name, i.element_type) for i in manifest.inputs] == [
        (t.name, t.dtype) for t in loaded.inputs
    ]
    assert [i.shape for i in manifest.inputs] == [list(t.shape[1:]) for t in loaded.inputs]
    layers = [t._keras_history[0].name for t in loaded.outputs]  # Keras' output_names
    assert [o.name for o in manifest.outputs] == layers


def _subclassed(keras: Any) -> Any:
    class Custom(keras.Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(10)

        def call(self, x: Any) -> Any:
            return self.dense(x)

    model = Custom()
    model(keras.ops.zeros((1, 4)))
    return model


def _lambda(keras: Any) -> Any:
    image = keras.Input((4,), name="x")
    return keras.Model(image, keras.layers.Lambda(lambda t: t * 2)(image))


def _unbuilt(keras: Any) -> Any:
    return keras.Sequential([keras.layers.Dense(10)])


# (reason, model, words the refusal says)
KERAS_REFUSED = [
    ("a subclassed model: its signature is code", _subclassed, ["subclassed", "functional"]),
    ("a Lambda layer: safe mode refuses it", _lambda, ["Lambda layer", "bytecode"]),
    ("a Sequential model saved unbuilt", _unbuilt, ["before it was built", "keras.Input"]),
]


@pytest.mark.parametrize(
    ("build", "words"), [k[1:] for k in KERAS_REFUSED], ids=[k[0] for k in KERAS_REFUSED]
)
def test_a_keras_model_pinbench_cannot_describe_is_refused_saying_why(
    cli: Cli, tmp_path: Path, build: Callable[[Any], Any], words: list[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = _keras(tmp_path / "m.keras", build)
    out = tmp_path / "m.yaml"
    result = cli("manifest", "model", str(path), "-o", str(out))
    assert result.code == 1
    for word in words:
        assert word in result.err
    assert "Traceback" not in result.err
    assert not out.exists()


# (reason, bytes of the file named m.<suffix>, words the refusal says)
BROKEN = [
    ("a .keras file that is no zip", "keras", b"not a zip", ["not a .keras zip file"]),
    ("a .pt2 that is no zip", "pt2", b"PK\x03\x04broken", ["not a TorchScript or torch.export"]),
]


@pytest.mark.parametrize(
    ("suffix", "data", "words"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN]
)
def test_a_broken_archive_is_refused_without_a_traceback(
    cli: Cli, tmp_path: Path, suffix: str, data: bytes, words: list[str]
) -> None:
    path = tmp_path / f"m.{suffix}"
    path.write_bytes(data)
    result = cli("manifest", "model", str(path), "-o", str(tmp_path / "m.yaml"))
    assert result.code == 1, result.err
    assert "Traceback" not in result.err
    for word in words:
        assert word in result.err


def test_a_keras_zip_bomb_config_is_refused(cli: Cli, tmp_path: Path) -> None:
    from pinbench.artifacts.keras import MAX_CONFIG_BYTES

    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", b" " * (MAX_CONFIG_BYTES + 1))
    result = cli("manifest", "model", str(path), "-o", str(tmp_path / "m.yaml"))
    assert result.code == 1
    assert f"at most {MAX_CONFIG_BYTES}" in result.err
    assert os.path.getsize(path) < 1_000_000
