"""Text recognition (OCR): CTC greedy decoding, CER/WER/exact match, text labels, and the
PaddleOCR resize step.

Metrics equal a textbook Levenshtein written here; decoding equals rapidocr's own rule (argmax,
collapse repeats, drop the blank); labels and alphabets that cannot be read as documented are
refused naming the file and the line. End to end, PP-OCR v4's recogniser as rapidocr-onnxruntime
1.4.4 publishes it (``ch_PP-OCRv4_rec_infer.onnx``, unmodified, its alphabet from its own ONNX
metadata) runs through the CLI on text rendered here, and its recorded CER, WER and exact match
equal those computed from ONNX Runtime's outputs on the same inputs.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from pinbench.artifacts.onnx_proto import metadata_props
from pinbench.catalog import frameworks
from pinbench.errors import UserError
from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.ports import Ctc, CtcAlphabet, Input
from pinbench.registry.steps import InputStep, ResizeHeight
from pinbench.tasks.text_recognition.ctc import (
    AlphabetProblem,
    NotCtcScores,
    best_path,
    check_scores,
    decode,
    read_alphabet,
)
from pinbench.tasks.text_recognition.metrics import edit_distance, text_metrics
from pinbench.tasks.text_recognition.truth import read_texts
from pinbench.worker.lines import LabelProblem
from pinbench.worker.pipeline import pipeline_digest, preprocess
from pinbench.worker.pipeline_errors import PipelineError
from pinbench.worker.undefined import UndefinedMetric
from tests.helpers import Cli, dump, write_files
from tests.package_models import package_file

# ---------------------------------------------------------------- metrics


def levenshtein(a: Sequence[object], b: Sequence[object]) -> int:
    """The textbook dynamic programme: insertions, deletions, substitutions, each 1."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def direct_metrics(decoded: list[str], references: list[str]) -> dict[str, float]:
    pairs = list(zip(decoded, references, strict=True))
    return {
        "cer": sum(levenshtein(h, r) for h, r in pairs) / sum(len(r) for r in references),
        "wer": sum(levenshtein(h.split(), r.split()) for h, r in pairs)
        / sum(len(r.split()) for r in references),
        "exact_match": sum(h == r for h, r in pairs) / len(pairs),
    }


METRIC_CASES = [
    # (why, decoded, references)
    ("every sample right", ["abc", "de f"], ["abc", "de f"]),
    ("a substitution, an insertion, a deletion", ["abd", "abcc", "ac"], ["abc"] * 3),
    ("an empty decoding costs every reference character", ["", "x"], ["hello world", "x"]),
    ("case and whitespace count as written", ["Hello  world", " a"], ["hello world", "a"]),
    ("code points, not bytes", ["größe", "日本語"], ["grösse", "日本"]),
    ("CER past 1: a long decoding of a short text", ["abcdefgh"], ["a"]),
    ("corpus-level: sums, then one division", ["abc", "x"], ["", "abc def ghi"]),
]


@pytest.mark.parametrize(
    ("decoded", "references"), [c[1:] for c in METRIC_CASES], ids=[c[0] for c in METRIC_CASES]
)
def test_metrics_equal_the_direct_computation(decoded: list[str], references: list[str]) -> None:
    assert text_metrics(decoded, references) == pytest.approx(
        direct_metrics(decoded, references), rel=1e-15
    )


def test_the_vectorised_edit_distance_is_levenshtein() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        a, b = (rng.integers(0, 4, rng.integers(0, 25)) for _ in range(2))
        assert edit_distance(a, b) == levenshtein(a.tolist(), b.tolist())


@pytest.mark.parametrize(
    ("references", "metric"),
    [([""], "cer"), (["", ""], "cer"), ([" ", "\t"], "wer")],
    ids=["one empty text", "every text empty", "only whitespace: no word"],
)
def test_references_without_characters_or_words_leave_the_metric_undefined(
    references: list[str], metric: str
) -> None:
    with pytest.raises(UndefinedMetric, match=f"metric {metric} is undefined"):
        text_metrics(["x"] * len(references), references)


