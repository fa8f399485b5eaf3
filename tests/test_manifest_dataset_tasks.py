"""``pinbench manifest dataset`` for the tasks whose labels are not a class per sample: a
folder of segmentation masks (labels format ``masks``) and COCO JSON boxes (``coco-json``).
The task is the one that reads the labels; what publishing would refuse is refused here,
naming what is wrong, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image

from tests.helpers import Cli

SIZE = (6, 4)  # width, height
VALUES = {"a": 0, "b": 1, "c": 2}
"""Each sample's mask is filled with this class, but for one pixel of class 1."""


def _images(root: Path) -> Path:
    folder = root / "images"
    folder.mkdir(parents=True)
    for name in VALUES:
        Image.new("RGB", SIZE, (10, 20, 30)).save(folder / f"{name}.png")
    return folder


def _masks(root: Path, values: dict[str, int] = VALUES, mode: str = "L") -> Path:
    folder = root / "masks"
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in values.items():
        pixels = np.full((SIZE[1], SIZE[0]), value, dtype=np.uint8)
        pixels[0, 0] = 1
        Image.fromarray(pixels, "L").convert(mode).save(folder / f"{name}.png")
    return folder


def _coco(root: Path, images: list[str]) -> Path:
    path = root / "instances.json"
    gt = {
        "images": [
            {"id": i, "file_name": name, "width": SIZE[0], "height": SIZE[1]}
            for i, name in enumerate(images, 1)
        ],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2], "area": 4}
        ],
    }
    path.write_text(json.dumps(gt))
    return path


def _written(cli: Cli, root: Path, *args: str) -> tuple[dict[str, Any], str]:
    out = root / "dataset.yaml"
    done = cli("manifest", "dataset", str(root / "images"), *args, "-o", str(out))
    assert done.code == 0, done.err
    return yaml.safe_load(out.read_text()), done.err


@pytest.mark.parametrize(
    ("args", "labels", "noted"),
    [
        # classes from the mask values: one more than the largest, and the author is told
        ([], {"format": "masks", "path": "masks", "classes": 3}, "largest mask value (2)"),
        (["--classes", "5"], {"format": "masks", "path": "masks", "classes": 5}, None),
        # as many classes as the names file names (a class no mask holds is one still)
        (
            ["--names", "{root}/names.txt"],
            {"format": "masks", "path": "masks", "classes": 4, "names": "names.txt"},
            None,
        ),
    ],
)
def test_a_masks_folder_makes_a_segmentation_dataset(
    cli: Cli, tmp_path: Path, args: list[str], labels: dict[str, Any], noted: str | None
) -> None:
    _images(tmp_path)
    _masks(tmp_path)
    (tmp_path / "names.txt").write_text("sky\ntree\nroad\ncar\n")
    given = [a.format(root=tmp_path) for a in args]
    manifest, notes = _written(cli, tmp_path, "--labels", str(tmp_path / "masks"), *given)
    assert manifest["task"] == "segmentation"
    assert manifest["labels"] == labels
    assert manifest["samples"] == 3
    paths = {f["path"] for f in manifest["files"]}
    assert {f"masks/{n}.png" for n in VALUES} <= paths
    assert noted is None or noted in notes


def test_pascal_voc_borders_are_the_ignore_index_and_the_manifest_publishes(
    cli: Cli, tmp_path: Path
) -> None:
    _images(tmp_path)
    _masks(tmp_path, {"a": 0, "b": 255, "c": 2})
    masks = str(tmp_path / "masks")
    manifest, _ = _written(cli, tmp_path, "--labels", masks, "--ignore-index", "255")
    assert manifest["labels"] == {
        "format": "masks",
        "path": "masks",
        "classes": 3,  # 255 is no class
        "ignore_index": 255,
    }
    assert cli("init").code == 0
    published = cli("publish", str(tmp_path / "dataset.yaml"))
    assert published.code == 0, published.err


def test_a_file_index_lists_the_masks_with_their_samples(cli: Cli, tmp_path: Path) -> None:
    """A dataset too large to list in its manifest has as many masks as samples: both go in
    the file index, and the manifest publishes."""
    _images(tmp_path)
    _masks(tmp_path)
    index = tmp_path / "seg.files"
    manifest, _ = _written(
        cli, tmp_path, "--labels", str(tmp_path / "masks"), "--file-index", str(index)
    )
    assert manifest["files"] == []
    listed = [line.split()[-1] for line in index.read_text().splitlines()]
    assert listed == [f"images/{n}.png" for n in VALUES] + [f"masks/{n}.png" for n in VALUES]
    assert cli("init").code == 0
    published = cli("publish", str(tmp_path / "dataset.yaml"))
    assert published.code == 0, published.err


def test_coco_json_makes_a_detection_dataset_that_publishes(cli: Cli, tmp_path: Path) -> None:
    _images(tmp_path)
    _coco(tmp_path, [f"{n}.png" for n in VALUES])
    manifest, _ = _written(cli, tmp_path, "--labels", str(tmp_path / "instances.json"))
    assert manifest["task"] == "detection"
    assert manifest["labels"] == {"format": "coco-json", "path": "instances.json"}
    assert "instances.json" in {f["path"] for f in manifest["files"]}
    assert cli("init").code == 0
    published = cli("publish", str(tmp_path / "dataset.yaml"))
    assert published.code == 0, published.err


