"""``resize_multiple``: PaddleOCR's det resize as an input step (decision 133).

Each image's size is PaddleOCR's (``DetResizeForTest.resize_image_type0``, written out here as
the reference); the pixels are Pillow's resize to that size; boxes map back through each
side's own scale. Samples that keep sizes of their own are fed one at a time (``Ragged``): a
batch of more than one, or one array of them all, is refused naming two samples; outputs of
different shapes are refused by a task that stacks them. End to end, PP-OCRv4's detector on
images of three sizes is in ``tests/test_probability_map.py``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pinbench.artifacts.digest import Digest
from pinbench.registry.ports import Input
from pinbench.registry.steps import InputStep, ResizeMultiple
from pinbench.tasks.detection import boxes as geometry
from pinbench.tasks.detection.score import geometry_of
from pinbench.tasks.shapes import OutputShapesDiffer, padded, stacked
from pinbench.worker.feed import cached_array
from pinbench.worker.pipeline import preprocess
from pinbench.worker.pipeline_errors import InputShape, PipelineError
from pinbench.worker.ragged import Ragged, RaggedBatch, prepare_ragged


def paddle(width: int, height: int, limit_side: int, limit_type: str, m: int) -> tuple[int, int]:
    """PaddleOCR's ``resize_image_type0`` (ppocr/data/imaug/operators.py), its size only."""
    h, w = height, width
    if limit_type == "max":
        ratio = (limit_side / h if h > w else limit_side / w) if max(h, w) > limit_side else 1.0
    elif limit_type == "min":
        ratio = (limit_side / h if h < w else limit_side / w) if min(h, w) < limit_side else 1.0
    else:
        ratio = limit_side / max(h, w)
    resize_h, resize_w = int(h * ratio), int(w * ratio)
    return max(int(round(resize_w / m) * m), m), max(int(round(resize_h / m) * m), m)


SIZES = [
    # (why, step, (width, height), expected (width, height))
    ("below the limit: only rounded", ResizeMultiple(), (200, 100), (192, 96)),
    ("x and y round apart", ResizeMultiple(), (330, 120), (320, 128)),
    ("80 / 32 = 2.5 rounds half to even", ResizeMultiple(), (250, 80), (256, 64)),
    ("a thin side is one multiple", ResizeMultiple(), (100, 10), (96, 32)),
    ("max: the longer side to 960", ResizeMultiple(), (2000, 1000), (960, 480)),
    ("max: a tall image's height", ResizeMultiple(), (1000, 3000), (320, 960)),
    ("min: the shorter side to 736", ResizeMultiple(limit_side=736, limit_type="min"),
     (400, 200), (1472, 736)),
    ("min: already large enough", ResizeMultiple(limit_side=736, limit_type="min"),
     (1000, 800), (992, 800)),
    ("resize_long scales up too", ResizeMultiple(limit_type="resize_long"), (200, 100),
     (960, 480)),
    ("multiple 1 keeps the sides", ResizeMultiple(multiple=1), (201, 99), (201, 99)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("step", "size", "expected"), [c[1:] for c in SIZES], ids=[c[0] for c in SIZES]
)
def test_the_size_is_paddleocrs(
    step: ResizeMultiple, size: tuple[int, int], expected: tuple[int, int]
) -> None:
    assert step.size_of(*size) == expected
    assert paddle(*size, step.limit_side, step.limit_type, step.multiple) == expected


def test_the_size_is_paddleocrs_on_any_image() -> None:
    rng = np.random.default_rng(3)
    for limit_type in ("max", "min", "resize_long"):
        step = ResizeMultiple(limit_side=int(rng.integers(32, 2000)), limit_type=limit_type)
        for width, height in rng.integers(1, 3000, (200, 2)):
            got = step.size_of(int(width), int(height))
            assert got == paddle(int(width), int(height), step.limit_side, limit_type, 32)


def test_pixels_are_pillows_resize_and_boxes_map_back_through_each_sides_scale() -> None:
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (1, 120, 330, 3), dtype=np.uint8)
    steps = [InputStep(resize_multiple=ResizeMultiple())]
    out = preprocess(image, Input(name="x", type="image", element_type="uint8", steps=steps))
    direct = [
        Image.fromarray(channel.astype(np.float32), mode="F").resize(
            (320, 128), Image.Resampling.BILINEAR
        )
        for channel in np.moveaxis(image[0], -1, 0)
    ]
    assert out.shape == (1, 128, 320, 3)
    assert (out[0] == np.clip(np.rint(np.stack([np.asarray(c) for c in direct], -1)), 0, 255)).all()

    transform = geometry.transform_of(330, 120, geometry_of(Input(name="x", steps=steps)))
    assert (transform.input_width, transform.input_height) == (320, 128)
    box = [32.0, 16.0, 160.0, 64.0]  # in the 320 x 128 input
    sx, sy = 330 / 320, 120 / 128  # the sides' own scales
    expected = [32 * sx, 16 * sy, 160 * sx, 64 * sy]
    assert transform.to_original([box])[0].tolist() == pytest.approx(expected, rel=1e-12)


