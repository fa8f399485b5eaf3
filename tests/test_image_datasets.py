"""Datasets of real files: a folder of JPEG/PNG/WebP/BMP images of different sizes (or one
``.npy`` per sample), each pinned by sha256, decoded with Pillow as the input's first step,
labelled by folder (imagefolder), by line (txt), by file (csv, jsonl) or by array, with class
names shown in the results; every way a dataset can be wrong refused with its reason.

The model is a real ONNX graph that "classifies" an image by its strongest colour channel
(global average pool), so the right labels give top-1 1.0 and a wrong mapping does not.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image

from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.registry import service
from pinbench.registry.manifest import ModelManifest, parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.tasks.classification.errors import ClassCountMismatch
from pinbench.worker.pipeline import preprocess_files
from pinbench.worker.pipeline_errors import PipelineError
from pinbench.workspace import Workspace
from tests.helpers import Cli, dump, write_files

COLOURS = {"red": (220, 30, 40), "green": (20, 200, 50), "blue": (30, 40, 210)}
"""Class index = the model's output index = the strongest channel: red 0, green 1, blue 2."""
SIZES = [(23, 31), (40, 17), (64, 64)]
FORMATS = ["JPEG", "PNG", "WEBP", "BMP"]
SUFFIX = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "BMP": "bmp"}
STEPS: list[dict[str, Any]] = [
    {"decode": {"color_mode": "rgb"}},
    {"resize": {"size": [16, 16]}},
    {"normalize": {"scale": 1 / 255}},
    {"layout": {"to": "NCHW"}},
]


def quiet(text: str) -> None:
    pass


def _image(colour: tuple[int, int, int], size: tuple[int, int], fmt: str, seed: int) -> bytes:
    noise = np.random.default_rng(seed).integers(-15, 16, (*size, 3))
    pixels = np.clip(np.array(colour) + noise, 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt)
    return out.getvalue()


def photos() -> dict[str, bytes]:
    """``photos/<colour>/<n>.<suffix>``: every colour in several sizes and formats."""
    files, seed = {}, 0
    for name, colour in COLOURS.items():
        for n, size in enumerate(SIZES):
            fmt = FORMATS[seed % len(FORMATS)]
            files[f"photos/{name}/{n}.{SUFFIX[fmt]}"] = _image(colour, size, fmt, seed)
            seed += 1
    return files


def _deep_png() -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.array([[0, 1000], [30000, 65535]], dtype=np.uint16)).save(out, "PNG")
    return out.getvalue()


