"""Processing code per task (issue 50 item 1): docs/processing.md's example for each task that
accepts processing code, taken from the page as written (its manifest fields and its
``proc.py``), published with a small ONNX graph built here and run through ``pinbench run
--allow-code``; the recorded metrics equal a direct computation in the test and the field's
library (scikit-learn, SciPy, jiwer, pycocotools). The tasks that refuse processing code are
refused as the page says: a voice-activity model's ``preprocess`` when its manifest is read,
a generating task's lockfile at ``pinbench lock``.

One home for the module (ONNX Runtime's framework artifact published); each example publishes
its own dataset and model in it.
"""

from __future__ import annotations

import io
import json
import re
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper

from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.workspace import Workspace
from tests.helpers import Cli, dump, in_process_cli, model_manifest, write_files

PAGE = Path(__file__).resolve().parent.parent / "docs" / "processing.md"


def example(task: str) -> tuple[dict[str, Any], str]:
    """The page's example for ``task``: its manifest fields and its ``proc.py``, as written."""
    found = re.search(
        rf"<!-- {re.escape(task)} example, run by tests/test_processing_tasks\.py -->\n"
        r"```yaml\n(.*?)```\n\n```python\n# proc\.py\n(.*?)```",
        PAGE.read_text(),
        re.S,
    )
    assert found, f"docs/processing.md has no {task} example marked for this test"
    return yaml.safe_load(found.group(1)), found.group(2)


@dataclass
class World:
    ws: Workspace
    root: Path
    home: Path
    db: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A new home with ONNX Runtime's framework artifact published, for the whole module."""
    from pinbench.catalog import frameworks
    from pinbench.config import Settings
    from pinbench.registry.manifest import load_manifest
    from pinbench.registry.publish import publish

    root = tmp_path_factory.mktemp("processing-tasks")
    ws = Workspace(Settings(home=root / "home", database_url=f"sqlite:///{root}/db"))
    try:
        ws.init()
        framework = frameworks.write(root, "onnxruntime")
        publish(ws, load_manifest(framework), manifest_dir=root, publisher="test")
        yield World(ws, root, root / "home", f"sqlite:///{root}/db")
    finally:
        ws.close()


@pytest.fixture
def cli(world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, world.home, world.db)


def graph(
    nodes: list[Any],
    inputs: list[tuple[str, int, list[Any]]],
    outputs: list[tuple[str, int, list[Any]]],
    weights: dict[str, npt.NDArray[Any]] | None = None,
) -> bytes:
    made = helper.make_graph(
        nodes,
        "example",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(v, name=k) for k, v in (weights or {}).items()],
    )
    model = helper.make_model(made, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def png(pixels: npt.NDArray[np.uint8]) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels)).save(buf, format="PNG")
    return buf.getvalue()


def publish_dataset(
    world: World, cli: Cli, name: str, files: dict[str, bytes], **fields: Any
) -> str:
    folder = world.root / "datasets" / name
    entries = write_files(folder, files)
    manifest = {"kind": "dataset", "name": f"test/{name}", "version": "1.0.0", "files": entries}
    done = cli("publish", str(dump(folder / "dataset.yaml", {**manifest, **fields})))
    assert done.code == 0, done.err
    return f"test/{name}@1"


def publish_model(
    world: World, cli: Cli, task: str, onnx: bytes, files: dict[str, bytes] | None = None
) -> str:
    """The page's example for ``task`` as a model: its fields, its ``proc.py`` and ``files``
    beside the graph ``onnx``."""
    fields, code = example(task)
    folder = world.root / "models" / task
    entries = write_files(folder, {"model.onnx": onnx, "proc.py": code.encode(), **(files or {})})
    manifest = model_manifest(f"test/{task}-code", "1.0.0", entries, framework_range="^1")
    done = cli("publish", str(dump(folder / "model.yaml", {**manifest, **fields})))
    assert done.code == 0, done.err
    return f"test/{task}-code@1"


