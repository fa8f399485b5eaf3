"""Note transcription (decision 282): note-level precision, recall and F1, onsets only and
with offsets, equal to ``mir_eval.transcription.precision_recall_f1_overlap`` (its defaults:
50 ms, 50 cents, offsets at 20 % or 50 ms) on notes Hypothesis chooses, and to a direct count
(every pair compared here, a maximum matching by scipy's ``linear_sum_assignment``); pooled over
files as mir_eval's ``match_notes`` counts them; the labels' rules; and a run end to end through
the CLI of a tiny ONNX filterbank whose ``postprocess`` code makes notes of its frames."""

from __future__ import annotations

import io
import json
import math
import wave
from pathlib import Path
from typing import Any

import mir_eval
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from scipy.optimize import linear_sum_assignment

from pinbench.tasks.notes.metrics import note_metrics
from pinbench.tasks.notes.truth import read_notes
from pinbench.worker.lines import LabelProblem
from pinbench.worker.undefined import UndefinedMetric
from tests.helpers import Cli, dump, onnx_accuracy_run, write_files


def as_mir_eval(notes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    notes = np.asarray(notes, dtype=np.float64).reshape(-1, 3)
    return notes[:, :2], mir_eval.util.midi_to_hz(notes[:, 2])


def reference(ref: np.ndarray, est: np.ndarray, offsets: bool) -> tuple[float, float, float]:
    r_int, r_hz = as_mir_eval(ref)
    e_int, e_hz = as_mir_eval(est)
    p, r, f, _ = mir_eval.transcription.precision_recall_f1_overlap(
        r_int, r_hz, e_int, e_hz, offset_ratio=0.2 if offsets else None
    )
    return p, r, f


def direct_matches(ref: np.ndarray, est: np.ndarray, offsets: bool) -> int:
    """Every pair compared with Python's own arithmetic, then the largest matching."""
    if not len(ref) or not len(est):
        return 0
    hit = np.zeros((len(ref), len(est)))
    for i, (r_on, r_off, r_pitch) in enumerate(ref):
        for j, (e_on, e_off, e_pitch) in enumerate(est):
            ok = round(abs(r_on - e_on), 4) <= 0.05
            hz = (
                440.0 * 2.0 ** ((r_pitch - 69.0) / 12.0),
                440.0 * 2.0 ** ((e_pitch - 69.0) / 12.0),
            )
            ok &= abs(1200 * (math.log2(hz[0]) - math.log2(hz[1]))) <= 50
            if offsets:
                ok &= round(abs(r_off - e_off), 4) <= max(0.2 * (r_off - r_on), 0.05)
            hit[i, j] = ok
    rows, cols = linear_sum_assignment(hit, maximize=True)
    return int(hit[rows, cols].sum())


note = st.tuples(
    st.integers(0, 60).map(lambda v: v / 100),  # onset on a 10 ms grid: ties at 50 ms occur
    st.integers(1, 40).map(lambda v: v / 100),  # duration
    st.integers(0, 8).map(lambda v: 60 + v / 4),  # quarter tones: 50 cents apart occur
).map(lambda n: [n[0], n[0] + n[1], n[2]])
notes = st.lists(note, min_size=0, max_size=12).map(
    lambda rows: np.array(rows, dtype=np.float64).reshape(-1, 3)
)


@settings(max_examples=300, deadline=None)
@given(notes.filter(len), notes.filter(len))
def test_one_file_equals_mir_eval_and_a_direct_count(ref: np.ndarray, est: np.ndarray) -> None:
    found = note_metrics([ref], [est])
    for prefix, offsets in (("note", False), ("note_offset", True)):
        p, r, f = reference(ref, est, offsets)
        assert found[f"{prefix}_precision"] == p
        assert found[f"{prefix}_recall"] == r
        assert found[f"{prefix}_f1"] == f
        matched = direct_matches(ref, est, offsets)
        assert found[f"{prefix}_precision"] == matched / len(est)
        assert found[f"{prefix}_recall"] == matched / len(ref)
    assert found["notes_count"] == len(ref)
    assert found["estimated_notes_count"] == len(est)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(notes, notes), min_size=1, max_size=4))