def _png(bit_depth: int, colour_type: int, channels: int, size: int = 4) -> bytes:
    """A PNG written byte by byte (Pillow writes no 16-bit colour PNG): every sample bright."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", size, size, bit_depth, colour_type, 0, 0, 0)
    row = b"\x00" + b"\xff" * (size * channels * bit_depth // 8)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * size))
        + chunk(b"IEND", b"")
    )


def _cmyk_jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("CMYK", (4, 4), (0, 255, 255, 0)).save(out, "JPEG")
    return out.getvalue()


def _labelled() -> list[tuple[str, int]]:
    """Each sample file, relative to the data folder, with its class index."""
    return [(p.removeprefix("photos/"), list(COLOURS).index(p.split("/")[1])) for p in photos()]


def _csv_labels(header: str, row: str) -> bytes:
    """``header`` then one row a sample: ``file`` then ``row`` ({label}, {other}: a wrong one)."""
    rows = [f"{f}{row.format(label=c, other=(c + 1) % 3)}" for f, c in _labelled()]
    return "\n".join([header, *rows, ""]).encode()


def _jsonl_labels_twice() -> bytes:
    """One object a sample; the first gives its right label, then a wrong one."""
    lines = []
    for n, (file, label) in enumerate(_labelled()):
        twice = f', "label": {(label + 1) % 3}' if n == 0 else ""
        lines.append(f'{{"file": "{file}", "label": {label}{twice}}}\n')
    return "".join(lines).encode()


def truth(paths: list[str]) -> list[int]:
    return [list(COLOURS).index(p.split("/")[1]) for p in sorted(paths)]


def colour_model() -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("GlobalAveragePool", ["image"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["scores"], axis=1),
        ],
        "colour",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def publish_model(ws: Workspace, root: Path, steps: list[dict[str, Any]] = STEPS) -> str:
    version = f"1.0.{len(list(root.parent.glob('model-*')))}"
    folder = root.parent / f"model-{version}"
    inputs = [{"name": "image", "element_type": "float32", "shape": [3, 16, 16], "steps": steps}]
    manifest = {
        "kind": "model",
        "name": "vision/colour",
        "version": version,
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(folder, {"colour.onnx": colour_model()}),
        "inputs": inputs,
        "outputs": [{"name": "scores", "type": "classification"}],
    }
    publish(ws, parse_manifest(manifest), manifest_dir=folder, publisher="test")
    return f"vision/colour@{version}"


def dataset(
    root: Path, files: dict[str, bytes], labels: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    return {
        "kind": "dataset",
        "name": "colours",
        "version": "1.0.0",
        "data": {"format": "images", "path": "photos"},
        "labels": labels,
        "files": write_files(root, files),
        **fields,
    }


def run_accuracy(ws: Workspace, model: str, version: str = "1.0.0") -> dict[str, Any]:
    """Lock and run an accuracy run; the run as ``runs show`` gives it."""
    request = {"model": model, "dataset": f"colours@{version}", "scenario": {"mode": "accuracy"}}
    lock = service.lock(ws, parse_request(request))[0]
    run_lockfile(ws, lock, say=quiet)
    return show_run(ws, list_runs(ws)[0]["id"])


NAMES = b"red\ngreen\nblue\n"


def test_a_folder_of_images_runs_end_to_end_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    """The author's path: ``pinbench manifest`` for the photos (imagefolder, with a
    class-names file), the model and the framework; publish, lock, accuracy and SingleStream;
    the results name the file, the true class and the predicted one."""
    assert cli("init").code == 0
    root = tmp_path / "colours"
    files = {**photos(), "classes.txt": NAMES}
    write_files(root, files)
    written = cli(
        "manifest",
        "dataset",
        str(root / "photos"),
        "--names",
        str(root / "classes.txt"),
        "--name",
        "colours",
        "-o",
        str(root / "dataset.yaml"),
    )
    assert written.code == 0, written.err
    dataset_yaml = yaml.safe_load((root / "dataset.yaml").read_text())
    assert dataset_yaml["data"] == {"format": "images", "path": "photos"}
    assert dataset_yaml["labels"] == {"format": "imagefolder", "names": "classes.txt"}
    assert dataset_yaml["samples"] == 9
    model_dir = tmp_path / "model"
    write_files(model_dir, {"colour.onnx": colour_model()})
    model_yaml = model_dir / "model.yaml"
    args = ["manifest", "model", str(model_dir / "colour.onnx"), "--name", "vision/colour"]
    assert cli(*args, "-o", str(model_yaml)).code == 0
    model = yaml.safe_load(model_yaml.read_text())
    assert [i["name"] for i in model["inputs"]] == ["image"]
    model["inputs"][0]["steps"] = STEPS  # what the author adds, as the notes say
    model["outputs"][0]["type"] = "classification"
    dump(model_yaml, model)
    framework_yaml = tmp_path / "framework.yaml"
    assert cli("manifest", "framework", "onnxruntime==1.31.0", "-o", str(framework_yaml)).code == 0
    for manifest in (framework_yaml, root / "dataset.yaml", model_yaml):
        published = cli("publish", str(manifest))
        assert published.code == 0, published.err
    for mode, scenario in [("accuracy", {"mode": "accuracy"}), ("perf", {"name": "SingleStream"})]:
        request = dump(
            tmp_path / f"{mode}.yaml",
            {"model": "vision/colour@1", "dataset": "colours@1", "scenario": scenario},
        )
        lock = tmp_path / f"{mode}.lock"
        locked = cli("lock", str(request), "-o", str(lock))
        assert locked.code == 0, locked.err
        ran = cli("run", str(lock), "--runner", "local", "--json")
        assert ran.code == 0, ran.err
    runs = json.loads(cli("runs", "list", "--json").out)
    assert [r["status"] for r in runs] == ["succeeded", "succeeded"]
    accuracy = json.loads(cli("runs", "show", str(runs[-1]["id"]), "--json").out)
    assert accuracy["top1"] == 1.0
    assert "top5" not in accuracy  # three classes: top-5 would always be 1
    details = accuracy["details"]
    assert details["decoder"].startswith("Pillow ")
    rows = details["samples"]
    assert [r["sample"] for r in rows] == sorted(p for p in files if p.startswith("photos/"))
    assert {(r["truth_name"], r["top1_name"]) for r in rows} == {(c, c) for c in COLOURS}
    shown = cli("runs", "show", str(runs[-1]["id"]))
    assert "photos/blue/0." in shown.out and "2 blue" in shown.out
    html = tmp_path / "report.html"
    assert cli("runs", "report", str(runs[-1]["id"]), "--html", str(html)).code == 0
    assert 'id="predictions"' in html.read_text() and "photos/red/2." in html.read_text()


def test_without_a_names_file_imagefolder_classes_are_the_sorted_folder_names(
    digits: Workspace, tmp_path: Path
) -> None:
    """blue 0, green 1, red 2 (torchvision's rule): only green lines up with this model."""
    root = tmp_path / "colours"
    manifest = dataset(root, photos(), {"format": "imagefolder"})
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    run = run_accuracy(digits, publish_model(digits, root))
    assert run["status"] == "succeeded"
    assert run["top1"] == pytest.approx(1 / 3)


def _label_files(kind: str, paths: list[str]) -> tuple[dict[str, Any], dict[str, bytes]]:
    names = [list(COLOURS)[t] for t in truth(paths)]
    rel = [p.removeprefix("photos/") for p in sorted(paths)]
    if kind == "txt-index":
        text = "".join(f"{t}\n" for t in truth(paths))
        return {"format": "class-index-txt", "path": "labels.txt"}, {"labels.txt": text.encode()}
    if kind == "txt-name":
        text = "".join(f"{n}\n" for n in names)
        return {"format": "class-index-txt", "path": "labels.txt", "names": "classes.txt"}, {
            "labels.txt": text.encode(),
            "classes.txt": NAMES,
        }
    if kind == "csv":
        rows = "".join(f"{f},{n}\n" for f, n in reversed(list(zip(rel, names, strict=True))))
        return {"format": "class-index-csv", "path": "labels.csv", "names": "classes.txt"}, {
            "labels.csv": f"file,label\n{rows}".encode(),
            "classes.txt": NAMES,
        }
    if kind == "jsonl":
        lines = "".join(
            json.dumps({"file": f, "label": t}) + "\n"
            for f, t in zip(rel, truth(paths), strict=True)
        )
        return {"format": "class-index-jsonl", "path": "labels.jsonl"}, {
            "labels.jsonl": lines.encode()
        }
    assert kind == "npy"
    buffer = io.BytesIO()
    np.save(buffer, np.array(truth(paths), dtype=np.int64))
    return {"format": "class-index-npy", "path": "labels.npy"}, {"labels.npy": buffer.getvalue()}


@pytest.mark.parametrize("kind", ["txt-index", "txt-name", "csv", "jsonl", "npy"])
def test_every_label_format_gives_each_file_its_class(
    digits: Workspace, tmp_path: Path, kind: str
) -> None:
    images = photos()
    labels, extra = _label_files(kind, list(images))
    root = tmp_path / "colours"
    manifest = dataset(root, {**images, **extra}, labels)
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    run = run_accuracy(digits, publish_model(digits, root))
    assert (run["status"], run["top1"]) == ("succeeded", 1.0), run.get("error")


def test_a_synset_file_keys_classes_by_wordnet_id_and_names_them(
    digits: Workspace, tmp_path: Path
) -> None:
    """ImageNet's layout: folders named by WordNet id, ``LOC_synset_mapping.txt`` lines."""
    ids = {"red": "n00000001", "green": "n00000002", "blue": "n00000003"}
    images = {
        p.replace(f"/{c}/", f"/{ids[c]}/"): b
        for p, b in photos().items()
        for c in ids
        if f"/{c}/" in p
    }
    synsets = "".join(f"{ids[c]} {c} thing, {c}ish\n" for c in COLOURS).encode()
    root = tmp_path / "colours"
    manifest = dataset(
        root, {**images, "synsets.txt": synsets}, {"format": "imagefolder", "names": "synsets.txt"}
    )
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    run = run_accuracy(digits, publish_model(digits, root))
    assert run["top1"] == 1.0
    rows = run["details"]["samples"]
    assert {r["truth_name"] for r in rows} == {f"{c} thing, {c}ish" for c in COLOURS}


def test_npy_files_of_different_sizes_are_one_sample_each(
    digits: Workspace, tmp_path: Path
) -> None:
    files = {}
    for name, colour in COLOURS.items():
        for n, size in enumerate(SIZES):
            array = np.broadcast_to(np.array(colour, dtype=np.uint8), (*size, 3))
            buffer = io.BytesIO()
            np.save(buffer, np.ascontiguousarray(array))
            files[f"arrays/{name}/{n}.npy"] = buffer.getvalue()
    root = tmp_path / "colours"
    manifest = dataset(
        root,
        {**files, "classes.txt": NAMES},
        {"format": "imagefolder", "names": "classes.txt"},
        data={"format": "npy-files", "path": "arrays"},
        samples=len(files),
    )
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    run = run_accuracy(digits, publish_model(digits, root, STEPS[1:]))
    assert (run["status"], run["top1"]) == ("succeeded", 1.0), run.get("error")


def test_a_second_run_reads_the_preprocessed_cache_not_the_files(
    digits: Workspace, tmp_path: Path
) -> None:
    root = tmp_path / "colours"
    manifest = dataset(
        root, {**photos(), "classes.txt": NAMES}, {"format": "imagefolder", "names": "classes.txt"}
    )
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    model = publish_model(digits, root)
    first = run_accuracy(digits, model)
    second = run_accuracy(digits, model)
    hits = [r["details"]["preprocess_cache_hit"] for r in (first, second)]
    assert hits == [False, True]
    assert second["top1"] == 1.0


def _without(files: dict[str, bytes], path: str) -> dict[str, bytes]:
    return {p: b for p, b in files.items() if p != path}


IMAGEFOLDER = {"format": "imagefolder", "names": "classes.txt"}
FIRST = "photos/blue/0.jpg"


# (what is wrong, files, labels, extra fields, what the error must say)
REFUSED_AT_PUBLISH: list[tuple[str, dict[str, bytes], dict[str, Any], dict[str, Any], str]] = [
    (
        "label file with fewer lines than samples",
        {**photos(), "labels.txt": b"0\n1\n2\n"},
        {"format": "class-index-txt", "path": "labels.txt"},
        {},
        "3 label lines for 9 samples",
    ),
    (
        "a file that is not an image, named .jpg",
        {**photos(), FIRST: b"this is not a JPEG", "classes.txt": NAMES},
        IMAGEFOLDER,
        {},
        f"file '{FIRST}': not a JPEG, PNG, WebP or BMP image",
    ),
    (
        "a stray file in the data folder",
        {**photos(), "photos/red/notes.txt": b"x", "classes.txt": NAMES},
        IMAGEFOLDER,
        {},
        "'photos/red/notes.txt' is under the data folder 'photos' but is not a images sample",
    ),
    (
        "a folder missing from the names file",
        {**photos(), "classes.txt": b"red\ngreen\n"},
        IMAGEFOLDER,
        {},
        "class 'blue' is not in the class-names file",
    ),
    (
        "a sample directly in the data folder",
        {**photos(), "photos/loose.png": _image((1, 2, 3), (4, 4), "PNG", 0)},
        {"format": "imagefolder"},
        {},
        "sample 'photos/loose.png' is directly in the data folder",
    ),
    (
        "csv naming a file that is not a sample",
        {**photos(), "labels.csv": b"file,label\nred/9.jpg,0\n"},
        {"format": "class-index-csv", "path": "labels.csv"},
        {},
        "row 2 names 'red/9.jpg', not a sample file of the data folder",
    ),
    (
        "a string label without a names file",
        {**photos(), "labels.txt": b"red\n" * 9},
        {"format": "class-index-txt", "path": "labels.txt"},
        {},
        "label 'red' is not a class index and the dataset has no class-names file",
    ),
    (
        "declared samples disagree",
        {**photos(), "classes.txt": NAMES},
        IMAGEFOLDER,
        {"samples": 10},
        "samples is 10 but the data folder 'photos' holds 9 sample files",
    ),
    (
        "class index beyond the declared classes",
        {**photos(), "labels.txt": b"0\n1\n2\n" * 2 + b"0\n1\n7\n"},
        {"format": "class-index-txt", "path": "labels.txt", "classes": 3},
        {},
        "class index 7 is out of range for 3 classes",
    ),
    (
        "a 16-bit PNG (8 bits would saturate it)",
        {**photos(), "photos/red/deep.png": _deep_png(), "classes.txt": NAMES},
        IMAGEFOLDER,
        {},
        "file 'photos/red/deep.png': mode I;16 (more than 8 bits per channel) is not read",
    ),
    (
        "a 16-bit RGB PNG (Pillow reads it as 8-bit RGB, each sample cut to its high byte)",
        {**photos(), "photos/red/deep.png": _png(16, 2, 3), "classes.txt": NAMES},
        IMAGEFOLDER,
        {},
        "file 'photos/red/deep.png': a 16-bit PNG (more than 8 bits per channel",
    ),
    (
        "a 16-bit RGBA PNG",
        {**photos(), "photos/red/deep.png": _png(16, 6, 4), "classes.txt": NAMES},
        IMAGEFOLDER,
        {},
        "file 'photos/red/deep.png': a 16-bit PNG (more than 8 bits per channel",
    ),
    (
        "a 16-bit grey and alpha PNG (Pillow reads it as RGBA)",
        {**photos(), "photos/red/deep.png": _png(16, 4, 2), "classes.txt": NAMES},
        IMAGEFOLDER,
        {},
        "file 'photos/red/deep.png': a 16-bit PNG (more than 8 bits per channel",
    ),
    (
        "a CMYK JPEG (converted to RGB without its colour profile)",
        {**photos(), "photos/red/ink.jpg": _cmyk_jpeg(), "classes.txt": NAMES},
        IMAGEFOLDER,
        {},
        "file 'photos/red/ink.jpg': mode CMYK is not read (only 1, L, LA, P, RGB, RGBA)",
    ),
    (
        "a csv header naming the label column twice (each reader picks one)",
        {**photos(), "labels.csv": _csv_labels("file,label,label", ",{label},{other}")},
        {"format": "class-index-csv", "path": "labels.csv"},
        {},
        "file 'labels.csv': line 1: the header names column 'label' more than once",
    ),
    (
        "a JSON line giving the label twice (json keeps the last, other readers the first)",
        {**photos(), "l.jsonl": _jsonl_labels_twice()},
        {"format": "class-index-jsonl", "path": "l.jsonl"},
        {},
        "file 'l.jsonl': line 1: key 'label' appears more than once in one object",
    ),
    (
        "a class index too large to hold",
        {**photos(), "labels.txt": b"0\n" * 8 + b"99999999999999999999\n"},
        {"format": "class-index-txt", "path": "labels.txt"},
        {},
        "line 9: class index 99999999999999999999 is too large",
    ),
    (
        "a label naming one class and reading as the index of another (decision 125)",
        {**photos(), "labels.txt": b"0\n" * 9, "classes.txt": b"1\n0\n"},
        {"format": "class-index-txt", "path": "labels.txt", "names": "classes.txt"},
        {},
        "line 1: label '0' is ambiguous: classes.txt names class 1 '0'",
    ),
    (
        "imagefolder without names, fewer folders than declared classes",
        photos(),
        {"format": "imagefolder", "classes": 4},
        {},
        "3 class folders but `classes` is 4",
    ),
    (
        "jsonl nested too deeply",
        {**photos(), "l.jsonl": b"[" * 100_000 + b"]" * 100_000 + b"\n"},
        {"format": "class-index-jsonl", "path": "l.jsonl"},
        {},
        "file 'l.jsonl': line 1 is not JSON",
    ),
    (
        "an .npy sample that is not an array",
        {"arrays/red/0.npy": b"garbage"},
        {"format": "imagefolder"},
        {"data": {"format": "npy-files", "path": "arrays"}},
        "file 'arrays/red/0.npy': not a readable .npy array",
    ),
    (
        "csv labels on an array dataset",
        {"x.npy": b"", "labels.csv": b"file,label\n"},
        {"format": "class-index-csv", "path": "labels.csv"},
        {"data": {"format": "npy", "path": "x.npy"}},
        "labels of format class-index-csv name sample files",
    ),
]


@pytest.mark.parametrize(
    ("files", "labels", "fields", "message"),
    [case[1:] for case in REFUSED_AT_PUBLISH],
    ids=[case[0] for case in REFUSED_AT_PUBLISH],
)
def test_a_dataset_that_cannot_be_run_is_refused_at_publish(
    cli: Cli,
    tmp_path: Path,
    files: dict[str, bytes],
    labels: dict[str, Any],
    fields: dict[str, Any],
    message: str,
) -> None:
    assert cli("init").code == 0
    root = tmp_path / "colours"
    refused = cli("publish", str(dump(root / "d.yaml", dataset(root, files, labels, **fields))))
    assert refused.code == 1
    assert message in refused.err
    assert "Traceback" not in refused.err
    assert cli("list", "dataset", "--json").out.strip() == "[]"
    assert not [p for p in (tmp_path / "home").rglob("*") if p.is_file() and "blobs" in p.parts]


def _truncated_jpeg() -> bytes:
    """Its header whole (publish reads headers only), its scan cut short."""
    whole = _image((30, 40, 210), (128, 128), "JPEG", 99)
    return whole[: len(whole) - 400]


RUN_FAILURES = [
    ("a truncated JPEG", {FIRST: _truncated_jpeg()}, STEPS, f"cannot decode {FIRST}"),
    ("no decode step", {}, STEPS[1:], "the input's steps must begin with a decode step"),
    (
        "sizes never made equal",
        {},
        [STEPS[0], {"normalize": {"scale": 1 / 255}}, {"layout": {"to": "NCHW"}}],
        "samples differ in shape after the steps",
    ),
]


@pytest.mark.parametrize(
    ("replace", "steps", "message"),
    [case[1:] for case in RUN_FAILURES],
    ids=[case[0] for case in RUN_FAILURES],
)
def test_a_sample_that_cannot_be_preprocessed_fails_the_run_naming_it(
    digits: Workspace,
    tmp_path: Path,
    replace: dict[str, bytes],
    steps: list[dict[str, Any]],
    message: str,
) -> None:
    root = tmp_path / "colours"
    manifest = dataset(root, {**photos(), **replace, "classes.txt": NAMES}, IMAGEFOLDER)
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    model = publish_model(digits, root, steps)
    request = {"model": model, "dataset": "colours@1.0.0", "scenario": {"mode": "accuracy"}}
    with pytest.raises(EvaluationFailed, match=message):
        run_lockfile(digits, service.lock(digits, parse_request(request))[0], say=quiet)
    (run,) = list_runs(digits)
    assert run["status"] == "failed" and message in run["error"]
    assert "top1" not in run


def test_a_decompression_bomb_is_refused_not_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pillow's own guard, made an error: an image of more than MAX_IMAGE_PIXELS pixels."""
    path = tmp_path / "big.png"
    path.write_bytes(_image((1, 2, 3), (64, 64), "PNG", 0))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 64 * 64 - 1)
    spec = parse_manifest(
        {
            "kind": "model",
            "name": "m",
            "version": "1.0.0",
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": "^1"},
            "files": [{"path": "m.onnx", "sha256": "0" * 64}],
            "inputs": [{"name": "image", "element_type": "float32", "steps": STEPS}],
        }
    )
    assert isinstance(spec, ModelManifest)
    with pytest.raises(PipelineError, match=r"cannot decode big\.png: Image size"):
        preprocess_files([("big.png", path)], "images", spec.inputs[0])


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("txt-index", "class-index-txt"),
        ("csv", "class-index-csv"),
        ("jsonl", "class-index-jsonl"),
        ("npy", "class-index-npy"),
    ],
)
def test_manifest_dataset_reads_the_labels_format_from_the_file(
    cli: Cli, tmp_path: Path, kind: str, expected: str
) -> None:
    images = photos()
    labels, extra = _label_files(kind, list(images))
    write_files(tmp_path, {**images, **extra})
    names = ["--names", str(tmp_path / "classes.txt")] if "names" in labels else []
    labels_file = str(tmp_path / labels["path"])
    out = tmp_path / "dataset.yaml"
    args = ["manifest", "dataset", str(tmp_path / "photos"), "--labels", labels_file, *names]
    written = cli(*args, "-o", str(out))
    assert written.code == 0, written.err
    assert yaml.safe_load(out.read_text())["labels"] == labels | {"format": expected}
    assert cli("init").code == 0
    assert cli("publish", str(out)).code == 0