# ---------------------------------------------------------------- CTC decoding


def ctc(blank: int, *, space: bool = False, metadata: str | None = None) -> Ctc:
    alphabet = CtcAlphabet(metadata=metadata) if metadata else CtcAlphabet(file="keys.txt")
    return Ctc(blank=blank, alphabet=alphabet, space=space)


def keys(tmp_path: Path, text: str) -> dict[str, Path]:
    (tmp_path / "keys.txt").write_bytes(text.encode())
    return {"keys.txt": tmp_path / "keys.txt"}


DECODE_CASES = [
    # (why, blank, space, best path, text): alphabet "abc"
    ("repeats collapse, the blank separates", 0, False, [1, 1, 0, 1, 2, 2, 3], "aabc"),
    ("only blanks", 0, False, [0, 0, 0], ""),
    ("no time steps", 0, False, [], ""),
    ("a blank at the last index", 3, False, [0, 3, 0, 1, 1], "aab"),
    ("the space class after the alphabet", 0, True, [1, 4, 4, 2, 0, 3], "a bc"),
]


@pytest.mark.parametrize(
    ("blank", "space", "path", "text"),
    [c[1:] for c in DECODE_CASES],
    ids=[c[0] for c in DECODE_CASES],
)
def test_greedy_decoding(
    tmp_path: Path, blank: int, space: bool, path: list[int], text: str
) -> None:
    alphabet = read_alphabet(ctc(blank, space=space), keys(tmp_path, "a\nb\nc\n"), output="y")
    scores = np.zeros((1, len(path), len(alphabet.classes)), np.float32)
    scores[0, np.arange(len(path)), path] = 1.0
    (best,) = best_path(scores, output="y", first=0)
    assert best.tolist() == path
    assert decode(best, alphabet) == text


def test_a_tie_goes_to_the_lower_class() -> None:
    assert best_path(np.ones((1, 2, 4)), output="y", first=0).tolist() == [[0, 0]]


def test_a_score_that_is_not_finite_fails_naming_the_sample() -> None:
    scores = np.zeros((2, 3, 4), np.float32)
    scores[1, 2, 0] = np.nan
    with pytest.raises(NotCtcScores, match="sample 8 has the score nan at time step 2"):
        best_path(scores, output="y", first=7)


ALPHABETS = [
    # (why, file, classes with blank 0)
    ("LF lines, the last ended", "a\nb\n", ["", "a", "b"]),
    ("CRLF lines, the last not ended", "a\r\nb", ["", "a", "b"]),
    ("a line of one space is the space", "a\n \nb\n", ["", "a", " ", "b"]),
    ("a BOM is not a character", "\ufeffa\nb\n", ["", "a", "b"]),
]


@pytest.mark.parametrize(
    ("text", "classes"), [c[1:] for c in ALPHABETS], ids=[c[0] for c in ALPHABETS]
)
def test_an_alphabet_file_is_one_class_per_line(
    tmp_path: Path, text: str, classes: list[str]
) -> None:
    assert list(read_alphabet(ctc(0), keys(tmp_path, text), output="y").classes) == classes


BAD_ALPHABETS = [
    ("an empty line", ctc(0), "a\n\nb\n", "line 2 is empty"),
    ("an empty file", ctc(0), "", "it is empty"),
    ("not UTF-8", ctc(0), b"a\n\xff\n", "line 2 is not UTF-8"),
    ("the blank past the classes", ctc(4), "a\nb\n", "blank 4 is past the 3 classes"),
    # bounds: counted before the lines are split (22M lines of 64 MiB were 1.8 GB of strings)
    ("more lines than classes", ctc(0), "ab\n" * 1_000_001, "1000001 lines: an output scores"),
    ("the space past the most classes", ctc(0, space=True), "a\n" * 999_999, "at most 1000000"),
    ("an entry past 256 characters", ctc(0), "a\n" + "x" * 257, "line 2 holds 257 characters"),
]