def _no_mask_for_c(root: Path) -> list[str]:
    _masks(root, {"a": 0, "b": 1})
    return ["--labels", str(root / "masks")]


def _mask_of_another_size(root: Path) -> list[str]:
    _masks(root)
    Image.new("L", (3, 3)).save(root / "masks" / "b.png")
    return ["--labels", str(root / "masks")]


def _value_past_classes(root: Path) -> list[str]:
    _masks(root)
    return ["--labels", str(root / "masks"), "--classes", "2"]


def _colour_masks(root: Path) -> list[str]:
    _masks(root, mode="RGB")
    return ["--labels", str(root / "masks")]


def _masks_in_the_data_folder(root: Path) -> list[str]:
    folder = _masks(root / "images")
    return ["--labels", str(folder)]


def _stray_file_among_masks(root: Path) -> list[str]:
    _masks(root)
    (root / "masks" / "notes.txt").write_text("not a mask")
    return ["--labels", str(root / "masks")]


def _only_ignored_pixels(root: Path) -> list[str]:
    folder = _masks(root)
    for name in VALUES:
        Image.new("L", SIZE, 255).save(folder / f"{name}.png")
    return ["--labels", str(folder), "--ignore-index", "255"]


def _masks_ending_in_upper_case_png(root: Path) -> list[str]:
    """(was: 'every pixel of every mask is the ignore_index None')"""
    folder = _masks(root)
    for name in VALUES:
        (folder / f"{name}.png").rename(folder / f"{name}.PNG")
    return ["--labels", str(folder)]


def _empty_masks_folder(root: Path) -> list[str]:
    (root / "masks").mkdir()
    return ["--labels", str(root / "masks")]


def _coco_missing_a_sample(root: Path) -> list[str]:
    return ["--labels", str(_coco(root, ["a.png", "b.png"]))]


def _coco_of_another_size(root: Path) -> list[str]:
    path = _coco(root, [f"{n}.png" for n in VALUES])
    gt = json.loads(path.read_text())
    gt["images"][1]["width"] = 99
    path.write_text(json.dumps(gt))
    return ["--labels", str(path)]


