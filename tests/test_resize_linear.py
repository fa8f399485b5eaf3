"""``resize: {antialias: false}``: bilinear without antialiasing, as OpenCV resizes
(``cv2.resize`` ``INTER_LINEAR``, ``cv2.dnn.blobFromImage``), computed in NumPy
(``image_steps.resize_linear``). Pillow's filters widen when shrinking; OpenCV's bilinear reads
the two nearest source pixels on each axis whatever the scale, and on NudeNet's downscaled photos
that moved its raw scores by up to 0.18. Held exactly to a float reference written here from the
formula, and to OpenCV within 1 grey level (its 8-bit path is fixed-point and rounds differently
in its SIMD and scalar code). The field is a late one: a manifest that leaves it out keeps its
digest."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pinbench.registry.manifest import manifest_data, manifest_digest, parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.steps import Resize
from pinbench.worker.image_steps import resize, resize_linear


def reference(image: Any, height: int, width: int) -> Any:
    """The formula pixel by pixel: source ``(dst + 0.5) * scale - 0.5`` on each axis, clamped
    to the first and last pixel, the two pixels either side weighted by the distance, across
    then down, in float32, rounded half to even back to 8 bits."""

    def taps(d: int, size: int, out: int) -> tuple[int, int, np.float32]:
        src = min(max((d + 0.5) * (size / out) - 0.5, 0.0), size - 1.0)
        first = math.floor(src)
        return first, min(first + 1, size - 1), np.float32(src - first)

    h, w, channels = image.shape
    out = np.empty((height, width, channels), dtype=np.uint8)
    one, p = np.float32(1), image.astype(np.float32)
    for y in range(height):
        top, bottom, wy = taps(y, h, height)
        for x in range(width):
            left, right, wx = taps(x, w, width)
            for c in range(channels):
                upper = p[top, left, c] * (one - wx) + p[top, right, c] * wx
                lower = p[bottom, left, c] * (one - wx) + p[bottom, right, c] * wx
                value = upper * (one - wy) + lower * wy
                out[y, x, c] = np.clip(np.rint(value), 0, 255)
    return out


# (why, source height x width, target height x width, channels)
SIZES = [
    ("a third, odd sizes", (61, 47), (20, 15), 3),
    ("exactly half (OpenCV takes its area path: the same mean)", (64, 48), (32, 24), 3),
    ("up, odd factors", (7, 9), (25, 31), 3),
    ("down on one axis, up on the other", (33, 100), (50, 13), 1),
    ("to one pixel", (9, 8), (1, 1), 3),
    ("to one row", (12, 30), (1, 17), 3),
]


@pytest.mark.parametrize(
    ("source", "target", "channels"), [c[1:] for c in SIZES], ids=[c[0] for c in SIZES]
)
def test_linear_resize_is_the_formula(
    source: tuple[int, int], target: tuple[int, int], channels: int
) -> None:
    rng = np.random.default_rng(sum(source) + sum(target))
    image = rng.integers(0, 256, size=(*source, channels), dtype=np.uint8)
    ours = resize_linear(image[np.newaxis], *target)
    assert ours.dtype == np.uint8 and ours.shape == (1, *target, channels)
    assert np.array_equal(ours[0], reference(image, *target))


# (source height x width, target height x width): NudeNet's squares and others, down and up
OPENCV_SIZES = [
    ((512, 512), (320, 320)),  # astronaut and camera, as NudeNet feeds them
    ((451, 451), (320, 320)),  # chelsea padded to its square
    ((640, 640), (320, 320)),  # rocket's square: exactly half
    ((427, 640), (300, 200)),
    ((61, 47), (20, 15)),
    ((100, 100), (7, 93)),
    ((7, 9), (25, 31)),
    ((64, 48), (320, 320)),
    ((33, 100), (50, 13)),
    ((3, 3), (1000, 2)),
]


@pytest.mark.parametrize(("source", "target"), OPENCV_SIZES, ids=str)
def test_linear_resize_is_opencvs_within_one_grey_level(
    source: tuple[int, int], target: tuple[int, int]
) -> None:
    import cv2

    rng = np.random.default_rng(source[0] * 7 + target[1])
    for channels in (3, 1):
        image = rng.integers(0, 256, size=(*source, channels), dtype=np.uint8)
        opencv = cv2.resize(image, target[::-1], interpolation=cv2.INTER_LINEAR)
        ours = resize_linear(image[np.newaxis], *target)[0]
        assert ours.shape == (*target, channels)
        difference = np.abs(ours.astype(np.int16) - opencv.reshape(ours.shape).astype(np.int16))
        assert difference.max() <= 1, (source, target, channels)


def test_pillows_filter_is_not_opencvs_when_shrinking() -> None:
    """Why the option exists: shrinking by a third, Pillow's bilinear (antialias left out)
    averages over three source pixels a side and lands tens of grey levels from OpenCV."""
    import cv2

    image = np.random.default_rng(1).integers(0, 256, size=(1, 90, 90, 3), dtype=np.uint8)
    opencv = cv2.resize(image[0], (30, 30), interpolation=cv2.INTER_LINEAR)
    pillow = resize(image, Resize(size=(30, 30)))[0]
    linear = resize(image, Resize(size=(30, 30), antialias=False))[0]
    assert np.abs(pillow.astype(int) - opencv).max() > 20
    assert np.abs(linear.astype(int) - opencv).max() <= 1


def test_the_step_keeps_float_samples_and_the_aspect_ratio() -> None:
    """Float samples (after a normalize) come back float32, unrounded; keep_aspect_ratio
    scales to cover the size, then centre-crops, as with Pillow's filters."""
    rng = np.random.default_rng(2)
    floats = rng.random((2, 40, 60, 3)).astype(np.float64)
    out = resize(floats, Resize(size=(20, 20), antialias=False))
    assert out.dtype == np.float32 and out.shape == (2, 20, 20, 3)
    assert not np.array_equal(out, np.rint(out))
    covered = resize(floats, Resize(size=(20, 20), keep_aspect_ratio=True, antialias=False))
    assert np.array_equal(covered, resize_linear(floats, 20, 30)[:, :, 5:25, :])


def _model(resize_step: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": "vision/resized",
        "version": "1.0.0",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "format": "onnx",
        "files": [{"path": "model.onnx", "sha256": "ab" * 32, "size": 10}],
        "inputs": [
            {
                "name": "images",
                "type": "image",
                "shape": [1, 3, 64, 64],
                "steps": [{"decode": {"color_mode": "rgb"}}, {"resize": resize_step}],
            }
        ],
        "outputs": [{"name": "logits", "type": "classification"}],
    }


@pytest.mark.parametrize("method", ["nearest", "bicubic", "area", "lanczos"])
def test_antialias_false_with_another_method_is_refused(method: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(_model({"size": [64, 64], "method": method, "antialias": False}))
    message = str(caught.value)
    assert f"needs method bilinear, got {method}" in message
    assert "$.inputs[0].steps[1].resize" in message


def test_antialias_left_out_keeps_the_manifests_digest() -> None:
    """A late field: unset, it is not in the stored data (the digests of manifests published
    before it stay; ``tests/test_golden_digests.py`` holds them); set, it is, either way."""
    plain = parse_manifest(_model({"size": [64, 64], "method": "bilinear"}))
    stored = manifest_data(plain)["inputs"][0]["steps"][1]["resize"]
    assert sorted(stored) == ["keep_aspect_ratio", "method", "size"]
    digests = {
        manifest_digest(parse_manifest(_model({"size": [64, 64], "antialias": value})))
        for value in (False, True)
    }
    assert len(digests | {manifest_digest(plain)}) == 3