@pytest.mark.parametrize(
    ("section", "text", "message"),
    [c[1:] for c in BAD_ALPHABETS],
    ids=[c[0] for c in BAD_ALPHABETS],
)
def test_an_alphabet_that_cannot_be_the_classes_is_refused(
    tmp_path: Path, section: Ctc, text: str | bytes, message: str
) -> None:
    (tmp_path / "keys.txt").write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(AlphabetProblem, match=re.escape(message)):
        read_alphabet(section, {"keys.txt": tmp_path / "keys.txt"}, output="y")


def onnx_with_metadata(path: Path, props: list[tuple[str, str]]) -> dict[str, Path]:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for key, value in props:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    path.write_bytes(model.SerializeToString())
    return {"m.onnx": path}


def test_an_alphabet_from_onnx_metadata_is_read_without_loading_the_model(tmp_path: Path) -> None:
    files = onnx_with_metadata(tmp_path / "m.onnx", [("other", "1"), ("character", "x\ny")])
    alphabet = read_alphabet(ctc(0, space=True, metadata="character"), files, output="y")
    assert alphabet.classes == ("", "x", "y", " ")
    section = ctc(0, metadata="characters")
    with pytest.raises(AlphabetProblem, match=r"no such key \(its metadata keys: character, other"):
        read_alphabet(section, files, output="y")
    twice = onnx_with_metadata(tmp_path / "m.onnx", [("character", "x"), ("character", "y")])
    with pytest.raises(AlphabetProblem, match="the key is given 2 times"):
        read_alphabet(ctc(0, metadata="character"), twice, output="y")


SHAPES = [
    ("two axes", (2, 4), NotCtcScores, "a CTC output has 3 axes, (N, T, C)"),
    ("four axes", (2, 1, 5, 4), NotCtcScores, "a CTC output has 3 axes"),
    ("time steps first", (5, 2, 4), NotCtcScores, "its first axis must be the batch's 2 samples"),
    ("a short alphabet", (2, 5, 5), AlphabetProblem, "scores 5 classes per time step, but 3 "),
]


@pytest.mark.parametrize(
    ("shape", "error", "message"), [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES]
)
def test_a_first_answer_that_is_not_the_alphabets_ctc_scores_is_refused(
    tmp_path: Path, shape: tuple[int, ...], error: type[UserError], message: str
) -> None:
    alphabet = read_alphabet(ctc(0), keys(tmp_path, "a\nb\nc\n"), output="y")
    check_scores((2, 7, 4), alphabet, output="y", batch=2)
    with pytest.raises(error, match=re.escape(message)):
        check_scores(shape, alphabet, output="y", batch=2)


def recorded(paths: list[list[int]], blank: int = 0) -> Any:
    from pinbench.registry.lockfile import LockedDataset, LockedModel
    from pinbench.tasks.parity import Recorded

    ctc = {"blank": blank, "alphabet": {"file": "keys.txt"}}
    model: dict[str, Any] = {
        "name": "m",
        "version": "1.0.0",
        "format": "onnx",
        "architecture": None,
        "trusted": False,
        "inputs": [],
        "outputs": [{"name": "y", "type": "text", "ctc": ctc}],
    }
    dataset: dict[str, Any] = {
        "name": "d",
        "version": "1.0.0",
        "manifest_digest": "0" * 64,
        "samples": None,
        "task": "text-recognition",
        "labels": {"format": "text-txt", "path": "t.txt"},
    }
    return Recorded(
        run="r" * 32,
        outputs=np.array(paths),
        outputs_name="y",
        metrics={},
        details={},
        model=msgspec.convert(model, LockedModel),
        dataset=msgspec.convert(dataset, LockedDataset),
    )


def one_hot(path: list[int], classes: int = 4) -> dict[str, npt.NDArray[np.float32]]:
    """One sample's answer (a batch of one) whose best path is ``path``."""
    scores = np.zeros((1, len(path), classes), np.float32)
    scores[0, np.arange(len(path)), path] = 1.0
    return {"y": scores}