def test_files_pool_their_matches_as_mir_eval_matches_them(files: list[Any]) -> None:
    refs, ests = [r for r, _ in files], [e for _, e in files]
    total_ref, total_est = sum(map(len, refs)), sum(map(len, ests))
    if not total_ref or not total_est:
        with pytest.raises(UndefinedMetric):
            note_metrics(refs, ests)
        return
    found = note_metrics(refs, ests)
    for prefix, offsets in (("note", False), ("note_offset", True)):
        matched = 0
        for r, e in files:
            if len(r) and len(e):
                matched += len(
                    mir_eval.transcription.match_notes(
                        *as_mir_eval(r), *as_mir_eval(e), offset_ratio=0.2 if offsets else None
                    )
                )
        p, rc = matched / total_est, matched / total_ref
        assert found[f"{prefix}_precision"] == p
        assert found[f"{prefix}_recall"] == rc
        assert found[f"{prefix}_f1"] == mir_eval.util.f_measure(p, rc)


def test_a_note_50_ms_and_50_cents_away_matches_at_equality() -> None:
    ref = np.array([[0.1, 0.5, 60.0]])
    est = np.array([[0.15, 0.6, 60.5]])  # onset 50 ms late, a quarter tone sharp
    found = note_metrics([ref], [est])
    assert found["note_f1"] == 1.0 == reference(ref, est, False)[2]
    assert found["note_offset_f1"] == 0.0 == reference(ref, est, True)[2]  # offset 100 ms > 80


@pytest.mark.parametrize(
    ("ref", "est", "metric"),
    [
        ([np.zeros((0, 3))], [np.array([[0.0, 1.0, 60.0]])], "note_recall"),
        ([np.array([[0.0, 1.0, 60.0]])], [np.zeros((0, 3))], "note_precision"),
    ],
)
def test_no_notes_are_undefined_not_zero(ref: Any, est: Any, metric: str) -> None:
    """mir_eval returns 0.0 (with a warning) for these; the run fails naming the metric."""
    with pytest.raises(UndefinedMetric) as caught:
        note_metrics(ref, est)
    assert caught.value.metric == metric


