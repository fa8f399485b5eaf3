"""Speaker verification (decision 282): the equal error rate and minDCF of trial scores against
scikit-learn's ``roc_curve`` and a direct computation on scores Hypothesis chooses; the trial
list's rules; and a run end to end through the CLI of a tiny ONNX embedder of WAV files, its
EER equal to the one computed here from onnxruntime's own embeddings."""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from sklearn.metrics import roc_curve

from pinbench.catalog import silero
from pinbench.tasks.speaker.metrics import (
    DCF,
    equal_error_rate,
    min_detection_cost,
    roc,
    verification_metrics,
)
from pinbench.tasks.speaker.trials import read_trials
from pinbench.worker.lines import LabelProblem
from pinbench.worker.undefined import UndefinedMetric
from tests.helpers import Cli, dump, onnx_accuracy_run, write_files

RATE, LENGTH = 16_000, 1_600


def crossing(fpr: np.ndarray, fnr: np.ndarray) -> float:
    """The reference EER: each segment of the ROC polyline intersected with the line
    fnr = fpr by solving the two lines' equations (numpy.linalg)."""
    for k in range(1, len(fpr)):
        p, q = np.array([fpr[k - 1], fnr[k - 1]]), np.array([fpr[k], fnr[k]])
        if (p[1] - p[0]) * (q[1] - q[0]) > 0:
            continue  # both ends on one side of the diagonal
        d = q - p
        if (p[1] - p[0]) == 0:
            return float(p[0])
        # p + t d on x = y: p0 + t d0 = p1 + t d1
        t = np.linalg.solve(np.array([[d[0] - d[1]]]), np.array([p[1] - p[0]]))[0]
        return float(p[0] + t * d[0])
    raise AssertionError("the ROC never crosses the diagonal")


def brute_min_dcf(score: np.ndarray, target: np.ndarray) -> float:
    """minDCF over every threshold (each score, and above them all), counted directly."""
    best = np.inf
    for t in [*np.unique(score), np.inf]:
        miss = np.mean(score[target] < t)
        fa = np.mean(score[~target] >= t)
        best = min(best, DCF.c_miss * miss * DCF.p_target + DCF.c_fa * fa * (1 - DCF.p_target))
    return float(best / min(DCF.c_miss * DCF.p_target, DCF.c_fa * (1 - DCF.p_target)))


trials = st.lists(
    st.tuples(st.integers(-6, 6).map(lambda v: v / 4) | st.floats(-1, 1), st.booleans()),
    min_size=2,
    max_size=60,
).filter(lambda rows: 0 < sum(t for _, t in rows) < len(rows))


@settings(max_examples=300, deadline=None)
@given(trials)
def test_eer_and_min_dcf_equal_the_roc_curve_and_a_direct_count(rows: list[Any]) -> None:
    score = np.array([s for s, _ in rows], dtype=np.float64)
    target = np.array([t for _, t in rows], dtype=bool)
    found = verification_metrics(score, target)
    fpr, tpr, _ = roc_curve(target, score)  # sklearn's points (collinear ones dropped)
    assert found["eer"] == pytest.approx(crossing(fpr, 1 - tpr), abs=1e-12)
    assert found["min_dcf"] == pytest.approx(brute_min_dcf(score, target), abs=1e-12)
    mine_fpr, mine_fnr = roc(score, target)
    full_fpr, full_tpr, _ = roc_curve(target, score, drop_intermediate=False)
    np.testing.assert_allclose(mine_fpr, full_fpr, atol=1e-15)
    np.testing.assert_allclose(mine_fnr, 1 - full_tpr, atol=1e-15)
    assert found["trials_count"] == len(rows)
    assert found["target_trials_count"] == int(target.sum())


def test_eer_is_interpolated_not_the_nearest_threshold() -> None:
    """Targets 0.9, 0.8, 0.3; non-targets 0.7, 0.2, 0.1, 0.05. At threshold 0.7 the ROC is at
    (fpr 1/4, fnr 1/3), at 0.3 at (1/4, 0): the polyline crosses the diagonal on that vertical
    drop, at 1/4. voxceleb_trainer's nearest threshold (least |fnr - fpr|, at 0.7) says
    max(1/4, 1/3) = 1/3."""
    score = np.array([0.9, 0.8, 0.3, 0.7, 0.2, 0.1, 0.05])
    target = np.array([1, 1, 1, 0, 0, 0, 0], dtype=bool)
    fpr, fnr = roc(score, target)
    np.testing.assert_allclose(fpr, [0, 0, 0, 1 / 4, 1 / 4, 2 / 4, 3 / 4, 1])
    np.testing.assert_allclose(fnr, [1, 2 / 3, 1 / 3, 1 / 3, 0, 0, 0, 0])
    assert equal_error_rate(fpr, fnr) == pytest.approx(1 / 4)  # the vertical drop at fpr 1/4
    nearest = int(np.nanargmin(np.abs(fnr - fpr)))
    assert max(fpr[nearest], fnr[nearest]) == pytest.approx(1 / 3)  # the other definition