def ctc_scorer(tmp_path: Path, truth: list[str]) -> Any:
    from pinbench.tasks.base import Context
    from pinbench.tasks.text_recognition.task import CtcScorer
    from pinbench.worker.datasets import Samples

    record = recorded([[0]])
    samples = Samples(data=np.zeros((len(truth), 1)), files=None, format="npy", truth=truth)
    context = Context(record.model, "m@1.0.0", {}, record.dataset, samples, True, None)
    alphabet = read_alphabet(ctc(0), keys(tmp_path, "a\nb\nc\n"), output="y")
    return CtcScorer(record.model.outputs[0], alphabet, context)


def test_samples_of_their_own_sizes_are_scored_and_their_paths_padded_with_the_blank(
    tmp_path: Path,
) -> None:
    """Samples fed one at a time (resize_multiple) give paths of their own lengths: each is
    decoded as it is, and they are recorded padded with the blank (NumPy's error before)."""
    scorer = ctc_scorer(tmp_path, ["ab", "c"])
    scored = scorer.score({0: one_hot([1, 0, 2, 2]), 1: one_hot([3, 3, 0, 3, 0, 0])}, {})
    assert scored.metrics == direct_metrics(["ab", "cc"], ["ab", "c"]) | {
        "accuracy_samples_count": 2.0
    }
    assert scored.outputs.tolist() == [[1, 0, 2, 2, 0, 0], [3, 3, 0, 3, 0, 0]]


def test_a_later_answer_that_is_not_the_alphabets_ctc_scores_is_refused(tmp_path: Path) -> None:
    """Only the first answer is checked before timing; every answer is checked when scored (a
    class past the alphabet was an IndexError)."""
    scorer = ctc_scorer(tmp_path, ["ab", "c"])
    with pytest.raises(AlphabetProblem, match="scores 6 classes per time step, but 3 "):
        scorer.score({0: one_hot([1, 0, 2]), 1: one_hot([5, 0, 3], classes=6)}, {})


PARITY = [
    # (why, other run's paths, other's blank, same texts, character edits between the runs)
    ("the same paths", [[1, 1, 0, 2], [3, 0, 0, 0]], 0, 2, 0),
    ("other paths to the same texts", [[1, 0, 2, 2], [0, 3, 3, 0]], 0, 2, 0),
    # with the blank last, class k is the alphabet's entry k (with it first, entry k - 1)
    ("the blank last, the same texts", [[0, 9, 1, 9], [9, 2, 9, 9]], 9, 2, 0),
    ("the blank last, the same indexes: other texts", [[1, 9, 2, 9], [9, 3, 9, 9]], 9, 0, 3),
    ("one character differs", [[1, 1, 0, 2], [3, 0, 2, 0]], 0, 1, 1),
]


@pytest.mark.parametrize(
    ("paths", "blank", "same", "edits"), [c[1:] for c in PARITY], ids=[c[0] for c in PARITY]
)
def test_parity_compares_the_decoded_texts(
    paths: list[list[int]], blank: int, same: int, edits: int
) -> None:
    from pinbench.tasks.registry import task

    found = task("text-recognition").parity(
        recorded([[1, 1, 0, 2], [3, 0, 0, 0]]), recorded(paths, blank)
    )
    assert {f.name: f.value for f in found.figures} == {
        "texts_agree": same,
        "samples": 2,
        "character_edits": edits,
    }
    assert found.agrees == (same == 2)


def test_publish_reads_the_alphabet_as_a_run_does(tmp_path: Path) -> None:
    from pinbench.registry.formats import FormatMismatch, check_model_files
    from pinbench.registry.manifest import ModelManifest

    def check(alphabet: dict[str, str]) -> None:
        manifest = parse_manifest({**MODEL, **text_output(blank=0, alphabet=alphabet)})
        assert isinstance(manifest, ModelManifest)
        check_model_files(manifest, lambda f: tmp_path / f.path)

    onnx_with_metadata(tmp_path / "m.onnx", [("character", "x\ny")])
    (tmp_path / "keys.txt").write_bytes(b"a\n\nb\n")
    check({"metadata": "character"})
    for alphabet, message in [
        (
            {"file": "keys.txt"},
            "file 'keys.txt': the CTC alphabet of output 'y' (file keys.txt): line 2",
        ),
        (
            {"metadata": "chars"},
            "file 'm.onnx': the CTC alphabet of output 'y' (ONNX metadata 'chars'",
        ),
    ]:
        with pytest.raises(FormatMismatch, match=re.escape(message)):
            check(alphabet)