SAMPLES = ["wavs/a.wav", "wavs/b.wav"]


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (['{"file": "a.wav", "notes": []}'], "1 of 2 samples have no line"),
        (['{"file": "a.wav"}', '{"file": "b.wav", "notes": []}'], "line 1: want"),
        (['{"file": "a.wav", "notes": [[0.5, 0.4, 60]]}'], "is not 0 <= onset < offset"),
        (['{"file": "a.wav", "notes": [[0.5, 0.5, 60]]}'], "is not 0 <= onset < offset"),
        (['{"file": "a.wav", "notes": [[0, 1, 128]]}'], "outside MIDI's 0..127"),
        (['{"file": "a.wav", "notes": [[0, 1]]}'], "is not \\[onset, offset, pitch\\]"),
        (['{"file": "a.wav", "notes": [[0, 1, true]]}'], "is not \\[onset, offset, pitch\\]"),
        (['{"file": "a.wav", "notes": [[0, 1e400, 60]]}'], "non-finite"),
        (['{"file": "a.wav", "notes": {}}'], "notes is not a list"),
        (['{"file": "c.wav", "notes": []}'], "names 'c.wav', not a sample file"),
    ],
)
def test_note_labels_refused_naming_why(tmp_path: Path, lines: list[str], reason: str) -> None:
    if len(lines) == 1 and "c.wav" not in lines[0] and "1 of 2" not in reason:
        lines = [*lines, '{"file": "b.wav", "notes": []}']
    (tmp_path / "notes.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(LabelProblem, match=reason):
        read_notes("notes.jsonl", samples=SAMPLES, folder="wavs", read=lambda p: tmp_path / p)


def test_note_labels_read_in_sample_order(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text(
        '{"file": "b.wav", "notes": []}\n{"file": "a.wav", "notes": [[0, 0.5, 61.5]]}\n'
    )
    a, b = read_notes("notes.jsonl", samples=SAMPLES, folder="wavs", read=lambda p: tmp_path / p)
    assert a.tolist() == [[0.0, 0.5, 61.5]] and b.shape == (0, 3)


# --- end to end ------------------------------------------------------------------------------

RATE, FRAME = 16_000, 400  # 25 ms frames
PITCHES = (60, 64, 67)
PROC = """
import numpy as np

PITCHES = (60, 64, 67)
HOP = 0.025  # seconds per frame
MOST = 16  # notes a file may have: every answer has one shape, padded with rows of NaN


def notes(outputs, files):  # energy (N, frames, 3) -> notes (N, K, 3), NaN rows padding
    roll = outputs["energy"]
    active = roll > 0.1 * roll.max(axis=(1, 2), keepdims=True)
    found = []
    for sample in active:
        rows = []
        for p, pitch in enumerate(PITCHES):
            edges = np.flatnonzero(np.diff(np.r_[0, sample[:, p].astype(int), 0]))
            rows += [[s * HOP, e * HOP, pitch] for s, e in zip(edges[::2], edges[1::2])]
        found.append(rows)
    out = np.full((len(found), MOST, 3), np.nan)
    for i, rows in enumerate(found):
        out[i, : len(rows)] = rows
    return {"notes": out}
"""


def filterbank() -> bytes:
    """Each 25 ms frame's energy at the three pitches: cos and sin filters, squared, summed."""
    t = np.arange(FRAME) / RATE
    hz = [440.0 * 2 ** ((m - 69) / 12) for m in PITCHES]
    w = np.stack([f(2 * np.pi * h * t) for h in hz for f in (np.cos, np.sin)], axis=1)
    nodes = [
        helper.make_node("Reshape", ["x", "frames"], ["f"]),
        helper.make_node("MatMul", ["f", "w"], ["p"]),
        helper.make_node("Mul", ["p", "p"], ["q"]),
        helper.make_node("Reshape", ["q", "pairs"], ["r"]),
        helper.make_node("ReduceSum", ["r", "last"], ["energy"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "filterbank",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", RATE])],
        [helper.make_tensor_value_info("energy", TensorProto.FLOAT, ["N", 40, 3])],
        [
            numpy_helper.from_array(np.array([-1, 40, FRAME], dtype=np.int64), name="frames"),
            numpy_helper.from_array(w.astype(np.float32), name="w"),
            numpy_helper.from_array(np.array([-1, 40, 3, 2], dtype=np.int64), name="pairs"),
            numpy_helper.from_array(np.array([3], dtype=np.int64), name="last"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def played(notes: list[list[float]]) -> bytes:
    t = np.arange(RATE) / RATE
    x = np.zeros(RATE)
    for on, off, midi in notes:
        x += np.where(
            (t >= on) & (t < off), 0.2 * np.sin(2 * np.pi * 440 * 2 ** ((midi - 69) / 12) * t), 0
        )
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(np.round(x * 32767).astype("<i2").tobytes())
    return buf.getvalue()


def test_a_note_transcription_run_scores_the_code_s_notes_end_to_end(
    cli: Cli, tmp_path: Path
) -> None:
    import onnxruntime as ort

    playing = {
        "a.wav": [[0.1, 0.4, 60], [0.3, 0.7, 64], [0.5, 0.9, 67]],
        "b.wav": [[0.2, 0.6, 67], [0.6, 0.95, 60]],
    }
    truth = {  # as labelled: b's first note a semitone off, a's last one 100 ms late
        "a.wav": [[0.1, 0.4, 60], [0.3, 0.7, 64], [0.6, 0.9, 67]],
        "b.wav": [[0.2, 0.6, 68], [0.6, 0.95, 60]],
    }
    audio = {name: played(n) for name, n in playing.items()}
    onnx = filterbank()
    model_dir, data_dir = tmp_path / "m", tmp_path / "d"
    model = {
        "kind": "model",
        "name": "audio/tiny-notes",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(model_dir, {"model.onnx": onnx, "proc.py": PROC.encode()}),
        "inputs": [
            {
                "name": "x",
                "shape": [RATE],
                "steps": [{"decode_audio": {"channel": "mix", "rate": RATE}}],
            }
        ],
        "outputs": [{"name": "notes", "type": "tensor"}],
        "postprocess": {"file": "proc.py", "function": "notes"},
    }
    labels = "".join(json.dumps({"file": n, "notes": v}) + "\n" for n, v in truth.items())
    files = {**{f"wavs/{n}": b for n, b in audio.items()}, "notes.jsonl": labels.encode()}
    dataset = {
        "kind": "dataset",
        "name": "audio/tiny-tunes",
        "version": "1.0.0",
        "task": "note-transcription",
        "files": write_files(data_dir, files),
        "data": {"format": "audio", "path": "wavs"},
        "labels": {"format": "note-events", "path": "notes.jsonl"},
    }
    manifests = [dump(model_dir / "m.yaml", model), dump(data_dir / "d.yaml", dataset)]
    onnx_accuracy_run(
        cli, tmp_path, manifests, "audio/tiny-notes@1", "audio/tiny-tunes@1", "--allow-code"
    )
    (run,) = json.loads(cli("runs", "list", "--json").out)
    assert run["status"] == "succeeded"

    session = ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    space: dict[str, Any] = {}
    exec(PROC, space)  # the model's own code, as written, on onnxruntime's own outputs
    est, ref = [], []
    for name in sorted(audio):
        with wave.open(io.BytesIO(audio[name])) as f:
            x = np.frombuffer(f.readframes(RATE), "<i2").astype(np.float32) / 32768
        (energy,) = session.run(None, {"x": x[None]})
        rows = space["notes"]({"energy": energy}, None)["notes"][0]
        est.append(rows[~np.isnan(rows).all(axis=1)])
        ref.append(np.array(truth[name], dtype=np.float64))
    for prefix, ratio in (("note", None), ("note_offset", 0.2)):
        matched = sum(
            len(
                mir_eval.transcription.match_notes(
                    *as_mir_eval(r), *as_mir_eval(e), offset_ratio=ratio
                )
            )
            for r, e in zip(ref, est, strict=True)
        )
        assert run[f"{prefix}_precision"] == matched / sum(map(len, est))
        assert run[f"{prefix}_recall"] == matched / 5
    assert run["notes_count"] == 5  # 3 + 2 reference notes
    assert 0 < run["note_f1"] < 1


def test_the_walkthrough_s_code_is_the_code_this_module_runs() -> None:
    page = (Path(__file__).parent.parent / "docs" / "tasks.md").read_text()
    section = page[page.index("## Note transcription") :]
    block = section[section.index("```python\n# proc.py\n") :].split("\n", 2)[2]
    assert block[: block.index("```")].strip() == PROC.strip()


def test_a_model_without_one_tensor_output_is_refused_naming_its_outputs() -> None:
    from types import SimpleNamespace

    import msgspec

    from pinbench.registry.ports import Output
    from pinbench.tasks.notes.task import BadNotes, NotANoteModel, NoteTranscription

    def context(outputs: list[dict[str, Any]], accuracy: bool = True) -> Any:
        model = SimpleNamespace(outputs=[msgspec.convert(o, Output) for o in outputs])
        files = [SimpleNamespace(path="wavs/a.wav"), SimpleNamespace(path="wavs/b.wav")]
        return SimpleNamespace(
            model=model, model_ref="m@1", accuracy=accuracy, samples=SimpleNamespace(files=files)
        )

    raw = [{"name": "note"}, {"name": "onset"}, {"name": "contour"}]  # basic-pitch's, no code
    with pytest.raises(NotANoteModel, match=r"note \(tensor\), onset \(tensor\), contour"):
        NoteTranscription().prepare(context(raw))
    assert NoteTranscription().prepare(context(raw, accuracy=False)) is None
    scorer = NoteTranscription().prepare(context([{"name": "notes"}]))
    assert scorer is not None
    with pytest.raises(BadNotes, match=r"shape \[2, 4\] for a batch of 2"):
        scorer.check({"notes": np.zeros((2, 4))}, {}, 2)
    bad = np.full((2, 2, 3), np.nan)
    bad[1, 0] = [0.5, 0.2, 60]  # ends before it starts
    with pytest.raises(BadNotes, match=r"sample wavs/b.wav: note \[0.5, 0.2, 60.0\] is not 0"):
        scorer.check({"notes": bad}, {}, 2)
    half = np.full((1, 1, 3), np.nan)
    half[0, 0, 2] = 60.0  # a row partly NaN is no padding
    with pytest.raises(BadNotes, match="non-finite"):
        scorer.check({"notes": half}, {}, 1)


def test_the_host_compares_only_notes_close_in_time_and_bounds_them() -> None:
    """An attacker's review of issue 65: the estimated notes are the system under test's
    answer; matching built every (reference, estimated) pair, so a million answered notes
    against a file's ten thousand were 10^10 cells on the host. Only pairs within the onset
    tolerance are compared, at most ``MAX_PAIRS`` of them."""
    from pinbench.tasks.notes.matching import MAX_PAIRS, TooManyPairs, matched_count

    spread = np.arange(200_000, dtype=np.float64) * 0.2  # a note every 200 ms
    reference = np.stack([spread, spread + 0.1, np.full_like(spread, 60.0)], axis=1)
    # 200,000 x 200,000 pairs held densely are 320 GB a matrix: this ran out of memory
    assert matched_count(reference, reference.copy(), offsets=True) == len(reference)
    crowd = np.tile([[1.0, 1.5, 60.0]], (4_000, 1))  # every onset the same: all pairs compared
    with pytest.raises(TooManyPairs, match=f"over the {MAX_PAIRS}"):
        matched_count(crowd, crowd, offsets=False)