def test_eer_crossing_inside_a_sloped_segment() -> None:
    """Two tied scores, one target and one not: the ROC's diagonal step is crossed halfway."""
    fpr, fnr = roc(np.array([0.5, 0.5]), np.array([True, False]))
    np.testing.assert_allclose(fpr, [0, 1])
    np.testing.assert_allclose(fnr, [1, 0])
    assert equal_error_rate(fpr, fnr) == 0.5
    assert min_detection_cost(fpr, fnr) == 1.0  # no threshold beats rejecting every trial


@pytest.mark.parametrize(
    ("labels", "why"),
    [
        ([True, True], "every trial is a target trial"),
        ([False, False], "every trial is a non-target trial"),
    ],
)
def test_eer_is_undefined_without_both_kinds_of_trial(labels: list[bool], why: str) -> None:
    with pytest.raises(UndefinedMetric, match=why) as caught:
        verification_metrics(np.array([0.1, 0.2]), np.array(labels))
    assert caught.value.metric == "eer"


SAMPLES = ["wavs/a.wav", "wavs/b.wav", "wavs/c.wav"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1 a.wav b.wav\n0 a.wav\n", "line 2: want LABEL ENROLMENT TEST"),
        ("2 a.wav b.wav\n", "line 1: want LABEL"),
        ("1  a.wav b.wav\n", "line 1: want LABEL"),  # two spaces: an empty field
        ("1 a.wav d.wav\n", "line 1 names 'd.wav', not a sample file"),
        ("1 a.wav a.wav\n", "line 1 pairs 'a.wav' with itself"),
        ("1 a.wav b.wav\n", "1 sample files are in no trial, e.g. 'c.wav'"),
        ("\n\n", "no trial"),
    ],
)
def test_trial_lists_refused_naming_why(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "trials.txt").write_text(text)
    with pytest.raises(LabelProblem, match=reason):
        read_trials("trials.txt", samples=SAMPLES, folder="wavs", read=lambda p: tmp_path / p)


def test_trial_list_read_in_sample_order(tmp_path: Path) -> None:
    (tmp_path / "trials.txt").write_text("1 c.wav a.wav\n\n0 b.wav c.wav\n")
    found = read_trials("trials.txt", samples=SAMPLES, folder="wavs", read=lambda p: tmp_path / p)
    assert found.enrolment.tolist() == [2, 1]
    assert found.test.tolist() == [0, 2]
    assert found.target.tolist() == [True, False]


# --- end to end ------------------------------------------------------------------------------


def wav(samples: np.ndarray) -> bytes:
    return silero.wav(samples, RATE)  # 16-bit PCM mono, as decode_audio reads it back