def test_detection_and_segmentation_refuse_resize_height() -> None:
    from pinbench.tasks.detection.score import DetectionSetupError, geometry_of

    step = InputStep(resize_height=ResizeHeight(height=48, max_width=320))
    with pytest.raises(DetectionSetupError, match="not mapped back through resize_height"):
        geometry_of(Input(name="x", steps=[step]))


# ---------------------------------------------------------------- text labels

SAMPLES = ["lines/a.png", "lines/b.png"]
CSV = "file,text\n"
GOOD_LABELS = [
    # (why, format, file, texts in sample order)
    ("txt: each line exactly", "text-txt", "hello \r\nHi, 42\n", ["hello ", "Hi, 42"]),
    ("csv by file name", "text-csv", 'file,text\nb.png,"x, y"\na.png, z\n', [" z", "x, y"]),
    (
        "csv: a quoted text spans lines",
        "text-csv",
        'text,file\n"1\n2",a.png\n3,b.png\n',
        ["1\n2", "3"],
    ),
    (
        "jsonl: a sample of no text",
        "text-jsonl",
        '{"file":"a.png","text":""}\n{"file":"b.png","text":"é"}\n',
        ["", "é"],
    ),
]
BAD_LABELS = [
    ("txt: a blank line", "text-txt", "a\n \nb\n", "line 2 is blank"),
    ("txt: a line short", "text-txt", "a\n", "1 text lines for 2 samples"),
    ("csv: a sample missing", "text-csv", "file,text\na.png,x\n", "1 of 2 samples have no text"),
    ("csv: labelled twice", "text-csv", CSV + "a.png,x\na.png,y\n", "'a.png' is labelled twice"),
    ("csv: not a sample", "text-csv", CSV + "c.png,x\n", "line 2 names 'c.png', not a sample"),
    ("csv: no text column", "text-csv", "file,label\na.png,x\n", "the columns file and text"),
    ("jsonl: a text not a string", "text-jsonl", '{"file":"a.png","text":1}\n', "line 1: want"),
    ("jsonl: a key twice", "text-jsonl", '{"text":"x","text":"y"}\n', "key 'text' appears more"),
    ("a text too long", "text-txt", "a\n" + "b" * 10_001, "has 10001 characters, more than"),
]


def texts_of(tmp_path: Path, fmt: str, text: str) -> list[str]:
    (tmp_path / "labels").write_bytes(text.encode())
    return read_texts(
        LabelFormat(format=fmt, path="labels"),
        samples=SAMPLES,
        count=2,
        folder="lines",
        read=lambda _: tmp_path / "labels",
    )


@pytest.mark.parametrize(
    ("fmt", "text", "texts"), [c[1:] for c in GOOD_LABELS], ids=[c[0] for c in GOOD_LABELS]
)
def test_text_labels(tmp_path: Path, fmt: str, text: str, texts: list[str]) -> None:
    assert texts_of(tmp_path, fmt, text) == texts


@pytest.mark.parametrize(
    ("fmt", "text", "message"), [c[1:] for c in BAD_LABELS], ids=[c[0] for c in BAD_LABELS]
)
def test_text_labels_that_do_not_give_each_sample_one_text_are_refused(
    tmp_path: Path, fmt: str, text: str, message: str
) -> None:
    with pytest.raises(LabelProblem, match=re.escape(message)):
        texts_of(tmp_path, fmt, text)


MODEL = {
    "kind": "model",
    "name": "test/ocr",
    "version": "1.0.0",
    "format": "onnx",
    "framework": {"name": "onnxruntime"},
    "files": [{"path": p, "sha256": "0" * 64, "size": 1} for p in ("m.onnx", "keys.txt")],
}


def text_output(**ctc: Any) -> dict[str, Any]:
    return {"outputs": [{"name": "y", "type": "text", "ctc": ctc}]}