# (what is wrong, files, extra arguments, what the error must say)
MANIFEST_REFUSALS = [
    (
        "a .jpg that is not an image",
        {**photos(), FIRST: b"not an image"},
        [],
        f"{FIRST}: not a JPEG, PNG, WebP or BMP image",
    ),
    (
        "fewer label lines than samples",
        {**photos(), "labels.txt": b"0\n1\n"},
        ["--labels", "labels.txt"],
        "labels.txt: 2 label lines for 9 samples",
    ),
    (
        "a folder missing from the names file",
        {**photos(), "classes.txt": b"red\n"},
        ["--names", "classes.txt"],
        "the class folders of photos: class 'blue' is not in the class-names file classes.txt",
    ),
    (
        "an unknown labels suffix",
        {**photos(), "l.xml": b""},
        ["--labels", "l.xml"],
        "labels files end in .tsv, .txt",
    ),
    ("no labels file", photos(), ["--labels", "nope.txt"], "nope.txt: no such file"),
    ("no samples", {"photos/readme.md": b"x"}, [], "holds no sample files"),
]


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [case[1:] for case in MANIFEST_REFUSALS],
    ids=[case[0] for case in MANIFEST_REFUSALS],
)
def test_manifest_dataset_refuses_what_publish_would_and_writes_nothing(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, bytes],
    args: list[str],
    message: str,
) -> None:
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    refused = cli("manifest", "dataset", "photos", *args, "-o", "dataset.yaml")
    assert refused.code == 1
    assert message in refused.err and "Traceback" not in refused.err
    assert not (tmp_path / "dataset.yaml").exists()