def run(
    world: World, cli: Cli, model: str, dataset: str, *, succeeds: bool = True
) -> dict[str, Any]:
    """``pinbench lock`` and ``pinbench run --allow-code`` (local runner): the run shown."""
    request = world.root / "requests" / f"{model}-{dataset}.yaml".replace("/", "-")
    dump(request, {"model": model, "dataset": dataset, "scenario": {"mode": "accuracy"}})
    lock = request.with_suffix(".lock")
    done = cli("lock", str(request), "-o", str(lock))
    assert done.code == 0, done.err
    done = cli("run", str(lock), "--runner", "local", "--allow-code")
    assert done.code == (0 if succeeds else 1), done.err
    info = show_run(world.ws, list_runs(world.ws)[0]["id"])
    if succeeds:
        assert info["status"] == "succeeded"
        fields, _ = example(info["model"].split("/")[1].removesuffix("-code@1.0.0"))
        roles = {r for r in ("preprocess", "postprocess") if r in fields}
        assert set(info["details"]["processing"]) == {*roles, "python"}
    return info


# --- binary ----------------------------------------------------------------------------------

MEAN, STD = [10.0, -20.0, 5.0, 0.0], [900.0, 1100.0, 1000.0, 800.0]
BINARY_W = np.array([[1.5], [-1.0], [0.5], [2.0]], dtype=np.float32)
BINARY_B = np.float32(0.25)


def publish_binary_model(world: World, cli: Cli) -> str:
    """The binary example's model: ``score = x @ W + b`` and its ``stats.json``."""
    onnx = graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["score"]),
        ],
        [("x", TensorProto.FLOAT, ["N", 4])],
        [("score", TensorProto.FLOAT, ["N", 1])],
        {"w": BINARY_W, "b": np.array([BINARY_B])},
    )
    stats = json.dumps({"mean": MEAN, "std": STD}).encode()
    return publish_model(world, cli, "binary", onnx, {"stats.json": stats})


