"""Semantic segmentation accuracy runs: a dataset of images and one mask PNG per image, a model
output read into one class per pixel, mapped back onto the original image through the input's
geometry, and scored with mIoU and pixel accuracy over the whole dataset.

The metrics are checked against a 4x4 example computed by hand; the geometry against
letterbox, longest-side (max_dimension), crop and coarser-grid mappings whose exact answer is
known; publishing refuses masks that do not make the dataset (and stores nothing); and end to
end, ONNX models built here (the red channel thresholded into class 1, as logits or as a
probability) run through ``pinbench`` on PNG images drawn here score exactly what NumPy computes
from the masks.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import onnx
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper
from PIL import Image
from sqlalchemy import func, select

from pinbench.catalog import frameworks
from pinbench.db.models import Artifact
from pinbench.errors import UserError
from pinbench.evaluator.verdicts.verdict import accuracy_verdict
from pinbench.registry.dataset_layout import mask_path
from pinbench.registry.manifest import load_manifest
from pinbench.registry.ports import Segmentation
from pinbench.registry.publish import publish
from pinbench.reports.charts import accuracy_points
from pinbench.reports.data import Report, RunData
from pinbench.tasks.detection.boxes import Crop, Letterbox, MaxDimension, transform_of
from pinbench.tasks.segmentation.classes import class_maps
from pinbench.tasks.segmentation.errors import BadSegmentationOutput
from pinbench.tasks.segmentation.geometry import NO_CLASS, check_grid, to_original
from pinbench.tasks.segmentation.masks import read_mask
from pinbench.tasks.segmentation.metrics import Confusion
from pinbench.worker.labels import LabelProblem
from pinbench.workspace import Workspace
from tests.helpers import Cli, dump, onnx_image_model, write_files

IntMap = npt.NDArray[np.int32]

# --- metrics --------------------------------------------------------------------------------

TRUTH_4X4 = [
    [0, 0, 1, 1],
    [0, 0, 1, 1],
    [2, 2, 255, 1],
    [2, 2, 2, 1],
]
PREDICTED_4X4 = [
    [0, 0, 1, 1],
    [0, 1, 1, 1],  # (1, 1): a 0 read as 1
    [2, 2, 0, 1],  # (2, 2): ignored, whatever is predicted
    [0, 2, 2, 2],  # (3, 0): a 2 read as 0; (3, 3): a 1 read as 2
]


def test_miou_and_pixel_accuracy_of_a_4x4_example_computed_by_hand() -> None:
    confusion = Confusion(classes=4, ignore_index=255)
    confusion.add(np.array(TRUTH_4X4), np.array(PREDICTED_4X4))
    # class 0: truth 4 pixels, predicted 4 (the ignored one does not count), 3 shared -> 3/5
    # class 1: truth 6, predicted 6, 5 shared -> 5/7; class 2: truth 5, predicted 5, 4 -> 4/6
    # class 3: in no truth and never predicted: no IoU, left out of the mean
    assert confusion.ious() == pytest.approx([3 / 5, 5 / 7, 4 / 6, None])
    assert confusion.counted == 15
    assert confusion.metrics() == pytest.approx(
        {"miou": (3 / 5 + 5 / 7 + 4 / 6) / 3, "pixel_accuracy": 12 / 15}
    )


def test_the_confusion_is_summed_over_the_dataset_not_averaged_per_image() -> None:
    confusion = Confusion(classes=2)
    confusion.add(np.array([[1, 1, 1, 1]]), np.array([[1, 1, 1, 0]]))  # class 1 IoU 3/4
    confusion.add(np.array([[1, 0]]), np.array([[0, 0]]))  # class 1 IoU 0
    # summed: class 1: 3 shared of a union of 5; class 0: 1 shared of a union of 3
    assert confusion.ious() == pytest.approx([1 / 3, 3 / 5])


def test_a_class_only_predicted_and_pixels_the_model_never_saw_count_as_wrong() -> None:
    confusion = Confusion(classes=3)
    confusion.add(np.array([[0, 0, 1, 1]]), np.array([[0, 2, 1, NO_CLASS]]))
    # class 2 is in no truth but predicted once: IoU 0, and it is in the mean
    assert confusion.ious() == pytest.approx([1 / 2, 1 / 2, 0.0])
    assert confusion.metrics()["pixel_accuracy"] == pytest.approx(2 / 4)


def test_miou_and_pixel_accuracy_equal_torchmetrics_jaccard_index_not_mean_iou() -> None:
    """The reference the docs name: torchmetrics' ``JaccardIndex`` (multiclass, macro, classes
    with an empty union left out) over the dataset's pixels, with the ignored label, and
    ``MulticlassAccuracy`` (micro). Its ``segmentation.MeanIoU`` averages per-image IoUs,
    which is another number; the docs once named it."""
    import torch
    from torchmetrics.classification import JaccardIndex, MulticlassAccuracy
    from torchmetrics.segmentation import MeanIoU

    from pinbench.tasks.segmentation import metrics

    rng = np.random.default_rng(95)
    classes, ignored = 5, 255
    confusion = Confusion(classes=classes, ignore_index=ignored)
    jaccard = JaccardIndex(
        task="multiclass", num_classes=classes, average="macro", ignore_index=ignored
    )
    accuracy = MulticlassAccuracy(num_classes=classes, average="micro", ignore_index=ignored)
    per_image = MeanIoU(num_classes=classes, input_format="index")  # it has no ignore_index:
    every_pixel = Confusion(classes=classes)  # compared on the same pixels, none ignored
    image_mious: list[float] = []
    for _ in range(6):  # images of different sizes; class 4 in no truth and never predicted
        shape = tuple(int(d) for d in rng.integers(5, 17, size=2))
        truth = rng.integers(0, 4, size=shape)
        predicted = np.where(rng.random(shape) < 0.6, truth, rng.integers(0, 4, size=shape))
        per_image.update(torch.from_numpy(predicted)[None], torch.from_numpy(truth)[None])
        every_pixel.add(truth, predicted)
        one = Confusion(classes=classes)
        one.add(truth, predicted)
        image_mious.append(one.metrics()["miou"])
        truth[rng.random(shape) < 0.1] = ignored
        confusion.add(truth, predicted)
        jaccard.update(torch.from_numpy(predicted), torch.from_numpy(truth))
        accuracy.update(torch.from_numpy(predicted), torch.from_numpy(truth))
    found = confusion.metrics()
    assert confusion.ious()[4] is None  # left out of the mean, as JaccardIndex leaves it
    assert found["miou"] == pytest.approx(float(jaccard.compute()), abs=1e-6)  # its float32
    assert found["pixel_accuracy"] == pytest.approx(float(accuracy.compute()), abs=1e-6)
    assert float(per_image.compute()) == pytest.approx(np.mean(image_mious), abs=1e-6)
    assert abs(every_pixel.metrics()["miou"] - float(per_image.compute())) > 0.02
    assert "``JaccardIndex``" in str(metrics.__doc__) and "MeanIoU" not in str(metrics.__doc__)


# --- reading an output into classes ----------------------------------------------------------


def test_logits_are_read_by_argmax_on_their_class_axis() -> None:
    nchw = np.zeros((1, 3, 2, 2), dtype=np.float32)
    nchw[0, 2, 0, 1] = 5.0
    nchw[0, 1, 1, 0] = 1.0
    expected = [[[0, 2], [1, 0]]]  # a tie (all zero) goes to the lowest class
    assert class_maps(nchw, Segmentation(form="logits"), "out", classes=3).tolist() == expected
    nhwc = np.moveaxis(nchw, 1, -1)
    section = Segmentation(form="logits", layout="NHWC")
    assert class_maps(nhwc, section, "out", classes=3).tolist() == expected


def test_a_probability_map_is_class_one_at_or_above_the_threshold() -> None:
    scores = np.array([[[[0.2, 0.7], [0.7000001, 0.9]]]], dtype=np.float32)  # (1, 1, 2, 2)
    section = Segmentation(form="probability", threshold=0.7)
    assert class_maps(scores, section, "p", classes=2).tolist() == [[[0, 1], [1, 1]]]


# (case, form, the output): NumPy's argmax took a NaN logit as the largest and a NaN
# probability met no threshold, so the pixel got a class the model never gave
NOT_FINITE = [
    ("a NaN logit", "logits", [[[[0.0, 1.0]], [[np.nan, 0.0]]]], (1, 0, 0)),
    ("an infinite logit", "logits", [[[[0.0, 1.0]], [[0.0, -np.inf]]]], (1, 0, 1)),
    ("a NaN probability", "probability", [[[0.2, np.nan]]], (0, 1)),
]


@pytest.mark.parametrize(
    ("form", "values", "where"), [c[1:] for c in NOT_FINITE], ids=[c[0] for c in NOT_FINITE]
)
def test_scores_that_are_not_finite_numbers_are_refused(
    form: Literal["logits", "probability"], values: list[Any], where: tuple[int, ...]
) -> None:
    output = np.array(values, dtype=np.float32)
    with pytest.raises(BadSegmentationOutput) as info:
        class_maps(output, Segmentation(form=form), "out", classes=2, samples=["b.png"])
    value = float(output[(0, *where)])
    assert f"sample b.png has {value!r} at {list(where)}" in str(info.value)
    assert "mIoU and pixel accuracy, are undefined" in str(info.value)


CLASS_MAP_REFUSALS = [
    ("a class index the dataset does not have", [[3.0, 0.0]], "sample b.png has class 3.0"),
    ("a fraction", [[1.5, 0.0]], "has class 1.5 at (row 0, column 0)"),
    ("a negative class", [[0.0, -1.0]], "has class -1.0 at (row 0, column 1)"),
]


@pytest.mark.parametrize(
    ("values", "message"),
    [c[1:] for c in CLASS_MAP_REFUSALS],
    ids=[c[0] for c in CLASS_MAP_REFUSALS],
)
def test_a_classes_map_must_hold_class_indexes(values: list[list[float]], message: str) -> None:
    output = np.array([values], dtype=np.float32)
    with pytest.raises(BadSegmentationOutput) as info:
        class_maps(output, Segmentation(form="classes"), "out", classes=3, samples=["b.png"])
    assert message in str(info.value) and "whole numbers 0..2" in str(info.value)


# --- geometry ---------------------------------------------------------------------------------

WIDTH, HEIGHT = 96, 64
RECTS = [  # class, (x0, y0, x1, y1) on the original image: edges on multiples of 8
    (1, (16, 8, 48, 40)),
    (2, (56, 24, 88, 56)),
]


def original_map() -> IntMap:
    out = np.zeros((HEIGHT, WIDTH), dtype=np.int32)
    for cls, (x0, y0, x1, y1) in RECTS:
        out[y0:y1, x0:x1] = cls
    return out


def model_grid(scale: float, top: int, left: int, size: tuple[int, int]) -> IntMap:
    """The class map a perfect model would give on its input grid: the rectangles scaled by
    ``scale`` and shifted by the padding (hand-computed geometry, not ``Transform``)."""
    out = np.zeros(size, dtype=np.int32)
    for cls, (x0, y0, x1, y1) in RECTS:
        out[
            round(y0 * scale) + top : round(y1 * scale) + top,
            round(x0 * scale) + left : round(x1 * scale) + left,
        ] = cls
    return out


GEOMETRIES = [
    # 96x64 letterboxed into 48x48: scale 1/2 -> 48x32, 8 rows of padding above and below
    ("letterbox", [Letterbox((48, 48))], model_grid(0.5, 8, 0, (48, 48))),
    # the longer side to 48: 48x32, no padding
    ("max_dimension", [MaxDimension(48)], model_grid(0.5, 0, 0, (32, 48))),
    # a stride-2 head on the letterboxed input: a 24x24 grid over the 48x48 input
    ("a coarser grid", [Letterbox((48, 48))], model_grid(0.25, 4, 0, (24, 24))),
    # upscaled: the longer side to 192, each original pixel four grid cells
    ("an upscale", [MaxDimension(192)], model_grid(2.0, 0, 0, (128, 192))),
]


@pytest.mark.parametrize(
    ("steps", "grid"), [g[1:] for g in GEOMETRIES], ids=[g[0] for g in GEOMETRIES]
)
def test_a_perfect_map_on_the_model_input_maps_back_onto_the_original_exactly(
    steps: list[Letterbox | MaxDimension], grid: IntMap
) -> None:
    transform = transform_of(WIDTH, HEIGHT, steps)
    check_grid(
        (grid.shape[0], grid.shape[1]),
        (transform.input_height, transform.input_width),
        output="o",
        shape=grid.shape,
    )
    back = to_original(grid, transform)
    np.testing.assert_array_equal(back, original_map())
    confusion = Confusion(classes=3)
    confusion.add(original_map(), back)
    assert confusion.metrics() == {"miou": 1.0, "pixel_accuracy": 1.0}


def test_pixels_a_crop_cut_away_have_no_class_and_count_as_wrong() -> None:
    transform = transform_of(WIDTH, HEIGHT, [Crop((64, 64))])  # columns 16..79 kept
    grid = original_map()[:, 16:80]
    back = to_original(grid, transform)
    assert (back[:, :16] == NO_CLASS).all() and (back[:, 80:] == NO_CLASS).all()
    np.testing.assert_array_equal(back[:, 16:80], grid)
    confusion = Confusion(classes=3)
    confusion.add(original_map(), back)
    assert confusion.metrics()["pixel_accuracy"] == pytest.approx(64 / 96)


def test_a_grid_that_does_not_cover_the_input_at_one_scale_is_refused() -> None:
    with pytest.raises(BadSegmentationOutput, match="does not cover the 32 x 48 model input"):
        check_grid((48, 32), (32, 48), output="o", shape=(1, 2, 48, 32))  # transposed
    check_grid((65, 65), (513, 513), output="o", shape=(1, 2, 65, 65))  # a stride-8 head


def test_a_mask_is_the_sample_path_under_the_masks_folder_as_png() -> None:
    assert mask_path("photos/a/b.jpg", "photos", "masks") == "masks/a/b.png"
    assert mask_path("photos/c.JPEG", "photos", "labels/masks") == "labels/masks/c.png"
    assert mask_path("c.png", ".", "masks") == "masks/c.png"


# --- datasets: files drawn here -------------------------------------------------------------

CLASSES = 2
IGNORE = 255
# each image: red rectangles (the model's class 1), and one blue one the masks also call 1
SCENES: dict[str, dict[str, list[tuple[int, int, int, int]]]] = {
    "a.png": {"red": [(16, 8, 48, 40)], "blue": [(56, 24, 88, 56)]},
    "sub/b.png": {"red": [(0, 0, 32, 16), (64, 32, 96, 64)], "blue": []},
    "c.jpg": {"red": [], "blue": [(8, 40, 24, 56)]},
}
IGNORED_ROWS = slice(60, 64)
"""Mask rows set to ``IGNORE`` in every image (a border no metric counts)."""


def png(pixels: npt.NDArray[np.uint8], mode: str | None = None) -> bytes:
    buf = io.BytesIO()
    image = Image.fromarray(np.ascontiguousarray(pixels))
    if mode is not None:
        image = image.convert(mode)
    image.save(buf, format="PNG")
    return buf.getvalue()


def scene_image(scene: dict[str, list[tuple[int, int, int, int]]]) -> npt.NDArray[np.uint8]:
    pixels = np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
    for colour, channel in (("red", 0), ("blue", 2)):
        for x0, y0, x1, y1 in scene[colour]:
            pixels[y0:y1, x0:x1, channel] = 255
    return pixels


def scene_mask(scene: dict[str, list[tuple[int, int, int, int]]]) -> npt.NDArray[np.uint8]:
    mask = np.zeros((HEIGHT, WIDTH), dtype=np.uint8)
    for x0, y0, x1, y1 in scene["red"] + scene["blue"]:
        mask[y0:y1, x0:x1] = 1
    mask[IGNORED_ROWS] = IGNORE
    return mask


def sample_bytes(name: str) -> bytes:
    pixels = scene_image(SCENES[name])
    if name.endswith(".jpg"):  # a flat-coloured JPEG at top quality decodes within a step
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="JPEG", quality=100, subsampling=0)
        return buf.getvalue()
    return png(pixels)


def dataset_files() -> dict[str, bytes]:
    files = {f"photos/{name}": sample_bytes(name) for name in SCENES}
    for name, scene in SCENES.items():
        files[mask_path(f"photos/{name}", "photos", "masks")] = png(scene_mask(scene), "P")
    files["names.txt"] = b"background\nthing\n"
    return files


def dataset_yaml(
    root: Path,
    version: str = "1.0.0",
    change: Callable[[dict[str, bytes]], None] | None = None,
    labels: dict[str, Any] | None = None,
) -> Path:
    files = dataset_files()
    if change is not None:
        change(files)
    folder = f"shapes-{version}"
    entries = write_files(root / folder, files)
    data = {
        "kind": "dataset",
        "name": "test/shapes",
        "version": version,
        "task": "segmentation",
        "files": [{**f, "source": f"file:{folder}/{f['path']}"} for f in entries],
        "data": {"format": "images", "path": "photos"},
        "labels": {
            key: value
            for key, value in {
                "format": "masks",
                "path": "masks",
                "classes": CLASSES,
                "ignore_index": IGNORE,
                "names": "names.txt",
                **(labels or {}),
            }.items()
            if value is not None  # None: leave the field out
        },
    }
    return dump(root / f"dataset-shapes-{version}.yaml", data)


def expected_metrics(predicted: Callable[[dict[str, Any]], npt.NDArray[np.bool_]]) -> list[float]:
    """miou and pixel accuracy computed directly with NumPy from the masks and each image's
    predicted class-1 pixels."""
    hits = np.zeros(CLASSES)
    union = np.zeros(CLASSES)
    correct = counted = 0
    for scene in SCENES.values():
        truth = scene_mask(scene).astype(np.int64)
        pred = predicted(scene).astype(np.int64)
        keep = truth != IGNORE
        t, p = truth[keep], pred[keep]
        correct += int((t == p).sum())
        counted += t.size
        for c in range(CLASSES):
            hits[c] += ((t == c) & (p == c)).sum()
            union[c] += ((t == c) | (p == c)).sum()
    return [float(np.mean(hits / union)), correct / counted]


def red(scene: dict[str, Any]) -> npt.NDArray[np.bool_]:
    return scene_image(scene)[..., 0] >= 128


# --- mask files -----------------------------------------------------------------------------


def _palette_png(values: npt.NDArray[np.uint8]) -> bytes:
    image = Image.fromarray(values, mode="L").convert("P")  # identity palette indexes
    image.putpalette([0, 0, 0, 128, 0, 0, 0, 128, 0] + [255, 255, 255] * 253)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


VALUES = np.array([[0, 1, 2], [255, 1, 0]], dtype=np.uint8)
MASK_MODES = [
    ("8-bit grayscale (L)", png(VALUES, "L"), VALUES),
    ("palette (P): the index, not the colour", _palette_png(VALUES), VALUES),
    (
        "16-bit grayscale, for more than 256 classes",
        png(np.array([[300, 0, 65535]], dtype=np.uint16)),
        np.array([[300, 0, 65535]]),
    ),
    ("1-bit", png(np.array([[0, 255]], dtype=np.uint8), "1"), np.array([[0, 1]])),
]


@pytest.mark.parametrize(
    ("data", "values"), [m[1:] for m in MASK_MODES], ids=[m[0] for m in MASK_MODES]
)
def test_single_channel_masks_are_read_as_their_values(
    tmp_path: Path, data: bytes, values: npt.NDArray[np.integer]
) -> None:
    path = tmp_path / "m.png"
    path.write_bytes(data)
    np.testing.assert_array_equal(read_mask(path, where="masks/m.png"), values)


def test_a_mask_larger_than_a_sample_may_be_is_refused_before_it_is_decoded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "huge.png"
    Image.new("1", (8000, 6000)).save(path, format="PNG")  # 48 million pixels, a few KiB
    with pytest.raises(LabelProblem, match=r"masks/huge\.png: 8000x6000 pixels, more than the"):
        read_mask(path, where="masks/huge.png")


# --- publishing -----------------------------------------------------------------------------


def _drop(path: str) -> Callable[[dict[str, bytes]], None]:
    def change(files: dict[str, bytes]) -> None:
        del files[path]

    return change


def _add(path: str, data: bytes) -> Callable[[dict[str, bytes]], None]:
    def change(files: dict[str, bytes]) -> None:
        files[path] = data

    return change


def _unchanged(files: dict[str, bytes]) -> None:
    pass


def _mask(
    name: str, pixels: npt.NDArray[np.uint8], mode: str | None = None
) -> Callable[[dict[str, bytes]], None]:
    return _add(f"masks/{name}", png(pixels, mode))


def _bad_value(files: dict[str, bytes]) -> None:
    mask = scene_mask(SCENES["a.png"])
    mask[3, 5] = 2  # classes is 2: values 0, 1 or 255
    files["masks/a.png"] = png(mask, "L")


def _all_ignored(files: dict[str, bytes]) -> None:
    for name, scene in SCENES.items():
        files[mask_path(f"photos/{name}", "photos", "masks")] = png(
            np.full_like(scene_mask(scene), IGNORE), "L"
        )


BAD_DATASETS: list[tuple[str, Any, dict[str, Any], str]] = [
    (
        "every pixel the ignore_index (mIoU and pixel accuracy undefined)",
        _all_ignored,
        {},
        "every pixel of every mask is the ignore_index 255",
    ),
    ("a sample without its mask", _drop("masks/sub/b.png"), {}, "'photos/sub/b.png' has no mask"),
    (
        "a file in the masks folder that is no sample's mask",
        _mask("d.png", scene_mask(SCENES["a.png"])),
        {},
        "file 'masks/d.png' is under the masks folder 'masks' but is the mask of no sample",
    ),
    (
        "a mask of another size than its image",
        _mask("a.png", scene_mask(SCENES["a.png"])[:, :95]),
        {},
        "'masks/a.png': the mask is 95 x 64 but its sample image is 96 x 64",
    ),
    (
        "a value that is no class and not the ignore_index",
        _bad_value,
        {},
        "pixel (row 3, column 5) is 2, not a class index (0..1 or the ignore_index 255",
    ),
    (
        "an RGB mask",
        _mask("a.png", scene_image(SCENES["a.png"])),
        {},
        "mode RGB is not a single-channel mask",
    ),
    (
        "a mask that is not a PNG",
        _add("masks/a.png", b"\xff\xd8 not a png"),
        {},
        "'masks/a.png': not a PNG image",
    ),
    (
        "ignored pixels without an ignore_index",
        _unchanged,
        {"ignore_index": None},
        "is 255, not a class index (0..1;",
    ),
    (
        "the masks folder inside the data folder",
        _unchanged,
        {"path": "photos/masks"},
        "the masks folder 'photos/masks' and the data folder 'photos' overlap",
    ),
    (
        "an ignore_index that is a class index",
        _unchanged,
        {"ignore_index": 1},
        "labels.ignore_index must be between 2 and 65535, got 1",
    ),
    (
        "a names file that does not name every class",
        _add("names.txt", b"background\n"),
        {},
        "'names.txt': names 1 classes, the masks index 2",
    ),
]


def _rows(ws: Workspace) -> int:
    with ws.transaction() as s:
        return s.scalar(select(func.count()).select_from(Artifact)) or 0


@pytest.mark.parametrize(
    ("change", "labels", "message"),
    [c[1:] for c in BAD_DATASETS],
    ids=[c[0] for c in BAD_DATASETS],
)
def test_masks_that_do_not_make_the_dataset_are_refused_and_nothing_is_stored(
    ws: Workspace,
    tmp_path: Path,
    change: Callable[[dict[str, bytes]], None],
    labels: dict[str, Any],
    message: str,
) -> None:
    path = dataset_yaml(tmp_path, change=change, labels=labels)
    with pytest.raises(UserError) as info:  # the manifest's layout, or the files' content
        publish(ws, load_manifest(path), manifest_dir=tmp_path, publisher="test")
    assert message in str(info.value)
    assert _rows(ws) == 0 and list(ws.store.iter_digests()) == []


def test_a_well_formed_segmentation_dataset_publishes(ws: Workspace, tmp_path: Path) -> None:
    path = dataset_yaml(tmp_path)
    result = publish(ws, load_manifest(path), manifest_dir=tmp_path, publisher="test")
    assert result.created and result.files == len(dataset_files())


# --- end to end -----------------------------------------------------------------------------


def red_model(form: str, *, pool: int = 1, batch_mean: bool = False) -> bytes:
    """An ONNX model over an NCHW float input in 0..1: a 1x1 convolution reading the red
    channel, as two-class logits ``(0.5 - r, r - 0.5)`` or a probability ``r``; ``pool``
    averages the grid down by that factor (a coarser head); ``batch_mean`` averages over the
    batch (one map per batch: a broken export)."""
    if form == "logits":
        weight = np.array([[-1, 0, 0], [1, 0, 0]], dtype=np.float32).reshape(2, 3, 1, 1)
        bias = np.array([0.5, -0.5], dtype=np.float32)
    else:
        weight = np.array([[1, 0, 0]], dtype=np.float32).reshape(1, 3, 1, 1)
        bias = np.array([0.0], dtype=np.float32)
    conv_out = "scores" if pool == 1 and not batch_mean else "full"
    nodes = [helper.make_node("Conv", ["image", "w", "b"], [conv_out])]
    if batch_mean:
        nodes.append(helper.make_node("ReduceMean", ["full"], ["scores"], axes=[0], keepdims=1))
    if pool > 1:
        nodes.append(
            helper.make_node(
                "AveragePool", ["full"], ["scores"], kernel_shape=[pool, pool], strides=[pool, pool]
            )
        )
    graph = helper.make_graph(
        nodes,
        "red-threshold",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [None, 3, None, None])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, len(bias), None, None])],
        initializer=[numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def model_yaml(
    root: Path,
    name: str,
    form: str,
    resize: dict[str, Any],
    *,
    pool: int = 1,
    labels: bytes | None = None,
    batch_mean: bool = False,
) -> Path:
    sources = {"model.onnx": red_model(form, pool=pool, batch_mean=batch_mean)}
    if labels is not None:
        sources["labels.txt"] = labels
    files = write_files(root / name, sources)
    output: dict[str, Any] = {
        "name": "scores",
        "type": "segmentation",
        "segmentation": {"form": form},
    }
    if labels is not None:
        output["labels"] = {"path": "labels.txt"}
    data = onnx_image_model(
        name,
        files,
        [
            {"decode": {"color_mode": "rgb"}},
            resize,
            {"normalize": {"scale": 1 / 255}},
            {"layout": {"to": "NCHW"}},
        ],
        [output],
    )
    return dump(root / f"model-{name}.yaml", data)


def run(
    cli: Cli, tmp_path: Path, model: str, dataset: str = "test/shapes@1.0.0", batch_size: int = 1
) -> dict[str, Any]:
    request = tmp_path / f"{model.replace('/', '-')}.yaml"
    request.write_text(
        yaml.safe_dump(
            {
                "model": f"{model}@1",
                "dataset": dataset,
                "scenario": {"mode": "accuracy"},
                "batch_size": batch_size,
            }
        )
    )
    lock = request.with_suffix(".lock")
    locked = cli("lock", str(request), "-o", str(lock), "--force")  # called again per batch
    assert locked.code == 0, locked.err
    ran = cli("run", str(lock), "--runner", "local")
    assert "Traceback" not in ran.err
    listed = json.loads(cli("runs", "list", "--json").out)
    shown: dict[str, Any] = json.loads(cli("runs", "show", listed[0]["id"], "--json").out)
    shown["_err"] = ran.err
    return shown


@pytest.fixture
def published(cli: Cli, tmp_path: Path) -> Cli:
    root = tmp_path / "catalog"
    root.mkdir()
    manifests = [
        frameworks.write(root, "onnxruntime"),
        dataset_yaml(root),
        model_yaml(root, "logits-letterbox", "logits", {"letterbox": {"size": [48, 48]}}),
        model_yaml(root, "probability-longest", "probability", {"max_dimension": {"size": 48}}),
        model_yaml(
            root,
            "logits-coarse",
            "logits",
            {"letterbox": {"size": [48, 48], "value": 0}},
            pool=2,
            labels=b"sky\nred thing\n",
        ),
        model_yaml(
            root, "three-logits", "logits", {"letterbox": {"size": [48, 48]}}, labels=b"a\nb\n"
        ),
    ]
    assert cli("init").code == 0
    for path in manifests:
        done = cli("publish", str(path))
        assert done.code == 0, done.err
    return cli


def test_runs_score_miou_and_pixel_accuracy_as_numpy_does_on_the_masks(
    published: Cli, tmp_path: Path
) -> None:
    # the models find the red rectangles; the masks also call the blue ones class 1
    expected = expected_metrics(red)
    assert 0.3 < expected[0] < 0.95  # not a trivial score
    for model in ("test/logits-letterbox", "test/probability-longest", "test/logits-coarse"):
        shown = run(published, tmp_path, model)
        assert shown["status"] == "succeeded", (model, shown["error"])
        assert [shown["miou"], shown["pixel_accuracy"]] == pytest.approx(expected, abs=1e-12)
        assert shown["accuracy_samples_count"] == len(SCENES)
        details = shown["details"]["segmentation"]
        assert details["pixels_counted"] == len(SCENES) * 60 * WIDTH
        assert len(details["iou"]) == CLASSES
    # the class names: the output's labels file where it has one, else the dataset's
    assert details["classes"] == ["sky", "red thing"]
    first = run(published, tmp_path, "test/logits-letterbox")["details"]["segmentation"]
    assert first["classes"] == ["background", "thing"]


def test_a_model_that_sees_exactly_what_the_masks_say_scores_one(
    published: Cli, tmp_path: Path
) -> None:
    def red_masks(files: dict[str, bytes]) -> None:  # masks of the red rectangles only
        for name, scene in SCENES.items():
            mask = scene_mask({"red": scene["red"], "blue": []})
            files[mask_path(f"photos/{name}", "photos", "masks")] = png(mask, "L")

    assert published("publish", str(dataset_yaml(tmp_path, "1.0.1", red_masks))).code == 0
    shown = run(published, tmp_path, "test/logits-letterbox", "test/shapes@1.0.1")
    assert shown["status"] == "succeeded", shown["error"]
    assert (shown["miou"], shown["pixel_accuracy"]) == (1.0, 1.0)


def test_logits_of_another_class_count_fail_the_run_before_it_is_timed(
    published: Cli, tmp_path: Path
) -> None:
    three = dataset_yaml(tmp_path, "1.0.2", _add("names.txt", b"x\ny\nz\n"), labels={"classes": 3})
    assert published("publish", str(three)).code == 0
    shown = run(published, tmp_path, "test/logits-letterbox", "test/shapes@1.0.2")
    assert shown["status"] == "failed"
    assert (
        "its logits score 2 classes (layout NCHW, shape [1, 2, 48, 48]) but the dataset's "
        "masks index 3" in shown["error"]
    )
    assert "miou" not in shown and "latency_p50_ns" not in shown
    # a labels file of another length than the dataset's classes fails it too, before the run
    shown = run(published, tmp_path, "test/three-logits", "test/shapes@1.0.2")
    assert (
        shown["status"] == "failed"
        and "labels.txt: names 2 classes, the masks index 3" in (shown["error"])
    )


def test_an_output_without_the_batch_axis_fails_the_run_before_it_is_timed(
    published: Cli, tmp_path: Path
) -> None:
    path = model_yaml(
        tmp_path, "batch-mean", "logits", {"letterbox": {"size": [48, 48]}}, batch_mean=True
    )
    assert published("publish", str(path)).code == 0
    shown = run(published, tmp_path, "test/batch-mean", batch_size=2)
    assert shown["status"] == "failed"
    assert (
        "output 'scores' has shape [1, 2, 48, 48] for a batch of 2 samples: its first axis must "
        "be the batch's samples" in shown["error"]
    )
    assert "miou" not in shown and "latency_p50_ns" not in shown


def test_a_segmentation_output_without_its_section_is_refused_at_publish(
    cli: Cli, tmp_path: Path
) -> None:
    path = model_yaml(tmp_path, "no-section", "logits", {"letterbox": {"size": [48, 48]}})
    data = yaml.safe_load(path.read_text())
    del data["outputs"][0]["segmentation"]
    dump(path, data)
    assert cli("init").code == 0
    refused = cli("publish", str(path))
    assert refused.code == 1 and "has no `segmentation`" in refused.err, refused.err


# --- reruns and reports ---------------------------------------------------------------------


def test_a_rerun_compares_the_segmentation_metrics() -> None:
    original = {"miou": 0.5, "pixel_accuracy": 0.9, "accuracy_samples_count": 3.0}
    assert accuracy_verdict(original, dict(original)) == "accuracy identical (mIoU 0.5000)"
    changed = original | {"pixel_accuracy": 0.8}
    assert accuracy_verdict(original, changed) == (
        "accuracy differs: pixel accuracy 0.9000 then 0.8000"
    )


def test_a_segmentation_run_is_a_point_of_its_own_task_in_the_accuracy_chart() -> None:
    info = {
        "id": "r1", "model": "test/seg@1.0.0", "framework": "onnxruntime@1.31.1",
        "dataset": "test/shapes@1.0.0", "scenario": "Offline", "mode": "accuracy",
        "batch_size": 1, "metrics": {"miou": 0.625, "pixel_accuracy": 0.9,
                                     "latency_p50_ns": 2_000_000.0},
    }  # fmt: skip
    points = accuracy_points(Report([RunData(info, None)], created_at="t"))
    assert [(p["metric"], p["task"], p["accuracy"]) for p in points] == [
        ("miou", "segmentation", 0.625)
    ]