def test_a_model_scoring_another_number_of_classes_than_the_dataset_declares_is_refused(
    digits: Workspace, tmp_path: Path
) -> None:
    """Three scores against four declared classes: the indexes cannot mean the same classes
    (Open-NSFW's two scores on ImageNet photos would otherwise "succeed" with top-1 0)."""
    root = tmp_path / "colours"
    names = NAMES + b"violet\n"
    manifest = dataset(root, {**photos(), "classes.txt": names}, IMAGEFOLDER)
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    model = publish_model(digits, root)
    request = {"model": model, "dataset": "colours@1.0.0", "scenario": {"mode": "accuracy"}}
    with pytest.raises(ClassCountMismatch, match="scores 3 classes but dataset colours declares 4"):
        run_lockfile(digits, service.lock(digits, parse_request(request))[0], say=quiet)
    assert list_runs(digits)[0]["status"] == "failed"


def test_an_image_larger_than_a_sample_may_be_is_refused_at_publish(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read from the header (no pixel decoded): the cap is far below Pillow's bomb guard."""
    from pinbench.worker import image_files

    monkeypatch.setattr(image_files, "MAX_SAMPLE_PIXELS", 40 * 40)
    assert cli("init").code == 0
    root = tmp_path / "colours"
    files = {**photos(), "classes.txt": NAMES}
    refused = cli("publish", str(dump(root / "d.yaml", dataset(root, files, IMAGEFOLDER))))
    assert refused.code == 1
    assert "'photos/blue/2.jpg': 64x64 pixels, more than the 1600 a sample may have" in refused.err


def test_manifest_dataset_leaves_out_a_names_file_however_its_path_is_spelled(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path, {**photos(), "photos/classes.txt": NAMES})
    monkeypatch.chdir(tmp_path)
    names = str(tmp_path / "photos" / "classes.txt")  # absolute, the folder relative
    written = cli("manifest", "dataset", "photos", "--names", names, "-o", "dataset.yaml")
    assert written.code == 0, written.err
    labels = yaml.safe_load((tmp_path / "dataset.yaml").read_text())["labels"]
    assert labels == {"format": "imagefolder", "names": "photos/classes.txt"}


def _pillow(image: Image.Image, fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


def _palette_with_transparency() -> bytes:
    image = Image.new("P", (4, 4), 1)
    image.putpalette([0, 0, 0, 200, 30, 40] + [0] * 762)
    image.info["transparency"] = 1
    return _pillow(image)


# (the file, what it is, its first pixel decoded as RGB): every mode docs/authoring.md lists as read
READ: list[tuple[str, bytes, tuple[int, int, int]]] = [
    ("1-bit", _pillow(Image.new("1", (4, 4), 1)), (255, 255, 255)),
    ("4-bit grey PNG (scaled to 8 bits)", _png(4, 0, 1), (255, 255, 255)),
    ("8-bit grey", _pillow(Image.new("L", (4, 4), 90)), (90, 90, 90)),
    ("grey and alpha (alpha dropped)", _pillow(Image.new("LA", (4, 4), (90, 0))), (90, 90, 90)),
    ("palette", _pillow(Image.new("RGB", (4, 4), (200, 30, 40)).quantize(4)), (200, 30, 40)),
    ("palette with a transparent colour (dropped)", _palette_with_transparency(), (200, 30, 40)),
    ("RGBA (alpha dropped)", _pillow(Image.new("RGBA", (4, 4), (200, 30, 40, 0))), (200, 30, 40)),
    ("RGBA BMP", _pillow(Image.new("RGBA", (4, 4), (200, 30, 40, 9)), "BMP"), (200, 30, 40)),
    ("RGBA WebP", _pillow(Image.new("RGBA", (4, 4), (200, 30, 40, 9)), "WEBP"), (200, 30, 40)),
]


@pytest.mark.parametrize(("raw", "pixel"), [c[1:] for c in READ], ids=[c[0] for c in READ])
def test_every_documented_image_mode_decodes_to_its_pixels(
    tmp_path: Path, raw: bytes, pixel: tuple[int, int, int]
) -> None:
    from pinbench.registry.steps import Decode
    from pinbench.worker.image_files import decode_file, image_header

    path = tmp_path / "image"
    path.write_bytes(raw)
    image_header(path, name="image")  # publish reads it
    rgb = decode_file(path, Decode(color_mode="rgb"), name="image")
    assert rgb.dtype == np.uint8 and rgb.shape == (1, 4, 4, 3)
    assert tuple(int(v) for v in rgb[0, 0, 0]) == pytest.approx(pixel, abs=2)  # WebP is lossy