def test_the_binary_example_scores_accuracy_f1_and_roc_auc_as_computed_directly(
    world: World, cli: Cli
) -> None:
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

    rng = np.random.default_rng(50)
    rows = rng.integers(-2000, 2000, size=(32, 4)).astype(np.int16)
    w, b = BINARY_W, BINARY_B
    standard = (rows.astype(np.float64) - MEAN) / STD
    truth = (standard @ [1.0, -1.0, 1.0, 1.0] + rng.normal(0, 0.8, 32) > 0).astype(np.int64)
    model = publish_binary_model(world, cli)
    buf_x, buf_y = io.BytesIO(), io.BytesIO()
    np.save(buf_x, rows, allow_pickle=False)
    np.save(buf_y, truth, allow_pickle=False)
    dataset = publish_dataset(
        world,
        cli,
        "sensor-rows",
        {"x.npy": buf_x.getvalue(), "y.npy": buf_y.getvalue()},
        data={"format": "npy", "path": "x.npy"},
        labels={"format": "class-index-npy", "path": "y.npy", "classes": 2},
    )
    info = run(world, cli, model, dataset)
    logit = standard.astype(np.float32) @ w[:, 0] + b
    p = (1.0 / (1.0 + np.exp(-logit.astype(np.float64)))).astype(np.float32)
    predicted = (p >= 0.5).astype(np.int64)
    assert 0 < predicted.sum() < 32 and (predicted != truth).any()  # the metrics can fail
    tp = int(((predicted == 1) & (truth == 1)).sum())
    fp, fn = (
        int(((predicted == 1) & (truth == 0)).sum()),
        int(((predicted == 0) & (truth == 1)).sum()),
    )
    assert info["binary_accuracy"] == float((predicted == truth).mean())
    assert info["binary_accuracy"] == accuracy_score(truth, predicted)
    assert info["binary_f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=1e-12)
    assert info["binary_f1"] == pytest.approx(f1_score(truth, predicted), abs=1e-12)
    pos, neg = p[truth == 1], p[truth == 0]
    pairs = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    assert info["binary_roc_auc"] == pytest.approx(pairs / (len(pos) * len(neg)), abs=1e-12)
    assert info["binary_roc_auc"] == pytest.approx(roc_auc_score(truth, p), abs=1e-12)
    assert info["details"]["processing"]["preprocess"]["code"] == "proc.py:prepare"


# --- sentence similarity ---------------------------------------------------------------------

SENTENCES = [
    "a cat sat on the mat",
    "the cat sat on a mat",
    "dogs bark loudly at night",
    "quiet owls hoot at night",
    "zebras jump over fences",
    "a zebra jumped a fence",
    "pinbench pins every byte",
    "bytes are pinned by pinbench",
]
PAIRS = [(0, 1, 4.8), (2, 3, 2.5), (4, 5, 4.1), (6, 7, 3.9), (0, 4, 0.4), (1, 6, 0.9), (3, 5, 1.7)]


def test_the_sentence_similarity_example_scores_spearman_as_computed_directly(
    world: World, cli: Cli
) -> None:
    from scipy.stats import spearmanr

    w = np.random.default_rng(7).uniform(0.1, 1.0, size=(26, 8)).astype(np.float32)
    onnx = graph(
        [helper.make_node("MatMul", ["counts", "w"], ["hidden"])],
        [("counts", TensorProto.FLOAT, ["N", 26])],
        [("hidden", TensorProto.FLOAT, ["N", 8])],
        {"w": w},
    )
    model = publish_model(world, cli, "sentence-similarity", onnx)
    dataset = publish_dataset(
        world,
        cli,
        "sentence-pairs",
        {
            "sentences.txt": "".join(f"{s}\n" for s in SENTENCES).encode(),
            "pairs.tsv": "".join(f"{i}\t{j}\t{g}\n" for i, j, g in PAIRS).encode(),
        },
        task="sentence-similarity",
        data={"format": "text-lines", "path": "sentences.txt"},
        labels={"format": "similarity-pairs", "path": "pairs.tsv"},
    )
    info = run(world, cli, model, dataset)
    counts = np.array(
        [[s.count(chr(ord("a") + k)) for k in range(26)] for s in SENTENCES], dtype=np.float64
    )
    vectors = counts @ w.astype(np.float64)
    cosine = np.array(
        [
            vectors[i] @ vectors[j] / np.linalg.norm(vectors[i]) / np.linalg.norm(vectors[j])
            for i, j, _ in PAIRS
        ]
    )
    gold = np.array([g for _, _, g in PAIRS])
    ranks = [np.argsort(np.argsort(v)).astype(np.float64) for v in (cosine, gold)]
    direct = float(np.corrcoef(ranks[0], ranks[1])[0, 1])  # no ties: Pearson's r of the ranks
    assert len(set(cosine.round(6))) == len(PAIRS)
    assert -1.0 < direct < 1.0  # the metric can fail
    assert info["spearman"] == pytest.approx(direct, abs=1e-9)
    assert info["spearman"] == pytest.approx(spearmanr(cosine, gold).statistic, abs=1e-9)
    assert info["pairs_count"] == len(PAIRS)


# --- detection -------------------------------------------------------------------------------

# (image width, height, the bright square's x0, y0, x1, y1 (exclusive), its grey level): the
# squares' edges fall on the 16x16 input's pixels; the last square is too dim to be found
SQUARES = [
    ((32, 32), (4, 6, 16, 18), 255),
    ((48, 32), (6, 4, 18, 12), 230),
    ((32, 32), (2, 2, 18, 14), 100),
]


def detection_graph() -> bytes:
    """Each 16x16 image's brightest value per row, ``rows`` (N, 16), and per column, ``cols``."""
    return graph(
        [
            helper.make_node("ReduceMax", ["image"], ["rows"], axes=[1, 3], keepdims=0),
            helper.make_node("ReduceMax", ["image"], ["cols"], axes=[1, 2], keepdims=0),
        ],
        [("image", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [("rows", TensorProto.FLOAT, ["N", 16]), ("cols", TensorProto.FLOAT, ["N", 16])],
    )


def squares() -> tuple[dict[str, bytes], dict[str, Any]]:
    """``SQUARES`` drawn, and their COCO ground truth: the dataset's files and the JSON."""
    files: dict[str, bytes] = {}
    images, annotations = [], []
    for i, ((width, height), (x0, y0, x1, y1), grey) in enumerate(SQUARES):
        pixels = np.full((height, width, 3), 20, dtype=np.uint8)
        pixels[y0:y1, x0:x1] = grey
        files[f"images/{i}.png"] = png(pixels)
        images.append({"id": i + 1, "file_name": f"{i}.png", "width": width, "height": height})
        box = [x0, y0, x1 - x0, y1 - y0]
        annotations.append(
            {
                "id": i + 1,
                "image_id": i + 1,
                "category_id": 1,
                "bbox": box,
                "area": box[2] * box[3],
                "iscrowd": 0,
            }
        )
    coco = {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": 1, "name": "square"}],
    }
    files["instances.json"] = json.dumps(coco).encode()
    return files, coco


def publish_squares(world: World, cli: Cli) -> str:
    """The squares as a detection dataset (published again by another test: a no-op)."""
    return publish_dataset(
        world,
        cli,
        "squares",
        squares()[0],
        task="detection",
        data={"format": "images", "path": "images"},
        labels={"format": "coco-json", "path": "instances.json"},
    )


def test_the_detection_example_scores_map_as_pycocotools_and_by_hand(
    world: World, cli: Cli
) -> None:
    from pycocotools.coco import COCO  # type: ignore[import-untyped]
    from pycocotools.cocoeval import COCOeval  # type: ignore[import-untyped]

    labels = {"labels.txt": b"square\n"}
    model = publish_model(world, cli, "detection", detection_graph(), labels)
    dataset = publish_squares(world, cli)
    coco = squares()[1]
    info = run(world, cli, model, dataset)
    # by hand: the two bright squares found exactly (score 1), the dim one missed: precision 1
    # up to recall 2/3 at every IoU threshold, so AP is the 67 of COCO's 101 recall points
    assert info["map"] == pytest.approx(67 / 101, abs=1e-12)
    assert info["map50"] == info["map75"] == info["map"]
    assert info["recall"] == pytest.approx(2 / 3, abs=1e-12)
    # pycocotools on the detections the example should give
    found = [
        {"image_id": i + 1, "category_id": 1, "bbox": [x0, y0, x1 - x0, y1 - y0], "score": 1.0}
        for i, (_, (x0, y0, x1, y1), grey) in enumerate(SQUARES)
        if grey / 255 > 0.5
    ]
    truth = COCO()
    truth.dataset = coco
    truth.createIndex()
    evaluation = COCOeval(truth, truth.loadRes(found), "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    assert info["map"] == pytest.approx(float(evaluation.stats[0]), abs=1e-12)
    assert info["recall"] == pytest.approx(float(evaluation.stats[8]), abs=1e-12)
    # each box on its own image: the fractions times the image's width and height
    assert info["details"]["detections"] == [
        [[1.0, 1.0, 4.0, 6.0, 12.0, 12.0]],
        [[1.0, 1.0, 6.0, 4.0, 12.0, 8.0]],
        [],  # the dim square: nothing scored
    ]


YOLOX_CODE = """\
import numpy as np


def finish(outputs, files):  # YOLOX's raw head for a 16x16 input, strides 8 and 16: 5 anchors
    return {"raw": np.zeros((len(outputs["rows"]), 5, 6), dtype=np.float32)}
"""


def test_a_grid_head_with_preprocess_is_refused_before_anything_runs(
    world: World, cli: Cli
) -> None:
    """A YOLOX or GFL head is decoded by the model input's size, which only the code knows when
    ``preprocess`` makes the input (pinbench would take each image's own size): refused, naming
    the output, with the way out (decode the head in ``postprocess``)."""
    fields, code = example("detection")
    raw = {
        "name": "raw",
        "type": "detection",
        "labels": {"path": "labels.txt"},
        "detection": {"layout": "yolox", "yolox": {"strides": [8, 16]}},
    }
    folder = world.root / "models" / "yolox"
    entries = write_files(
        folder,
        {"model.onnx": detection_graph(), "proc.py": code.encode(), "labels.txt": b"square\n"},
    )
    manifest = model_manifest("test/yolox-code", "1.0.0", entries, framework_range="^1")
    fields = {
        **fields,
        "outputs": [raw],
        "postprocess": {"code": YOLOX_CODE, "function": "finish"},
    }
    done = cli("publish", str(dump(folder / "model.yaml", {**manifest, **fields})))
    assert done.code == 0, done.err
    before = len(list_runs(world.ws))
    info = run(world, cli, "test/yolox-code@1", publish_squares(world, cli), succeeds=False)
    assert info["status"] == "failed"
    assert info["error"] == (
        "output 'raw': layout yolox is decoded by the model input's size of each image, which "
        "`preprocess` makes and pinbench does not know: decode the head in `postprocess` into "
        "`layout: separate` boxes (fractions of the input with `normalized: true`)"
    )
    assert info["latencies_sha256"] is None  # nothing timed
    assert len(list_runs(world.ws)) == before + 1


# --- segmentation ----------------------------------------------------------------------------


def test_the_segmentation_example_scores_miou_and_pixel_accuracy_as_computed_directly(
    world: World, cli: Cli
) -> None:
    from sklearn.metrics import accuracy_score, jaccard_score

    weights = np.zeros((2, 3, 1, 1), dtype=np.float32)
    weights[1, 0] = 1.0  # class 1's logit: red - 0.5; class 0's: 0
    onnx = graph(
        [helper.make_node("Conv", ["image", "w", "b"], ["logits"])],
        [("image", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [("logits", TensorProto.FLOAT, ["N", 2, 8, 8])],
        {"w": weights, "b": np.array([0.0, -0.5], dtype=np.float32)},
    )
    model = publish_model(world, cli, "segmentation", onnx)
    rng = np.random.default_rng(95)
    files: dict[str, bytes] = {}
    predicted, truth = [], []
    for i in range(3):
        red = rng.random((8, 8)) < 0.4
        pixels = np.zeros((8, 8, 3), dtype=np.uint8)
        pixels[..., 0] = np.where(red, 220, 30)
        pixels[..., 2] = 200  # blue is not red
        mask = red.astype(np.uint8)
        mask[rng.random((8, 8)) < 0.15] ^= 1  # the annotator disagrees here and there
        files[f"photos/{i}.png"] = png(pixels)
        files[f"masks/{i}.png"] = png(mask)
        predicted.append(red.astype(np.int64))
        truth.append(mask.astype(np.int64))
    dataset = publish_dataset(
        world,
        cli,
        "red-pixels",
        files,
        task="segmentation",
        data={"format": "images", "path": "photos"},
        labels={"format": "masks", "path": "masks", "classes": 2},
    )
    info = run(world, cli, model, dataset)
    pred, true = (
        np.concatenate([p.ravel() for p in predicted]),
        np.concatenate([t.ravel() for t in truth]),
    )
    ious = [((pred == c) & (true == c)).sum() / ((pred == c) | (true == c)).sum() for c in (0, 1)]
    assert (pred != true).any()  # the metrics can fail
    assert info["miou"] == pytest.approx(float(np.mean(ious)), abs=1e-12)
    assert info["miou"] == pytest.approx(jaccard_score(true, pred, average="macro"), abs=1e-12)
    assert info["pixel_accuracy"] == pytest.approx(accuracy_score(true, pred), abs=1e-12)


# --- text recognition ------------------------------------------------------------------------

# each line's class per time step (0 the blank, 1..3 chars.txt's a, b, c) and its true text
LINES = [
    ([1, 1, 0, 2, 2, 3, 0, 3], "abcc"),
    ([3, 0, 0, 1, 1, 1, 0, 2], "cab"),
    ([2, 2, 2, 2, 0, 0, 0, 0], "bb"),  # the model reads one b
    ([0, 1, 0, 1, 2, 0, 3, 3], "aabc"),
    ([1, 2, 3, 1, 2, 3, 1, 2], "abcabcaa"),  # the last a misread as b
]


def greedy(path: list[int]) -> str:
    out, last = [], 0
    for k in path:
        if k != last and k != 0:
            out.append("abc"[k - 1])
        last = k
    return "".join(out)


def levenshtein(a: list[str] | str, b: list[str] | str) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row, before = [i, *[0] * len(b)], row
        for j, y in enumerate(b, 1):
            row[j] = min(before[j] + 1, row[j - 1] + 1, before[j - 1] + (x != y))
    return row[-1]


def test_the_text_recognition_example_scores_cer_and_wer_as_computed_directly(
    world: World, cli: Cli
) -> None:
    import jiwer

    onnx = graph(
        [
            helper.make_node("Round", ["x"], ["r"]),
            helper.make_node("Cast", ["r"], ["ids"], to=TensorProto.INT64),
        ],
        [("x", TensorProto.FLOAT, ["N", 8])],
        [("ids", TensorProto.INT64, ["N", 8])],
    )
    model = publish_model(world, cli, "text-recognition", onnx, {"chars.txt": b"a\nb\nc\n"})
    files = {
        f"lines/{i}.png": png(np.repeat(np.array([path], dtype=np.uint8) * 20, 2, axis=0))
        for i, (path, _) in enumerate(LINES)
    }
    files["texts.txt"] = "".join(f"{text}\n" for _, text in LINES).encode()
    dataset = publish_dataset(
        world,
        cli,
        "lines",
        files,
        task="text-recognition",
        data={"format": "images", "path": "lines"},
        labels={"format": "text-txt", "path": "texts.txt"},
    )
    info = run(world, cli, model, dataset)
    decoded, texts = [greedy(path) for path, _ in LINES], [text for _, text in LINES]
    assert decoded[:2] == texts[:2] and decoded[2] == "b"
    cer = sum(levenshtein(d, t) for d, t in zip(decoded, texts, strict=True)) / sum(
        len(t) for t in texts
    )
    assert cer > 0  # the metric can fail
    assert info["cer"] == pytest.approx(cer, abs=1e-12)
    assert info["cer"] == pytest.approx(jiwer.cer(texts, decoded), abs=1e-12)
    assert info["wer"] == pytest.approx(jiwer.wer(texts, decoded), abs=1e-12)
    assert info["exact_match"] == pytest.approx(
        sum(d == t for d, t in zip(decoded, texts, strict=True)) / 5
    )
    assert [row["text"] for row in info["details"]["samples"]] == decoded


# --- voice activity --------------------------------------------------------------------------

RATE, CHUNK = 16000, 160
# each clip's noise bursts (first and last sample) and its labelled speech spans in seconds
CLIPS = [
    ([(480, 1120)], [[0.03, 0.07]]),
    ([(0, 320)], [[0.0, 0.03]]),  # the label runs a frame past the burst
    ([(800, 1600)], [[0.05, 0.0925]]),  # the label ends a frame early
    ([], []),
]


def wav(samples: npt.NDArray[np.int16]) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(samples.tobytes())
    return buf.getvalue()


def test_the_voice_activity_example_scores_frames_as_computed_directly(
    world: World, cli: Cli
) -> None:
    from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

    onnx = graph(
        [
            helper.make_node("Mul", ["audio", "audio"], ["square"]),
            helper.make_node("ReduceMean", ["square"], ["energy"], axes=[1], keepdims=1),
        ],
        [("audio", TensorProto.FLOAT, ["N", CHUNK])],
        [("energy", TensorProto.FLOAT, ["N", 1])],
    )
    model = publish_model(world, cli, "voice-activity", onnx)
    rng = np.random.default_rng(127)
    files: dict[str, bytes] = {}
    lines, waves = [], []
    for i, (bursts, spans) in enumerate(CLIPS):
        samples = np.zeros(RATE // 10, dtype=np.int16)
        for start, end in bursts:
            samples[start:end] = rng.integers(-9000, 9000, end - start)
        files[f"clips/{i}.wav"] = wav(samples)
        lines.append(json.dumps({"file": f"{i}.wav", "speech": spans}))
        waves.append(samples.astype(np.float64) / 32768)
    files["speech.jsonl"] = "".join(f"{line}\n" for line in lines).encode()
    dataset = publish_dataset(
        world,
        cli,
        "vad-clips",
        files,
        task="voice-activity",
        data={"format": "audio", "path": "clips"},
        labels={"format": "speech-segments", "path": "speech.jsonl"},
    )
    info = run(world, cli, model, dataset)
    energy = np.concatenate([(w.reshape(-1, CHUNK) ** 2).mean(axis=1) for w in waves])
    level = 10.0 * np.log10(energy.astype(np.float32).astype(np.float64) + 1e-10)
    p = 1.0 / (1.0 + np.exp(-(level + 30.0) / 3.0))
    predicted = (p >= 0.5).astype(int)
    centres = [Fraction(2 * k + 1, 2) * CHUNK / RATE for k in range(RATE // 10 // CHUNK)]
    truth = np.concatenate(  # a frame is speech where its centre lies in a span, exactly
        [
            [any(Fraction(a) <= c < Fraction(b) for a, b in spans) for c in centres]
            for _, spans in CLIPS
        ]
    ).astype(int)
    assert (predicted != truth).any()  # the metrics can fail
    tp = int((predicted & truth).sum())
    assert info["frames_count"] == len(truth) == 40
    assert info["frame_precision"] == pytest.approx(tp / predicted.sum(), abs=1e-12)
    assert info["frame_recall"] == pytest.approx(tp / truth.sum(), abs=1e-12)
    assert info["frame_f1"] == pytest.approx(f1_score(truth, predicted), abs=1e-12)
    assert info["frame_precision"] == pytest.approx(precision_score(truth, predicted), abs=1e-12)
    assert info["frame_recall"] == pytest.approx(recall_score(truth, predicted), abs=1e-12)
    assert info["frame_roc_auc"] == pytest.approx(roc_auc_score(truth, p), abs=1e-6)


# --- the tasks that refuse processing code ---------------------------------------------------


def test_a_voice_activity_model_cannot_preprocess_its_streamed_input(world: World) -> None:
    """The task scores frames of a streamed input; ``preprocess`` makes inputs whole."""
    fields, _ = example("binary")
    streamed = {**fields["inputs"][0], "shape": [576], "stream": {"chunk": 512, "context": 64}}
    manifest = model_manifest(
        "test/vad-code", "1.0.0", [{"path": "proc.py", "sha256": "0" * 64, "size": 1}]
    )
    with pytest.raises(
        ManifestError, match="input 'x' is streamed, but `preprocess` makes every input"
    ):
        parse_manifest({**manifest, **fields, "inputs": [streamed]})


@pytest.mark.parametrize("task", ["text-generation", "speech-recognition"])
def test_a_generating_task_refuses_a_model_with_code_at_lock(
    world: World, cli: Cli, task: str
) -> None:
    """A generation run tokenizes, generates and decodes by itself and would never call the
    code: ``pinbench lock`` refuses it, naming the fields, and writes no lockfile."""
    if task == "text-generation":
        dataset = publish_dataset(
            world,
            cli,
            "prompts",
            {"prompts.jsonl": b'{"prompt": "one", "reference": "two"}\n'},
            task=task,
            data={"format": "prompts-jsonl", "path": "prompts.jsonl"},
            labels={"format": "prompt-references"},
        )
    else:
        dataset = publish_dataset(
            world,
            cli,
            "clips",
            {"clips/0.wav": wav(np.zeros(160, np.int16)), "transcripts.txt": b"silence\n"},
            task=task,
            data={"format": "audio", "path": "clips"},
            labels={"format": "transcript-txt", "path": "transcripts.txt"},
        )
    model = publish_binary_model(world, cli)  # published again by the binary test: a no-op
    request = dump(
        world.root / f"{task}.yaml",
        {"model": model, "dataset": dataset, "generation": {"max_new_tokens": 2}},
    )
    lock = request.with_suffix(".lock")
    done = cli("lock", str(request), "-o", str(lock))
    assert done.code == 1, done.out
    assert "declares `preprocess` and `postprocess`" in done.err
    assert "a generation run never runs a model's processing code" in done.err
    assert not lock.exists()
