"""Each preprocessing step against golden outputs computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pinbench.registry.ports import Input
from pinbench.registry.steps import (
    ColorMode,
    Crop,
    Decode,
    DType,
    InputStep,
    Layout,
    Normalize,
    OutputStep,
    Resize,
    Softmax,
    TopK,
)
from pinbench.worker import image_steps, pipeline_errors, postprocess
from pinbench.worker import pipeline as p

# One 2x2 RGB sample, NHWC.
RGB = np.array([[[[10, 20, 30], [40, 50, 60]], [[70, 80, 90], [100, 110, 120]]]], dtype=np.uint8)


def test_normalize_mean_std_per_channel() -> None:
    out = image_steps.normalize(RGB, Normalize(mean=[10.0, 20.0, 30.0], std=[10.0, 10.0, 10.0]))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out[0, 0, 0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(out[0, 1, 1], [9.0, 9.0, 9.0])


def test_normalize_scale() -> None:
    out = image_steps.normalize(RGB, Normalize(scale=0.5))
    np.testing.assert_array_equal(out[0, 0, 1], [20.0, 25.0, 30.0])


def test_normalize_refuses_wrong_channel_count() -> None:
    with pytest.raises(pipeline_errors.PipelineError, match="2 values for 3 channel"):
        image_steps.normalize(RGB, Normalize(mean=[0.0, 0.0]))


def test_layout_nchw() -> None:
    out = image_steps.layout(RGB, Layout(to="NCHW"))
    assert out.shape == (1, 3, 2, 2)
    np.testing.assert_array_equal(out[0, 2], [[30, 60], [90, 120]])


def test_color_mode_bgr_and_grayscale() -> None:
    np.testing.assert_array_equal(
        image_steps.color_mode(RGB, ColorMode(to="bgr"))[0, 0, 0], [30, 20, 10]
    )
    gray = image_steps.color_mode(RGB, ColorMode(to="grayscale"))
    assert gray.shape == (1, 2, 2, 1)
    # ITU-R 601 luma: 0.299 R + 0.587 G + 0.114 B, rounded.
    assert gray[0, 0, 0, 0] == round(0.299 * 10 + 0.587 * 20 + 0.114 * 30)


def test_decode_grayscale_to_rgb_repeats_the_channel() -> None:
    gray = np.arange(4, dtype=np.uint8).reshape(1, 2, 2, 1)
    out = image_steps.decode(gray, Decode(color_mode="rgb"))
    np.testing.assert_array_equal(out[0, 1, 1], [3, 3, 3])


def test_center_crop() -> None:
    x = np.arange(16, dtype=np.uint8).reshape(1, 4, 4, 1)
    np.testing.assert_array_equal(
        image_steps.crop(x, Crop(size=(2, 2)))[0, ..., 0], [[5, 6], [9, 10]]
    )
    with pytest.raises(pipeline_errors.PipelineError, match="larger"):
        image_steps.crop(x, Crop(size=(5, 5)))


def test_resize_nearest_doubles_pixels() -> None:
    x = np.array([[[[1], [2]], [[3], [4]]]], dtype=np.uint8)
    out = image_steps.resize(x, Resize(size=(4, 4), method="nearest"))
    np.testing.assert_array_equal(
        out[0, ..., 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]
    )


def test_resize_keeping_aspect_ratio_crops_the_long_side() -> None:
    x = np.zeros((1, 4, 8, 1), dtype=np.uint8)
    assert image_steps.resize(
        x, Resize(size=(2, 2), method="nearest", keep_aspect_ratio=True)
    ).shape == (
        1,
        2,
        2,
        1,
    )


def test_dtype_and_full_preprocess() -> None:
    spec = Input(
        name="x",
        element_type="float32",
        steps=[
            InputStep(normalize=Normalize(mean=[0.0], std=[16.0])),
            InputStep(layout=Layout(to="NCHW")),
            InputStep(dtype=DType(to="float32")),
        ],
    )
    x = np.full((3, 8, 8), 16, dtype=np.uint8)
    out = p.preprocess(x, spec)
    assert out.shape == (3, 1, 8, 8) and out.dtype == np.float32
    assert np.all(out == 1.0)


def test_pipeline_digest_changes_with_the_steps() -> None:
    a = Input(name="x", steps=[InputStep(normalize=Normalize(std=[16.0]))])
    b = Input(name="x", steps=[InputStep(normalize=Normalize(std=[255.0]))])
    assert p.pipeline_digest(a) != p.pipeline_digest(b)
    assert p.pipeline_digest(a) == p.pipeline_digest(Input(name="x", steps=list(a.steps)))


def test_softmax_and_topk() -> None:
    logits = np.array([[1.0, 3.0, 2.0]], dtype=np.float32)
    probs = postprocess.postprocess(logits, [OutputStep(softmax=Softmax())])
    assert probs.sum() == pytest.approx(1.0)
    top = postprocess.postprocess(
        logits, [OutputStep(softmax=Softmax()), OutputStep(topk=TopK(k=2))]
    )
    np.testing.assert_array_equal(top, [[1, 2]])


@pytest.mark.parametrize(
    ("steps", "refused"),
    [
        # a 3-wide image: normalize's per-channel mean would hit the width axis after NCHW
        ([{"layout": {"to": "NCHW"}}, {"normalize": {"mean": [1, 2, 3], "std": [1, 1, 1]}}], True),
        ([{"layout": {"to": "NCHW"}}, {"resize": {"size": [2, 2]}}], True),
        ([{"layout": {"to": "CHW"}}, {"crop": {"size": [2, 2]}}], True),
        # what stays right after a channels-first layout: one scale, a dtype
        (
            [
                {"layout": {"to": "NCHW"}},
                {"normalize": {"scale": 0.5}},
                {"dtype": {"to": "float16"}},
            ],
            False,
        ),
        ([{"normalize": {"mean": [1, 2, 3], "std": [1, 1, 1]}}, {"layout": {"to": "NCHW"}}], False),
        ([{"layout": {"to": "NHWC"}}, {"resize": {"size": [2, 2]}}], False),
    ],
)
def test_image_steps_after_a_channels_first_layout_are_refused(
    steps: list[dict[str, object]], refused: bool
) -> None:
    """Image steps read (N, H, W, C): after `layout: NCHW` they would normalize or resize the
    wrong axes and feed the model something else without a word (the old pipeline did: the
    normalize case below gave values off by the width's index)."""
    import msgspec

    spec = msgspec.convert({"name": "x", "type": "image", "steps": steps}, Input)
    x = np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3)
    if refused:
        with pytest.raises(pipeline_errors.PipelineError, match=r"comes after `layout: N?CHW`"):
            p.preprocess(x, spec)
    else:
        p.preprocess(x, spec)