def _ignore_index_without_masks(root: Path) -> list[str]:
    return ["--labels", str(_coco(root, [f"{n}.png" for n in VALUES])), "--ignore-index", "255"]


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (_no_mask_for_c, ["has no mask", "masks/c.png"]),
        (_mask_of_another_size, ["masks/b.png", "3 x 3", "6 x 4"]),
        (_value_past_classes, ["masks/c.png", "not a class index (0..1"]),
        (_colour_masks, ["mode RGB", "single-channel"]),
        (_masks_in_the_data_folder, ["overlap"]),
        (_stray_file_among_masks, ["masks/notes.txt", "the mask of no sample file"]),
        (_only_ignored_pixels, ["ignore_index 255", "nothing to score"]),
        (_empty_masks_folder, ["holds no files"]),
        (_masks_ending_in_upper_case_png, ["holds no .png file (a.PNG, ...)", "masks/a/b.png"]),
        (_coco_missing_a_sample, ["instances.json", "c.png"]),
        (_coco_of_another_size, ["b.png", "99"]),
        (_ignore_index_without_masks, ["ignore_index", "masks"]),
    ],
)
def test_refused_as_publishing_would_refuse_it_and_nothing_written(
    cli: Cli, tmp_path: Path, make: Callable[[Path], list[str]], words: list[str]
) -> None:
    _images(tmp_path)
    args = make(tmp_path)
    out = tmp_path / "dataset.yaml"
    done = cli("manifest", "dataset", str(tmp_path / "images"), *args, "-o", str(out))
    assert done.code == 1, (done.out, done.err)
    assert "Traceback" not in done.err
    for word in words:
        assert word in done.err, done.err
    assert not out.exists()
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_folder_of_any_files_is_written_with_format_files_and_publishes(
    cli: Cli, tmp_path: Path
) -> None:
    """A user trial's finding: a folder of raw files (magika's kind: source code, Markdown,
    archives) could not be written by ``manifest dataset`` (its suffixes are no sample format),
    only by hand. ``--format files`` makes every file a sample (a hidden one left out, said),
    in path order, and publishes; the manifest is never written inside the folder;
    without it the folder is refused as before, and ``--format`` on a file is refused."""
    root = tmp_path / "raw"
    for name, body in {
        "a.py": b"print(1)\n",
        "b.md": b"# title\n",
        "c/d.gz": b"\x1f\x8b\x08",
        ".DS_Store": b"x",  # hidden: no sample
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(body)
    labels = tmp_path / "labels.csv"
    labels.write_text("file,label\na.py,python\nb.md,markdown\nc/d.gz,gzip\n")
    names = tmp_path / "names.txt"
    names.write_text("python\nmarkdown\ngzip\n")
    out = tmp_path / "raw.yaml"
    args = ("manifest", "dataset", str(root), "--labels", str(labels), "--names", str(names))
    refused = cli(*args, "-o", str(out))
    assert refused.code == 1 and "holds no sample files" in refused.err and not out.exists()
    made = cli(*args, "--format", "files", "-o", str(out))
    assert made.code == 0, made.err
    manifest = yaml.safe_load(out.read_text())
    assert manifest["data"] == {"format": "files", "path": "raw"} and manifest["samples"] == 3
    assert "left out 1 hidden file(s)" in made.out + made.err
    inside = cli(*args, "--format", "files", "-o", str(root / "raw.yaml"))
    assert inside.code == 1 and "outside the data folder" in inside.err
    assert not (root / "raw.yaml").exists()
    assert cli("init").code == 0
    published = cli("publish", str(out))
    assert published.code == 0, published.err
    on_file = cli("manifest", "dataset", str(labels), "--format", "files")
    assert on_file.code == 1 and "names a folder's format" in on_file.err


# ---------------------------------------- a labels file that is not class indices: its format


def _wavs(root: Path, count: int) -> list[str]:
    import wave

    folder = root / "audio"
    folder.mkdir(parents=True)
    names = [f"{chr(ord('a') + i)}.wav" for i in range(count)]
    for name in names:
        with wave.open(str(folder / name), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(8000)
            w.writeframes(np.zeros(80, np.int16).tobytes())
    return names


def _trials(root: Path) -> tuple[str, Path]:
    names = _wavs(root, 9)  # 36 trials over 9 files, as VoxCeleb's lists pair them
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    lines = [f"{i % 2} {a} {b}" for i, (a, b) in enumerate(pairs)]
    (root / "trials.txt").write_text("\n".join(lines) + "\n")
    return "audio", root / "trials.txt"


def _transcripts(root: Path) -> tuple[str, Path]:
    _wavs(root, 3)
    (root / "transcripts.txt").write_text("a high tone\na low tone\nsilence\n")
    return "audio", root / "transcripts.txt"


def _transcripts_csv(root: Path) -> tuple[str, Path]:
    _wavs(root, 3)
    rows = ["file,text", "a.wav,a high tone", "b.wav,a low tone", "c.wav,silence"]
    (root / "transcripts.csv").write_text("\n".join(rows) + "\n")
    return "audio", root / "transcripts.csv"


def _image_texts(root: Path) -> tuple[str, Path]:
    _images(root)
    (root / "texts.txt").write_text("STOP\nEXIT 12\nNO ENTRY\n")
    return "images", root / "texts.txt"


def _indices_miscounted(root: Path) -> tuple[str, Path]:
    _images(root)
    (root / "labels.txt").write_text("0\n1\n2\n1\n")
    return "images", root / "labels.txt"


@pytest.mark.parametrize(
    ("make", "refused", "guessed"),
    [
        (_trials, "36 label lines for 9 samples", "speaker-trials"),
        (_transcripts, "label 'a high tone' is not a class index", "transcript-txt"),
        (_transcripts_csv, "the first row must name the columns file and label", "transcript-csv"),
        (_image_texts, "label 'STOP' is not a class index", "text-txt"),
        (_indices_miscounted, "4 label lines for 3 samples", None),  # class indices: no guess
    ],
)
def test_a_labels_file_refused_as_class_indices_suggests_the_format_it_looks_like(
    cli: Cli, tmp_path: Path, make: Callable[[Path], tuple[str, Path]], refused: str,
    guessed: str | None,
) -> None:  # fmt: skip
    """Issue 83, item 3d: the refusal of a labels file read by its suffix's default (class
    indices) names the format its content looks like, and that format then writes it."""
    folder, labels = make(tmp_path)
    args = ["manifest", "dataset", str(tmp_path / folder), "--labels", str(labels)]
    done = cli(*args, "-o", str(tmp_path / "d.yaml"))
    assert done.code == 1 and refused in done.err, done.err
    if guessed is None:
        assert "--labels-format" not in done.err
        return
    assert f"looks like {guessed}, not class-index-" in done.err
    assert f"give --labels-format {guessed}" in done.err
    taken = cli(*args, "--labels-format", guessed, "-o", str(tmp_path / "d.yaml"))
    assert taken.code == 0, taken.err


def test_a_labels_file_whose_head_cuts_a_character_is_still_guessed(tmp_path: Path) -> None:
    """The guess reads the file's first MiB: a two-byte character that read cuts in half is
    left out, not taken as a file that is no text (there was no suggestion then)."""
    from pinbench.tasks.label_guess import HEAD_BYTES, guess_label_format

    line = "a high tone é\n".encode()  # 15 bytes, the é two of them
    count = HEAD_BYTES // len(line) + 1
    path = tmp_path / "texts.txt"
    path.write_bytes(b"ok\n" + line * count)
    assert (HEAD_BYTES - 3) % len(line) == 13  # the read ends after é's first byte
    assert guess_label_format(path, declared="class-index-txt", data_format="images") == "text-txt"