KEYS = {"file": "keys.txt"}
BAD_MANIFESTS = [
    (
        "a text output without ctc",
        {"outputs": [{"name": "y", "type": "text"}]},
        "of type text needs a `ctc` section",
    ),
    (
        "ctc on a tensor output",
        {"outputs": [{"name": "y", "ctc": {"blank": 0, "alphabet": KEYS}}]},
        "has a `ctc` section but type 'tensor'",
    ),
    ("the blank left out", text_output(alphabet=KEYS), "missing required field `blank`"),
    ("a negative blank", text_output(blank=-1, alphabet=KEYS), "ctc.blank must be between 0"),
    (
        "an alphabet not among the files",
        text_output(blank=0, alphabet={"file": "k.txt"}),
        "'k.txt' of output 'y' is not among the files",
    ),
    (
        "a file and a metadata key",
        text_output(blank=0, alphabet={**KEYS, "metadata": "character"}),
        "either a `file` of the model or an ONNX `metadata` key",
    ),
    (
        "metadata of a model that is not ONNX",
        {"format": "torchscript", **text_output(blank=0, alphabet={"metadata": "character"})},
        "format is torchscript: give the alphabet as a `file`",
    ),
    (
        "a resize to no height",
        {"inputs": [{"name": "x", "steps": [{"resize_height": {"height": 0, "max_width": 9}}]}]},
        "resize_height.height must be between 1 and 16384",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [c[1:] for c in BAD_MANIFESTS], ids=[c[0] for c in BAD_MANIFESTS]
)
def test_model_manifests_that_cannot_say_how_text_is_read_are_refused(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ManifestError, match=re.escape(message)):
        parse_manifest({**MODEL, **change})


def test_text_labels_need_sample_files_and_have_no_classes() -> None:
    dataset = {
        "kind": "dataset",
        "name": "test/lines",
        "version": "1.0.0",
        "task": "text-recognition",
        "files": [{"path": p, "sha256": "0" * 64, "size": 1} for p in ("x.npy", "t.csv")],
        "data": {"format": "npy", "path": "x.npy"},
    }
    refusals = [
        ({"format": "text-csv", "path": "t.csv"}, "labels of format text-csv name sample files"),
        ({"format": "text-txt", "path": "t.csv", "classes": 3}, "leave out `classes`"),
        ({"format": "text-txt"}, "labels of format text-txt need `path`"),
    ]
    for labels, message in refusals:
        with pytest.raises(ManifestError, match=re.escape(message)):
            parse_manifest({**dataset, "labels": labels})


# ---------------------------------------------------------------- PaddleOCR's resize

RESIZES = [
    # (why, sample h x w, height, max_width, width of the text before the padding)
    ("up to the height, padded", (2, 4), 4, 10, 8),
    ("the width capped at max_width", (2, 20), 4, 10, 10),
    ("PaddleOCR's float: 7 * (29 / 7) is 29.000000000000004, ceil 30", (7, 29), 7, 64, 30),
    ("down to the height", (96, 40), 48, 320, 20),
]


@pytest.mark.parametrize(
    ("size", "height", "max_width", "width"), [c[1:] for c in RESIZES], ids=[c[0] for c in RESIZES]
)
def test_resize_height_keeps_the_aspect_and_pads_right(
    size: tuple[int, int], height: int, max_width: int, width: int
) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, *size, 1)).astype(np.float32)
    step = ResizeHeight(height=height, max_width=max_width, value=7)
    out = preprocess(x, Input(name="x", steps=[InputStep(resize_height=step)]))
    resized = Image.fromarray(x[0, ..., 0], mode="F").resize(
        (width, height), Image.Resampling.BILINEAR
    )
    assert out.shape == (1, height, max_width, 1)
    assert np.array_equal(out[0, :, :width, 0], np.asarray(resized))
    assert (out[0, :, width:, 0] == 7).all()


def test_resize_height_refuses_a_pad_value_8_bit_samples_cannot_hold() -> None:
    from pinbench.worker.image_steps import resize_height

    x = np.zeros((1, 4, 4, 1), np.uint8)
    with pytest.raises(PipelineError, match=r"pad value 127\.5 is not a whole number"):
        resize_height(x, ResizeHeight(height=4, max_width=8, value=127.5))


