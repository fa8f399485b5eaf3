"""Voice-activity detection with silero-vad's raw ONNX, as its wheel ships it (decision 128):
a constant input (``sr``), a state input carried from chunk to chunk (``state`` <- ``stateN``),
WAV audio streamed in chunks of 512 samples with 64 of context. Through the CLI the run's
frame metrics equal scikit-learn's over the probabilities of a direct onnxruntime loop written
here (silero-vad's own ``OnnxWrapper`` loop, in NumPy); the metrics' undefined cases and the
frame rule are held against direct computations."""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn import metrics as sk

from pinbench.catalog import silero as catalog_silero
from pinbench.catalog.silero import CHUNK, CONTEXT, RATE, clips
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.tasks.vad.frames import past_end, speech_frames
from pinbench.tasks.vad.metrics import activity_metrics
from pinbench.worker.undefined import UndefinedMetric
from tests.helpers import Cli, dump, onnx_accuracy_run, write_files
from tests.package_models import package_file

SILERO = ("silero-vad", "silero_vad/data/silero_vad.onnx")


def decoded(data: bytes) -> np.ndarray:
    with wave.open(io.BytesIO(data)) as f:
        return np.frombuffer(f.readframes(f.getnframes()), "<i2").astype(np.float32) / 32768


def silero_manifest(model: Path, **changes: Any) -> dict[str, Any]:
    """silero-vad's ONNX as published (the catalog's document): its three inputs and the
    speech probability."""
    files = write_files(model.parent, {model.name: model.read_bytes()})
    return catalog_silero.model_document("audio/silero-vad", "6.2.3", files) | changes


def dataset_manifest(
    root: Path, files: dict[str, tuple[bytes, list[list[float]]]]
) -> dict[str, Any]:
    lines = "".join(json.dumps({"file": n, "speech": s}) + "\n" for n, (_, s) in files.items())
    entries = write_files(
        root,
        {**{f"wavs/{n}": b for n, (b, _) in files.items()}, "speech.jsonl": lines.encode()},
    )
    return {
        "kind": "dataset",
        "name": "audio/speech-clips",
        "version": "1.0.0",
        "task": "voice-activity",
        "files": entries,
        "data": {"format": "audio", "path": "wavs"},
        "labels": {"format": "speech-segments", "path": "speech.jsonl"},
    }


