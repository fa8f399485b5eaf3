"""Inputs that are not samples (decision 128), on a small stateful ONNX model whose answers a
NumPy loop here computes: a constant, a zero state carried from chunk to chunk, a sample cut
into windows with their context, batches of samples of different lengths."""

from __future__ import annotations

import io
import wave
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.registry.ports import Input, Output
from pinbench.worker.audio import AudioRefused
from pinbench.worker.datasets import SampleFile, Samples
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.onnxruntime.predictor import OnnxRuntimePredictor
from pinbench.worker.stop import Stop
from pinbench.worker.stream import StreamError, cut, prepare_stream
from pinbench.worker.views import wrap

CHUNK, CONTEXT, SCALE = 3, 2, 0.5


def accumulator(path: Path) -> Path:
    """``y = sum(x) + state``, ``state' = state + k * sum(x)``: x ``(B, W)``, state ``(1, B)``
    (its batch axis 1), k a scalar; y ``(B, 1)``."""
    from onnx import TensorProto, helper

    one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("ReduceSum", ["x", "one"], ["s"], keepdims=1),  # (B, 1)
        helper.make_node("Transpose", ["state"], ["t"], perm=[1, 0]),  # (B, 1)
        helper.make_node("Add", ["s", "t"], ["y"]),
        helper.make_node("Mul", ["s", "k"], ["ks"]),
        helper.make_node("Transpose", ["ks"], ["kst"], perm=[1, 0]),  # (1, B)
        helper.make_node("Add", ["state", "kst"], ["next"]),
    ]
    graph = helper.make_graph(
        nodes,
        "accumulator",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "W"]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [1, "B"]),
            helper.make_tensor_value_info("k", TensorProto.FLOAT, []),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 1]),
            helper.make_tensor_value_info("next", TensorProto.FLOAT, [1, "B"]),
        ],
        [one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def inputs(next_state: str | None = "next", stream: bool = True) -> list[Input]:
    x: dict[str, Any] = {"name": "x"}
    if stream:
        x |= {"shape": [CONTEXT + CHUNK], "stream": {"chunk": CHUNK, "context": CONTEXT}}
    return [
        msgspec.convert(d, Input)
        for d in (
            x,
            {"name": "state", "shape": [1], "state": {"batch_axis": 1, "next": next_state}},
            {"name": "k", "value": SCALE},
        )
    ]


def reference(sample: np.ndarray) -> list[float]:
    """The model streamed by hand: each window is the chunk after its context (zeros before
    the sample, zeros after it in the last chunk)."""
    padded = np.concatenate([np.zeros(CONTEXT), sample, np.zeros(-len(sample) % CHUNK)])
    state, out = 0.0, []
    for k in range(-(-len(sample) // CHUNK)):
        s = float(padded[k * CHUNK : k * CHUNK + CONTEXT + CHUNK].sum())
        out.append(s + state)
        state += SCALE * s
    return out


def opened(model: Path, declared: list[Input], windows: np.ndarray | None) -> Any:
    fed = wrap(OnnxRuntimePredictor(), declared, windows)
    files = ModelFiles(
        {model.name: model}, "onnx", inputs=tuple(declared), outputs=(Output(name="y"),)
    )
    fed.open(files, PredictorOptions())
    return fed


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return accumulator(tmp_path_factory.mktemp("acc") / "acc.onnx")


def test_windows_hold_each_chunk_after_its_context() -> None:
    got = cut(np.arange(1, 8, dtype=np.float32), CHUNK, CONTEXT)
    assert got.tolist() == [[0, 0, 1, 2, 3], [2, 3, 4, 5, 6], [5, 6, 7, 0, 0]]


def test_streamed_batches_carry_each_samples_state_and_keep_its_own_frames(model: Path) -> None:
    samples = [np.arange(1, 8, dtype=np.float32), np.arange(10, 14, dtype=np.float32)]
    cuts = [cut(s, CHUNK, CONTEXT) for s in samples]
    windows = np.concatenate(cuts)
    offsets = np.array([[0, 3], [3, 5]], dtype=np.int64)  # 3 and 2 frames
    fed = opened(model, inputs(), windows)
    fed.check_input(offsets)
    together = fed.first_predict(offsets)["y"]  # one batch of both: (2, 3, 1)
    assert together.shape == (2, 3, 1)
    for row, sample in enumerate(samples):
        want = reference(sample)
        assert together[row, : len(want), 0].tolist() == pytest.approx(want)
        alone = fed.predict(offsets[row : row + 1])["y"]
        assert alone[0, :, 0].tolist() == pytest.approx(want)


def test_without_a_stream_a_state_is_zeros_and_a_constant_is_fed_every_call(model: Path) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fed = opened(model, inputs(next_state=None, stream=False), None)
    assert fed.predict(x)["y"][:, 0].tolist() == x.sum(axis=1).tolist()


def test_a_state_output_of_another_shape_is_refused_on_the_first_call(model: Path) -> None:
    windows = cut(np.arange(4, dtype=np.float32), CHUNK, CONTEXT)
    declared = inputs(next_state="y")  # y is (B, 1), the state (1, B)
    fed = wrap(OnnxRuntimePredictor(), declared, windows)
    files = ModelFiles(
        {model.name: model}, "onnx", inputs=tuple(declared), outputs=(Output(name="next"),)
    )
    fed.open(files, PredictorOptions())
    offsets = np.array([[0, 2], [0, 2]], dtype=np.int64)
    with pytest.raises(StreamError, match="fed back to state input 'state', which takes float32"):
        fed.first_predict(offsets)


def _wav(rate: int, frames: int) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.zeros(frames, "<i2").tobytes())
    return buf.getvalue()


def test_a_wav_of_another_rate_without_a_resample_step_is_refused_before_streaming(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.wav").write_bytes(_wav(8000, 800))
    spec = msgspec.convert(
        {
            "name": "input",
            "steps": [{"decode_audio": {"channel": "mix", "rate": 16000}}],
            "stream": {"chunk": 512, "context": 64},
        },
        Input,
    )
    samples = Samples(None, [SampleFile("wavs/a.wav", tmp_path / "a.wav")], "audio")

    def compute(digest: Any, make: Any) -> tuple[np.ndarray, bool]:
        return make(), False

    with pytest.raises(AudioRefused, match="8000"):
        prepare_stream(spec, samples, _digest(), compute, lambda _: None, Stop())


def _digest() -> Any:
    from pinbench.artifacts.digest import Digest

    return Digest.of_bytes(b"pipeline")


def test_a_batch_whose_zero_state_is_too_large_is_refused_before_it_is_made() -> None:
    declared = [
        msgspec.convert(d, Input)
        for d in ({"name": "x"}, {"name": "s", "shape": [1 << 24], "state": {"batch_axis": 0}})
    ]
    fed = wrap(OnnxRuntimePredictor(), declared, None)
    with pytest.raises(StreamError, match="for a batch of 64 holds more than"):
        fed.check_input(np.zeros((64, 4), np.float32))