def test_the_pipeline_digest_covers_resize_height() -> None:
    def digest(height: int = 48, max_width: int = 320, value: int = 0) -> str:
        step = ResizeHeight(height=height, max_width=max_width, value=value)
        return pipeline_digest(Input(name="x", steps=[InputStep(resize_height=step)])).hex

    assert len({digest(), digest(max_width=321), digest(height=32), digest(value=1)}) == 4


# ---------------------------------------------------------------- end to end: PP-OCR v4

RECOGNISER = "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
OUTPUT = "softmax_11.tmp_0"
TEXTS = ["pinbench", "Hello 42", "OCR test", "CTC decoding", "Pillow 2025"]
STEPS = [  # PaddleOCR's rec preprocessing: BGR, (x / 255 - 0.5) / 0.5, resize_norm_img
    {"decode": {"color_mode": "bgr"}},
    {"normalize": {"mean": [127.5], "std": [127.5]}},
    {"resize_height": {"height": 48, "max_width": 320, "value": 0}},
    {"layout": {"to": "NCHW"}},
]


def rendered(text: str) -> bytes:
    """Black text on a white line 32 pixels high (the step scales it to 48)."""
    font = ImageFont.load_default(size=22)
    x0, _, x1, _ = font.getbbox(text)
    image = Image.new("RGB", (int(x1 - x0) + 16, 32), "white")
    ImageDraw.Draw(image).text((8 - x0, 4), text, fill="black", font=font)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def paddle_rec_input(png: bytes) -> npt.NDArray[np.float32]:
    """rapidocr's ``resize_norm_img`` written out, with Pillow's bilinear on the normalised
    values (pinbench resizes with Pillow, not OpenCV)."""
    bgr = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))[..., ::-1]
    x = (bgr.astype(np.float32) - np.float32(127.5)) / np.float32(127.5)
    h, w = x.shape[:2]
    width = min(math.ceil(48 * (w / h)), 320)
    channels = [
        np.asarray(
            Image.fromarray(x[..., c], mode="F").resize((width, 48), Image.Resampling.BILINEAR)
        )
        for c in range(3)
    ]
    padded = np.zeros((3, 48, 320), np.float32)
    padded[:, :, :width] = np.stack(channels)
    return padded[None]