def direct(session: Any, x: np.ndarray, *, carry: bool = True) -> np.ndarray:
    """silero-vad's ``OnnxWrapper`` loop: 512-sample chunks (the last zero-padded), each after
    the 64 samples before it (zeros first), the state carried (or zero for every chunk); the
    sample rate given to a session that takes it."""
    names = [i.name for i in session.get_inputs()]
    frames = -(-len(x) // CHUNK)
    padded = np.zeros(frames * CHUNK, np.float32)
    padded[: len(x)] = x
    state = np.zeros((2, 1, 1, 128) if "h" in names else (2, 1, 128), np.float32)
    context = np.zeros((1, CONTEXT), np.float32)
    out = []
    for k in range(frames):
        window = np.concatenate([context, padded[None, k * CHUNK : (k + 1) * CHUNK]], axis=1)
        if "h" in names:  # the sequence export: windows along its first axis, states h and c
            p, *after = session.run(None, {"input": window, "h": state[0], "c": state[1]})
            p, after = p[:, None], np.stack(after)
        else:
            feeds = {"input": window, "state": state, "sr": np.array(RATE)}
            p, after = session.run(None, {k: feeds[k] for k in names})
        state = after if carry else state
        context = window[:, -CONTEXT:]
        out.append(float(p[0, 0]))
    return np.asarray(out)


def centre_rule(spans: list[list[float]], frames: int) -> np.ndarray:
    """Frame k is speech when its centre (k + 1/2) * 512 / 16000 s lies in a span."""
    centres = (np.arange(frames) + 0.5) * CHUNK / RATE
    return np.array([any(s <= c < e for s, e in spans) for c in centres], dtype=bool)


@pytest.fixture(scope="module")
def silero() -> Path:
    return package_file(*SILERO)


def test_silero_vad_streams_with_its_state_carried_and_scores_frames(
    cli: Cli, tmp_path: Path, silero: Path
) -> None:
    import onnxruntime as ort

    files = clips()
    model_yaml = dump(tmp_path / "m" / "model.yaml", silero_manifest(_copy(silero, tmp_path / "m")))
    data_yaml = dump(tmp_path / "d" / "dataset.yaml", dataset_manifest(tmp_path / "d", files))
    manifests = [model_yaml, data_yaml]
    onnx_accuracy_run(cli, tmp_path, manifests, "audio/silero-vad@6", "audio/speech-clips@1")
    (run,) = json.loads(cli("runs", "list", "--json").out)
    assert run["status"] == "succeeded"

    session = ort.InferenceSession(str(silero), providers=["CPUExecutionProvider"])
    carried = [direct(session, decoded(data)) for data, _ in files.values()]
    truth = [
        centre_rule(spans, len(p)) for p, (_, spans) in zip(carried, files.values(), strict=True)
    ]
    p, y = np.concatenate(carried), np.concatenate(truth)
    assert (
        run["frames_count"]
        == len(y)
        == sum(-(-len(decoded(d)) // CHUNK) for d, _ in files.values())
    )
    assert run["frame_precision"] == pytest.approx(sk.precision_score(y, p >= 0.5), abs=1e-12)
    assert run["frame_recall"] == pytest.approx(sk.recall_score(y, p >= 0.5), abs=1e-12)
    assert run["frame_f1"] == pytest.approx(sk.f1_score(y, p >= 0.5), abs=1e-12)
    assert run["frame_roc_auc"] == pytest.approx(sk.roc_auc_score(y, p), abs=1e-12)
    # what carrying the state is for: every speech frame found; with a zero state for every
    # chunk, some 30% of them
    assert run["frame_recall"] == 1.0
    zeroed = np.concatenate([direct(session, decoded(d), carry=False) for d, _ in files.values()])
    assert sk.recall_score(y, zeroed >= 0.5) < 0.5


def _copy(model: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / model.name
    target.write_bytes(model.read_bytes())
    return target


# ---------------------------------------------------------------- the frame rule and metrics


def test_a_frame_is_speech_when_its_centre_lies_in_a_span() -> None:
    # chunk 4 at 8 Hz: frames of 0.5 s, centres at 0.25, 0.75, 1.25, 1.75 (exact in binary)
    table = [
        ([(0.25, 0.75)], [1, 0, 0, 0]),  # a span starting at a centre holds it; its end does not
        ([(0.26, 0.75)], [0, 0, 0, 0]),
        ([(0.0, 2.0)], [1, 1, 1, 1]),
        ([(0.7, 0.8), (1.2, 1.3)], [0, 1, 1, 0]),
        ([(1.0, 1.74), (1.5, 1.76)], [0, 0, 1, 1]),  # overlapping spans: their union
    ]
    for spans, want in table:
        assert speech_frames(spans, 4, 4, 8).tolist() == [bool(w) for w in want], spans


@pytest.mark.parametrize(
    ("end", "past"),
    [
        (0.1, False),  # the clip's length as a labeller writes it: a float a little above 1/10
        (0.05, False),
        (0.10000000000000002, True),  # the next float: past the 1,600 samples
        (0.2, True),
    ],
)
def test_a_span_is_past_its_sample_only_beyond_the_float_of_its_length(
    end: float, past: bool
) -> None:
    """Ten frames of 160 samples at 16 kHz cover exactly 1/10 s."""
    assert past_end(end, 10, 160, 16_000) is past


def test_frame_metrics_equal_scikit_learn_with_tied_probabilities() -> None:
    rng = np.random.default_rng(7)
    truth = rng.random(400) < 0.4
    noisy = truth * 0.3 + rng.random(400) * 0.7
    probability = np.round(noisy, 1).astype(np.float64)  # many ties
    got = activity_metrics(probability, truth, 0.5)
    predicted = probability >= 0.5
    assert got["frame_precision"] == pytest.approx(sk.precision_score(truth, predicted), abs=1e-12)
    assert got["frame_recall"] == pytest.approx(sk.recall_score(truth, predicted), abs=1e-12)
    assert got["frame_f1"] == pytest.approx(sk.f1_score(truth, predicted), abs=1e-12)
    assert got["frame_roc_auc"] == pytest.approx(sk.roc_auc_score(truth, probability), abs=1e-12)
    assert got["frames_count"] == 400


@pytest.mark.parametrize(
    ("truth", "probability", "metric"),
    [
        ([False, False, False], [0.9, 0.1, 0.7], "frame_recall"),  # no speech in the truth
        ([True, True], [0.9, 0.8], "frame_roc_auc"),  # speech only: no ROC-AUC
        ([True, False], [0.2, 0.1], "frame_precision"),  # no frame predicted speech
    ],
)
def test_an_undefined_frame_metric_fails_never_zero(
    truth: list[bool], probability: list[float], metric: str
) -> None:
    with pytest.raises(UndefinedMetric, match=f"metric {metric} is undefined"):
        activity_metrics(np.asarray(probability), np.asarray(truth), 0.5)


# ---------------------------------------------------------------- bad declarations


def _inputs(**state: Any) -> list[dict[str, Any]]:
    return [
        {"name": "input", "shape": [576], "stream": {"chunk": 512, "context": 64}},
        {"name": "state", "shape": [2, 128], "state": state},
        {"name": "sr", "element_type": "int64", "value": 16000},
    ]


@pytest.mark.parametrize(
    ("inputs", "outputs", "refusal"),
    [
        (_inputs(next="stateN"), None, "is a state without a batch_axis"),
        (_inputs(batch_axis=3, next="stateN"), None, "state.batch_axis 3 is out of range"),
        (
            [{"name": "state", "state": {"batch_axis": 0}}, {"name": "x"}],
            None,
            "is a state: declare its shape",
        ),
        (
            [{"name": "x", "shape": [512], "stream": {"chunk": 512, "context": 64}}],
            None,
            "its first dimension must be 576",
        ),
        (
            [
                {"name": "x"},
                {"name": "state", "shape": [2], "state": {"batch_axis": 0, "next": "y"}},
            ],
            None,
            "no input is streamed",
        ),
        (_inputs(batch_axis=1, next="stateN"), [{"name": "stateN"}], "it is not an answer"),
        (
            [{"name": "sr", "value": 1}, {"name": "s", "shape": [1], "state": {"batch_axis": 0}}],
            None,
            "one at least must be fed from the",
        ),
        (
            [{"name": "x"}, {"name": "sr", "element_type": "int64", "value": 0.5}],
            None,
            "not a whole number",
        ),
        ([{"name": "x"}, {"name": "t", "value": [[1, 2], [3]]}], None, "not rectangular"),
        ([{"name": "x"}, {"name": "t", "value": [0.0] * 4097}], None, "between 1 and 4096"),
        (
            [{"name": "x"}, {"name": "sr", "value": 1, "steps": [{"dtype": {"to": "int64"}}]}],
            None,
            "with no steps",
        ),
        (
            [{"name": "x"}, {"name": "sr", "value": 1, "state": {"batch_axis": 0}, "shape": [1]}],
            None,
            "declares value and state",
        ),
        (
            [{"name": "x"}, {"name": "s", "shape": [4096, 4097], "state": {"batch_axis": 0}}],
            None,
            "state's element count must be between 1 and 16777216",
        ),
    ],
)
def test_bad_constant_state_and_stream_declarations_are_refused(
    tmp_path: Path, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]] | None, refusal: str
) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"onnx")
    doc = silero_manifest(model, inputs=inputs)
    if outputs is not None:
        doc["outputs"] = outputs
    with pytest.raises(ManifestError, match=refusal):
        parse_manifest(doc)


def test_a_centre_on_a_labelled_boundary_is_decided_as_the_decimal_label_means() -> None:
    """256-sample frames at 8 kHz: frame 12's centre is 0.4 s exactly, and a span labelled
    ``[0.4, 1.2]`` holds it (the float 0.4 is a little above 2/5: read as its binary value the
    frame was dropped, a user trial's finding). Frame 37's centre is 1.2 s: the span's end
    does not hold it. Against the rule on decimals, over every frame."""
    from decimal import Decimal

    speech = speech_frames([(0.4, 1.2)], 40, 256, 8000)
    centres = [(Decimal(k) + Decimal("0.5")) * 256 / 8000 for k in range(40)]
    assert speech.tolist() == [Decimal("0.4") <= c < Decimal("1.2") for c in centres]
    assert speech[12] and not speech[11] and speech[36] and not speech[37]


@pytest.mark.parametrize(
    "span", [[0, 10**400], [-1, 2], [2, 1], [0, float("nan")], [0, "1"], [0.5]], ids=str
)
def test_a_span_that_is_no_time_is_refused_naming_its_line(span: list[Any]) -> None:
    """A span past the floats (an integer of 400 digits: an uncaught ``OverflowError`` before,
    a review's finding), negative, reversed, not a number or not a pair: a label problem
    naming the line, never a crash."""
    from pinbench.tasks.vad.truth import _spans
    from pinbench.worker.lines import LabelProblem

    with pytest.raises(LabelProblem, match="line 3: span"):
        _spans([span], "speech.jsonl", 3)


def test_frame_offsets_the_evaluator_states_are_checked_against_the_hosts_own_decoding(
    cli: Cli, tmp_path: Path, silero: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 71: the host took a voice-activity run's frame offsets from the evaluator, which
    widened each sample's frames (232 scored became 6,144; ROC-AUC 0.9913 became 0.9998, no
    truth needed). The host decodes the same files through the input's steps and counts the
    frames itself: offsets that are not its own fail the run, naming the sample."""
    from pinbench.worker import evaluation_steps, measure

    honest_keep = evaluation_steps.keep_answers  # measure calls it by the name patched below

    def widened(evidence: Any, task_name: str, outputs: Any, transposed: Any, arrays: Any) -> None:
        honest_keep(evidence, task_name, outputs, transposed, arrays)
        offsets = np.array(evidence.scored_inputs["input"], copy=True)
        offsets[:, 1] = offsets[:, 0] + (offsets[:, 1] - offsets[:, 0]) * 26
        evidence.scored_inputs["input"] = offsets

    monkeypatch.setattr(measure, "keep_answers", widened)
    files = clips()
    model_yaml = dump(tmp_path / "m" / "model.yaml", silero_manifest(_copy(silero, tmp_path / "m")))
    data_yaml = dump(tmp_path / "d" / "dataset.yaml", dataset_manifest(tmp_path / "d", files))
    with pytest.raises(AssertionError, match="frame offsets are not the host's: sample 0 has"):
        onnx_accuracy_run(  # in this process (--sandbox none), where the evaluator is patched
            cli,
            tmp_path,
            [model_yaml, data_yaml],
            "audio/silero-vad@6",
            "audio/speech-clips@1",
            "--sandbox",
            "none",
        )