REFUSED = [
    # (why, samples, step, message)
    ("waveforms are not images", np.zeros((2, 16), dtype=np.float32), ResizeMultiple(),
     "its step resize_multiple reads images, (H, W) or (H, W, C) per sample"),
    ("a thin image scaled past any sample's size",
     np.zeros((1, 4, 2000, 1), dtype=np.uint8), ResizeMultiple(limit_side=4000, limit_type="min"),
     "would be resized to 2000000x4000, more than the 40000000 pixels"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("samples", "step", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_what_cannot_be_resized_is_refused(
    samples: Any, step: ResizeMultiple, message: str
) -> None:
    spec = Input(name="x", steps=[InputStep(resize_multiple=step)])
    with pytest.raises((InputShape, PipelineError), match=re.escape(message)):
        preprocess(samples, spec)


def samples_of(*shapes: tuple[int, ...]) -> list[tuple[str, Any]]:
    return [(f"{i}.png", np.full((1, *s), i, dtype=np.float32)) for i, s in enumerate(shapes)]


def test_samples_of_their_own_sizes_are_fed_one_at_a_time_from_the_cache(tmp_path: Path) -> None:
    spec = Input(name="x", type="image", steps=[InputStep(resize_multiple=ResizeMultiple())])
    made = samples_of((3, 32, 64), (3, 64, 32), (3, 32, 64))
    names = [name for name, _ in made]
    cached = functools.partial(cached_array, tmp_path, "d" * 64)
    digest = Digest.of_bytes(b"pipeline")
    fed, arrays, hit = prepare_ragged(spec, digest, cached, lambda: iter(made), names)
    again, _, hit_again = prepare_ragged(spec, digest, cached, lambda: iter([]), names)
    assert (hit, hit_again) == (False, True)  # the second reads no sample
    for x in (fed, again):
        assert isinstance(x, Ragged) and x.shape == (3,)
        for i, (_, sample) in enumerate(made):
            assert x[i : i + 1].shape == sample.shape and (x[i : i + 1] == sample).all()
    assert np.shares_memory(fed[1:2], fed[1:2])  # a view of the values each time, no copy
    assert [a.shape for a in arrays] == [s.shape[1:] for _, s in made]  # a scorer's entry

    said = "(0.png: [3, 32, 64]; 1.png: [3, 64, 32]), so they are fed one at a time and cannot "
    with pytest.raises(RaggedBatch, match=re.escape(said + "form a batch of 2: run with batch_")):
        fed[:2]
    with pytest.raises(RaggedBatch, match=re.escape(said + "form a batch of 3")):
        np.asarray(fed)  # training stacks every sample


def test_samples_that_come_out_one_size_are_one_array(tmp_path: Path) -> None:
    spec = Input(name="x", type="image", steps=[InputStep(resize_multiple=ResizeMultiple())])
    made = samples_of((3, 32, 64), (3, 32, 64))
    cached = functools.partial(cached_array, tmp_path, "d" * 64)
    fed, _, _ = prepare_ragged(
        spec, Digest.of_bytes(b"p"), cached, lambda: iter(made), ["0.png", "1.png"]
    )
    assert isinstance(fed, np.ndarray) and fed.shape == (2, 3, 32, 64)
    assert fed[:2].shape == (2, 3, 32, 64)  # any batch size


def test_outputs_of_different_shapes_are_stacked_by_no_task_but_recorded_padded() -> None:
    answers: dict[int, dict[str, Any]] = {
        0: {"maps": np.ones((1, 1, 2, 3))},
        1: {"maps": np.zeros((1, 1, 4, 2))},
    }
    message = "output 'maps' differs in shape between samples (sample 0: [1, 1, 2, 3]; sample 1"
    with pytest.raises(OutputShapesDiffer, match=re.escape(message)):
        stacked(answers, ["maps"])
    recorded = padded([answers[0]["maps"], answers[1]["maps"]])
    assert recorded.shape == (2, 1, 4, 3)
    assert (recorded[0, 0, :2] == 1).all() and np.isnan(recorded[0, 0, 2:]).all()
    assert (recorded[1, 0, :, :2] == 0).all() and np.isnan(recorded[1, 0, :, 2]).all()