def direct_texts(model: Path, images: list[bytes]) -> list[str]:
    """ONNX Runtime's outputs decoded as rapidocr decodes them (its ``CTCLabelDecode``)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    characters = session.get_modelmeta().custom_metadata_map["character"].splitlines()
    classes = ["blank", *characters, " "]
    texts = []
    for png in images:
        (scores,) = session.run(None, {"x": paddle_rec_input(png)})
        assert scores.shape == (1, 40, len(classes))
        best = [k for k, _ in groupby(np.argmax(scores[0], axis=1).tolist())]
        texts.append("".join(classes[k] for k in best if k != 0))
    return texts


def flat_model() -> bytes:
    """An ONNX model whose output is 2-D, ``(N, 320)``: not CTC scores."""
    from onnx import TensorProto, helper

    axes = helper.make_tensor("axes", TensorProto.INT64, [2], [1, 2])
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)],
        "flat",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 48, 320])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 320])],
        [axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def recogniser(key: str, files: list[dict[str, Any]], output: str, alphabet: Any) -> Path:
    """A model manifest as the walkthrough in docs/tasks.md writes it, in folder ``key``."""
    doc = {
        "kind": "model",
        "name": f"test/{key}",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": files,
        "inputs": [{"name": "x", "type": "image", "shape": [3, 48, 320], "steps": STEPS}],
        "outputs": [
            {
                "name": output,
                "type": "text",
                "ctc": {"blank": 0, "alphabet": alphabet, "space": True},
            }
        ],
    }
    return dump(Path(key) / "model.yaml", doc)


def test_pp_ocr_recogniser_scores_as_the_direct_computation(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    model = package_file("rapidocr-onnxruntime", RECOGNISER)
    images = [rendered(t) for t in TEXTS]
    rows = [f"{i}.png,{t}\n" for i, t in enumerate(TEXTS)]
    (short,) = write_files(tmp_path, {"short.csv": "".join(["file,text\n", *rows[:-1]]).encode()})
    write_files(
        tmp_path,
        {
            **{f"lines/{i}.png": png for i, png in enumerate(images)},
            "texts.csv": "".join(["file,text\n", *rows]).encode(),
        },
    )
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "onnxruntime"))).code == 0

    # labels missing a sample: refused by `manifest dataset` and by publish, nothing written
    authored = ["manifest", "dataset", "lines", "--labels-format", "text-csv"]
    refused = cli(*authored, "--labels", "short.csv", "-o", "short.yaml")
    assert refused.code == 1 and "1 of 5 samples have no text, e.g. '4.png'" in refused.err
    assert not Path("short.yaml").exists()
    made = cli(*authored, "--labels", "texts.csv", "--name", "test/lines", "-o", "lines.yaml")
    assert made.code == 0, made.err
    dataset = yaml.safe_load(Path("lines.yaml").read_text())
    assert dataset["task"] == "text-recognition" and dataset["samples"] == len(TEXTS)
    bad = {
        **dataset,
        "version": "1.0.1",
        "files": [short if f["path"] == "texts.csv" else f for f in dataset["files"]],
        "labels": {"format": "text-csv", "path": "short.csv"},
    }
    refused = cli("publish", str(dump(tmp_path / "bad.yaml", bad)))
    assert refused.code == 1 and "1 of 5 samples have no text" in refused.err
    assert cli("publish", "lines.yaml").code == 0

    # the recogniser as published; the same with an alphabet file one character short; and a
    # model whose output is not (N, T, C)
    alphabet = dict(metadata_props(model, wanted="character", max_bytes=1 << 20))["character"]
    assert alphabet is not None
    short_keys = "".join(line + "\n" for line in alphabet.split("\n")[:-1]).encode()
    rec = {"rec.onnx": model.read_bytes()}
    models = [
        recogniser("rec", write_files(tmp_path / "rec", rec), OUTPUT, {"metadata": "character"}),
        recogniser(
            "short",
            write_files(tmp_path / "short", {**rec, "keys.txt": short_keys}),
            OUTPUT,
            {"file": "keys.txt"},
        ),
        recogniser(
            "flat",
            write_files(tmp_path / "flat", {"flat.onnx": flat_model(), "keys.txt": b"a\n" * 319}),
            "y",
            {"file": "keys.txt"},
        ),
    ]
    for manifest in models:
        done = cli("publish", str(manifest))
        assert done.code == 0, done.err
        request = {
            "model": f"test/{manifest.parent.name}@1",
            "dataset": "test/lines@1",
            "scenario": {"mode": "accuracy"},
        }
        lock = f"{manifest.parent.name}.lock"
        assert cli("lock", str(dump(Path("request.yaml"), request)), "-o", lock).code == 0
        cli("run", lock, "--runner", "local")

    runs = {
        r["model"].split("@")[0]: r["id"] for r in json.loads(cli("runs", "list", "--json").out)
    }
    run = json.loads(cli("runs", "show", runs["test/rec"], "--json").out)
    assert run["status"] == "succeeded", run["error"]
    found = direct_texts(model, images)
    assert [row["text"] for row in run["details"]["samples"]] == found
    expected = direct_metrics(found, TEXTS)
    assert {k: run[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert run["accuracy_samples_count"] == len(TEXTS)
    assert run["cer"] < 0.2  # PP-OCR v4 reads rendered Latin text

    for key, message in [
        ("test/short", "scores 6625 classes per time step, but 6623 characters and the blank"),
        ("test/flat", "text output 'y' of shape [1, 320]: a CTC output has 3 axes"),
    ]:
        failed = json.loads(cli("runs", "show", runs[key], "--json").out)
        assert failed["status"] == "failed" and message in failed["error"]
        assert "cer" not in failed