def embedder() -> bytes:
    """A filterbank-energy embedder: the waveform's 16 frames of 100 samples, each frame's
    projections on 8 fixed random filters, their absolute mean over the frames (N, 8)."""
    w = np.random.default_rng(282).normal(size=(100, 8)).astype(np.float32)
    nodes = [
        helper.make_node("Reshape", ["x", "frames"], ["f"]),
        helper.make_node("MatMul", ["f", "w"], ["p"]),
        helper.make_node("Abs", ["p"], ["a"]),
        helper.make_node("ReduceMean", ["a", "axis"], ["e"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "embedder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", LENGTH])],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N", 8])],
        [
            numpy_helper.from_array(np.array([-1, 16, 100], dtype=np.int64), name="frames"),
            numpy_helper.from_array(w, name="w"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), name="axis"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def voices() -> dict[str, bytes]:
    """Three 'speakers' (fundamentals 140, 175 and 210 Hz), two noisy clips each."""
    rng = np.random.default_rng(65)
    t = np.arange(LENGTH) / RATE
    out = {}
    for speaker, f0 in enumerate((140.0, 175.0, 210.0)):
        for clip in range(2):
            f = f0 * (1 + 0.03 * rng.normal())
            x = sum(np.sin(2 * np.pi * k * f * t + rng.uniform(0, 6)) / k for k in range(1, 5))
            out[f"s{speaker}_{clip}.wav"] = wav(0.2 * x + 0.1 * rng.normal(size=LENGTH))
    return out


def test_a_speaker_verification_run_scores_trials_end_to_end(cli: Cli, tmp_path: Path) -> None:
    import onnxruntime as ort

    clips = voices()
    names = sorted(clips)
    rows = [(int(a[:2] == b[:2]), a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    trials_text = "".join(f"{label} {a} {b}\n" for label, a, b in rows)
    onnx = embedder()
    model_dir, data_dir = tmp_path / "m", tmp_path / "d"
    model = {
        "kind": "model",
        "name": "audio/tiny-speaker",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(model_dir, {"model.onnx": onnx}),
        "inputs": [
            {
                "name": "x",
                "shape": [LENGTH],
                "steps": [{"decode_audio": {"channel": "mix", "rate": RATE}}],
            }
        ],
        "outputs": [{"name": "e", "type": "embedding"}],
    }
    files = {**{f"wavs/{n}": clips[n] for n in names}, "trials.txt": trials_text.encode()}
    dataset = {
        "kind": "dataset",
        "name": "audio/tiny-voices",
        "version": "1.0.0",
        "task": "speaker-verification",
        "files": write_files(data_dir, files),
        "data": {"format": "audio", "path": "wavs"},
        "labels": {"format": "speaker-trials", "path": "trials.txt"},
    }
    manifests = [dump(model_dir / "model.yaml", model), dump(data_dir / "d.yaml", dataset)]
    onnx_accuracy_run(cli, tmp_path, manifests, "audio/tiny-speaker@1", "audio/tiny-voices@1")
    (run,) = json.loads(cli("runs", "list", "--json").out)
    assert run["status"] == "succeeded"

    session = ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    decoded = {}
    for n in names:
        with wave.open(io.BytesIO(clips[n])) as f:
            decoded[n] = np.frombuffer(f.readframes(LENGTH), "<i2").astype(np.float32) / 32768
    (e,) = session.run(None, {"x": np.stack([decoded[n] for n in names])})
    e = e.astype(np.float64) / np.linalg.norm(e.astype(np.float64), axis=1, keepdims=True)
    score = np.array([e[names.index(a)] @ e[names.index(b)] for _, a, b in rows])
    target = np.array([label for label, _, _ in rows], dtype=bool)
    fpr, tpr, _ = roc_curve(target, score)
    assert run["eer"] == pytest.approx(crossing(fpr, 1 - tpr), abs=1e-6)
    assert run["min_dcf"] == pytest.approx(brute_min_dcf(score, target), abs=1e-6)
    assert 0 < run["eer"] < 0.5
    assert run["trials_count"] == len(rows) == 15
    assert run["target_trials_count"] == 3


def context(outputs: list[dict[str, Any]], *, accuracy: bool = True, samples: int = 6) -> Any:
    """What ``prepare`` reads of a run: the model's declared outputs, its mode and samples."""
    from types import SimpleNamespace

    import msgspec

    from pinbench.registry.ports import Output

    model = SimpleNamespace(outputs=[msgspec.convert(o, Output) for o in outputs], inputs=[])
    return SimpleNamespace(
        model=model, model_ref="audio/m@1.0.0", accuracy=accuracy, sample_count=None,
        samples=[None] * samples, model_paths={},
    )  # fmt: skip


def test_a_model_without_one_embedding_output_is_refused_for_accuracy() -> None:
    from pinbench.tasks.speaker.task import NotASpeakerModel, SpeakerVerification

    task = SpeakerVerification()
    two = [{"name": "a", "type": "embedding"}, {"name": "b", "type": "embedding"}]
    with pytest.raises(NotASpeakerModel, match=r"declares a \(embedding\), b \(embedding\)"):
        task.prepare(context(two))
    assert task.prepare(context([{"name": "s", "type": "tensor"}], accuracy=False)) is None


def test_an_embedding_that_is_not_one_vector_per_file_fails_on_the_first_answer() -> None:
    from pinbench.tasks.speaker.task import BadEmbeddings, SpeakerVerification

    scorer = SpeakerVerification().prepare(context([{"name": "e", "type": "embedding"}]))
    assert scorer is not None
    with pytest.raises(BadEmbeddings, match=r"shape \[2, 5, 8\] is \[2, 5, 8\] after its steps"):
        scorer.check({"e": np.zeros((2, 5, 8), np.float32)}, {}, 2)


def test_a_zero_or_non_finite_embedding_in_a_trial_fails_naming_the_sample() -> None:
    from pinbench.tasks.speaker.task import BadEmbeddings, cosine
    from pinbench.tasks.speaker.trials import Trials

    trials = Trials(np.array([0]), np.array([1]), np.array([True]))
    with pytest.raises(BadEmbeddings, match="sample 1's embedding is all zeros"):
        cosine(np.array([[1.0, 0.0], [0.0, 0.0]]), trials, output="e")
    with pytest.raises(BadEmbeddings, match="sample 0's embedding holds a non-finite value"):
        cosine(np.array([[np.nan, 0.0], [1.0, 0.0]]), trials, output="e")
