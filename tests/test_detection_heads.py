"""The raw detection heads pinbench decodes (issue 50): YOLOX (grid and strides), GFL
(PicoDet's distribution focal loss bins) and SSD (anchors and a box coder). Each decoder
equals a direct decoding written here from the published formulas, anchor by anchor in
Python, and the package's own decoding where one ships it: ddddocr 1.6.1's YOLOX
``demo_postprocess`` and rapid-layout 1.2.1's ``PPPostProcess`` (its GFL decoding and its
per-class NMS), both loaded from their pinned wheels. NMS equals a greedy reference of
torchvision's ``batched_nms`` rule. Declarations a head cannot honour are refused."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.registry.detection_heads import Gfl, Ssd
from pinbench.registry.ports import Detection, Output
from pinbench.tasks.detection.errors import BadDetectorOutput
from pinbench.tasks.detection.heads import (
    decode_gfl,
    decode_ssd,
    decode_yolox,
    gfl_centres,
    read_anchors,
)
from pinbench.tasks.detection.nms import nms
from tests.package_decoders import ddddocr_demo_postprocess, rapid_layout_postprocess

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(231)


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# ---------------------------------------------------------------- yolox

WIDTH, HEIGHT = 96, 64  # not square: a swapped width and height fails
STRIDES = [8, 16, 32]


def yolox_reference(raw: Array, width: int, height: int, strides: list[int]) -> list[Any]:
    """YOLOX's decoding, anchor by anchor: level by level, row by row; centre (x + col) *
    stride, size exp(log w) * stride; score objectness x class, the best class."""
    out = []
    anchor = 0
    for s in strides:
        for row in range(height // s):
            for col in range(width // s):
                x, y, lw, lh, obj, *cls = raw[anchor].tolist()
                cx, cy = (x + col) * s, (y + row) * s
                w, h = math.exp(lw) * s, math.exp(lh) * s
                scores = [obj * c for c in cls]
                best = max(range(len(scores)), key=lambda k: (scores[k], -k))
                out.append(([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], scores[best], best))
                anchor += 1
    assert anchor == len(raw)
    return out


def yolox_raw(n: int, anchors: int, classes: int) -> Array:
    raw = RNG.normal(size=(n, anchors, 5 + classes))
    raw[..., 4:] = RNG.random(size=(n, anchors, 1 + classes))  # YOLOX's export sigmoids them
    return raw


def test_yolox_decodes_as_the_formulas_and_as_ddddocr() -> None:
    anchors = sum((HEIGHT // s) * (WIDTH // s) for s in STRIDES)
    raw = yolox_raw(2, anchors, 3)
    found = decode_yolox(raw, (WIDTH, HEIGHT), STRIDES)
    assert len(found) == 2
    for sample, decoded in zip(raw, found, strict=True):
        expected = yolox_reference(sample, WIDTH, HEIGHT, STRIDES)
        assert np.allclose(decoded.boxes, [e[0] for e in expected], rtol=1e-12, atol=1e-9)
        assert np.allclose(decoded.scores, [e[1] for e in expected], rtol=1e-12)
        assert decoded.classes.tolist() == [e[2] for e in expected]
    # ddddocr's own demo_postprocess takes the input's (height, width) and decodes in place
    package = ddddocr_demo_postprocess()(raw.copy(), (HEIGHT, WIDTH))
    for sample, decoded in zip(package, found, strict=True):
        cx, cy, w, h = sample[:, 0], sample[:, 1], sample[:, 2], sample[:, 3]
        xyxy = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
        assert np.allclose(decoded.boxes, xyxy, rtol=1e-12, atol=1e-9)
        scores = sample[:, 4:5] * sample[:, 5:]
        assert np.allclose(decoded.scores, scores.max(axis=1), rtol=1e-12)
        assert decoded.classes.tolist() == scores.argmax(axis=1).tolist()


YOLOX_REFUSED = [
    # (why, raw output, message)
    ("an anchor count of another grid", yolox_raw(1, 10, 2), "has 10 anchors, a 96 x 64 input"),
    ("no class column", yolox_raw(1, 126, 0), r"5 \+ classes values per anchor"),
    ("logits, not probabilities", yolox_raw(1, 126, 2) + 2.0, r"not a probability in \[0, 1\]"),
    ("a value that is not finite", np.full((1, 126, 7), np.nan), "not a finite number"),
]


@pytest.mark.parametrize(
    ("raw", "message"), [c[1:] for c in YOLOX_REFUSED], ids=[c[0] for c in YOLOX_REFUSED]
)
def test_a_yolox_output_the_grid_cannot_read_is_refused(raw: Array, message: str) -> None:
    with pytest.raises(BadDetectorOutput, match=message):
        decode_yolox(raw, (WIDTH, HEIGHT), STRIDES)


# ---------------------------------------------------------------- gfl

GFL_WIDTH, GFL_HEIGHT = 76, 100  # 100 / 64 and 76 / 64 are not whole: the grid rounds up
GFL_STRIDES = [8, 16, 32, 64]
BINS = 8


def gfl_reference(
    levels: list[tuple[Array, Array]], strides: list[int], offset: float
) -> tuple[list[list[float]], list[list[float]]]:
    """PicoDet's decoding of one sample, anchor by anchor: ceil(H / s) rows of ceil(W / s)
    cells; a side's distance the softmax-weighted mean of its bins times the stride."""
    boxes, scores = [], []
    for (score, dist), s in zip(levels, strides, strict=True):
        anchor = 0
        for row in range(math.ceil(GFL_HEIGHT / s)):
            for col in range(math.ceil(GFL_WIDTH / s)):
                cx, cy = (col + offset) * s, (row + offset) * s
                sides = []
                for side in range(4):
                    logits = dist[anchor, side * BINS : (side + 1) * BINS].tolist()
                    top = max(logits)
                    weights = [math.exp(v - top) for v in logits]
                    sides.append(sum(i * w for i, w in enumerate(weights)) / sum(weights) * s)
                left, top_, right, bottom = sides
                boxes.append([cx - left, cy - top_, cx + right, cy + bottom])
                scores.append(score[anchor].tolist())
                anchor += 1
        assert anchor == len(score)
    return boxes, scores


def gfl_levels(n: int, classes: int, hot: int) -> list[tuple[Array, Array]]:
    """Random levels whose probabilities are low but for ``hot`` (anchor, class) pairs."""
    levels = []
    for s in GFL_STRIDES:
        anchors = math.ceil(GFL_HEIGHT / s) * math.ceil(GFL_WIDTH / s)
        scores = RNG.random(size=(n, anchors, classes)) * 0.2
        for _ in range(hot):
            scores[RNG.integers(n), RNG.integers(anchors), RNG.integers(classes)] = RNG.uniform(
                0.55, 1.0
            )
        levels.append((scores, RNG.normal(scale=2.0, size=(n, anchors, 4 * BINS))))
    return levels


def section(offset: float = 0.5) -> Gfl:
    heads = [{"scores": f"s{s}", "boxes": f"b{s}", "stride": s} for s in GFL_STRIDES]
    return msgspec.convert({"heads": heads, "bins": BINS, "offset": offset}, type=Gfl)


NAMES = [(f"s{s}", f"b{s}") for s in GFL_STRIDES]


@pytest.mark.parametrize("offset", [0.5, 0.0])
def test_gfl_decodes_as_the_formulas_every_class_a_candidate(offset: float) -> None:
    levels = gfl_levels(2, 3, 0)
    found = decode_gfl(levels, NAMES, section(offset), (GFL_WIDTH, GFL_HEIGHT), 0.0)
    for i, decoded in enumerate(found):
        boxes, scores = gfl_reference([(s[i], d[i]) for s, d in levels], GFL_STRIDES, offset)
        pairs = [(a, c) for a in range(len(scores)) for c in range(3)]  # anchor, then class
        assert len(decoded) == len(pairs)
        assert np.allclose(decoded.boxes, [boxes[a] for a, _ in pairs], rtol=1e-12, atol=1e-9)
        assert np.allclose(decoded.scores, [scores[a][c] for a, c in pairs], rtol=1e-15)
        assert decoded.classes.tolist() == [c for _, c in pairs]
    assert gfl_centres(76, 100, 64, 0.5).shape == (2 * 2, 2)  # ceil(76/64) x ceil(100/64)


def test_gfl_with_nms_keeps_what_rapid_layouts_postprocess_keeps() -> None:
    """rapid-layout's own pipeline (per level decoding, per class ``probs > 0.5`` and its
    ``hard_nms`` at IoU 0.5) on the same outputs, at the input's own size (its warp is then
    the identity): the same boxes, scores and classes as pinbench's decoding and NMS."""
    classes = 10
    levels = gfl_levels(1, classes, 40)
    labels = [f"c{k}" for k in range(classes)]
    post = rapid_layout_postprocess()(labels, 0.5, 0.5)
    image = np.zeros((1, 3, GFL_HEIGHT, GFL_WIDTH), dtype=np.float32)
    preds = [s for s, _ in levels] + [d for _, d in levels]
    boxes, scores, names = post((GFL_HEIGHT, GFL_WIDTH), image, preds)
    theirs = sorted(
        (labels.index(n), round(sc, 5), *np.round(b, 2).tolist())
        for b, sc, n in zip(boxes, scores, names, strict=True)
    )
    (decoded,) = decode_gfl(levels, NAMES, section(), (GFL_WIDTH, GFL_HEIGHT), 0.5)
    kept = decoded.suppressed(iou_threshold=0.5, score_threshold=0.5)
    clipped = np.clip(kept.boxes, 0, [GFL_WIDTH, GFL_HEIGHT, GFL_WIDTH, GFL_HEIGHT])
    ours = sorted(
        (int(c), round(float(sc), 5), *np.round(b, 2).tolist())
        for b, sc, c in zip(clipped, kept.scores, kept.classes, strict=True)
    )
    assert len(theirs) >= 20 and ours == pytest.approx(theirs, abs=0.011)


def test_gfl_outputs_that_do_not_fit_are_refused_naming_the_output() -> None:
    levels = gfl_levels(1, 3, 0)
    size = (GFL_WIDTH, GFL_HEIGHT)
    short = [*levels[:3], (levels[3][0][:, :-1], levels[3][1][:, :-1])]
    with pytest.raises(BadDetectorOutput, match="output 's64' has 3 anchors, stride 64 on a 76"):
        decode_gfl(short, NAMES, section(), size, 0.0)
    bins = [(s, d[..., :-4]) for s, d in levels]
    with pytest.raises(BadDetectorOutput, match=r"'b8' must be \(N, anchors, 4 x 8 bins\)"):
        decode_gfl(bins, NAMES, section(), size, 0.0)
    logits = [(s + 1.0, d) for s, d in levels]
    with pytest.raises(BadDetectorOutput, match=r"'s8': .* is not a probability"):
        decode_gfl(logits, NAMES, section(), size, 0.0)


# ---------------------------------------------------------------- ssd

VARIANCES = (0.1, 0.1, 0.2, 0.2)


def ssd_anchors(count: int) -> Array:
    """Normalized anchors, centre and size."""
    centres = RNG.uniform(0.1, 0.9, size=(count, 2))
    sizes = RNG.uniform(0.05, 0.5, size=(count, 2))
    return np.concatenate([centres, sizes], axis=1)


def ssd_reference(
    deltas: Array,
    logits: Array,
    anchors: Array,
    order: str,
    activation: str,
    background: int | None,
) -> tuple[list[list[float]], list[list[float]]]:
    """Caffe's DecodeBBox and the activation, anchor by anchor."""
    boxes, scores = [], []
    for d, s, (ax, ay, aw, ah) in zip(
        deltas.tolist(), logits.tolist(), anchors.tolist(), strict=True
    ):
        dx, dy, dw, dh = (d[1], d[0], d[3], d[2]) if order == "yxhw" else d
        cx, cy = ax + dx * VARIANCES[0] * aw, ay + dy * VARIANCES[1] * ah
        w, h = aw * math.exp(dw * VARIANCES[2]), ah * math.exp(dh * VARIANCES[3])
        boxes.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
        if activation == "softmax":
            top = max(s)
            e = [math.exp(v - top) for v in s]
            p = [v / sum(e) for v in e]
        else:
            p = [sigmoid(v) for v in s] if activation == "sigmoid" else s
        scores.append([v for k, v in enumerate(p) if k != background])
    return boxes, scores


SSD_CASES = [
    # (why, order, activation, background)
    ("Caffe's and torchvision's: softmax with a background column", "xywh", "softmax", 0),
    ("TensorFlow's: deltas y, x, h, w and a sigmoid per class", "yxhw", "sigmoid", None),
    ("probabilities given, the background last", "xywh", "none", 3),
]


@pytest.mark.parametrize(
    ("order", "activation", "background"), [c[1:] for c in SSD_CASES], ids=[c[0] for c in SSD_CASES]
)
def test_ssd_decodes_as_the_box_coder_and_the_activation(
    order: str, activation: str, background: int | None
) -> None:
    anchors = ssd_anchors(30)
    deltas = RNG.normal(size=(2, 30, 4))
    logits = RNG.normal(size=(2, 30, 4)) if activation != "none" else RNG.random(size=(2, 30, 4))
    data = {"anchors": "a.npy", "order": order, "activation": activation}
    spec = msgspec.convert(data | {"background": background}, type=Ssd)
    found = decode_ssd(deltas, logits, anchors, spec, ("d", "s"), 0.0)
    for d, s, decoded in zip(deltas, logits, found, strict=True):
        boxes, scores = ssd_reference(d, s, anchors, order, activation, background)
        classes = len(scores[0])
        pairs = [(a, c) for a in range(30) for c in range(classes)]
        assert np.allclose(decoded.boxes, [boxes[a] for a, _ in pairs], rtol=1e-12, atol=1e-12)
        assert np.allclose(decoded.scores, [scores[a][c] for a, c in pairs], rtol=1e-12)
        assert decoded.classes.tolist() == [c for _, c in pairs]


def test_ssd_anchors_are_read_as_data_in_their_format(tmp_path: Path) -> None:
    anchors = ssd_anchors(5)
    cx, cy, w, h = anchors.T
    np.save(tmp_path / "xyxy.npy", np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1))
    assert np.allclose(read_anchors(tmp_path / "xyxy.npy", "xyxy", where="a"), anchors)
    np.save(tmp_path / "yxyx.npy", np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], 1))
    assert np.allclose(read_anchors(tmp_path / "yxyx.npy", "yxyx", where="a"), anchors)
    bad = {
        "pickled.npy": (np.array([{"x": 1}], dtype=object), "not a .npy array"),
        "three.npy": (np.zeros((4, 3)), r"must be \(anchors, 4\)"),
        "flat.npy": (np.array([[0.5, 0.5, 0.0, 0.1]]), "positive width and height"),
        "nan.npy": (np.array([[0.5, np.nan, 0.1, 0.1]]), "finite"),
    }
    for name, (array, message) in bad.items():
        np.save(tmp_path / name, array, allow_pickle=True)
        with pytest.raises(BadDetectorOutput, match=message):
            read_anchors(tmp_path / name, "cxcywh", where=name)


# ---------------------------------------------------------------- nms


def greedy_reference(boxes: Array, scores: Array, classes: Array, iou: float) -> list[int]:
    """torchvision's batched_nms rule written out: per class, highest score first (ties by
    index), a box dropped when its IoU with a kept one is above the threshold; all kept,
    best first."""

    def overlap(a: list[float], b: list[float]) -> float:
        w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
        return w * h / union if union > 0 else 0.0

    kept: list[int] = []
    for c in sorted(set(classes.tolist())):
        order = sorted(
            (i for i in range(len(boxes)) if classes[i] == c), key=lambda i: (-scores[i], i)
        )
        mine: list[int] = []
        for i in order:
            if all(overlap(boxes[i].tolist(), boxes[k].tolist()) <= iou for k in mine):
                mine.append(i)
        kept += mine
    return sorted(kept, key=lambda i: (-scores[i], i))


@pytest.mark.parametrize("seed", range(5))
def test_nms_equals_the_greedy_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, 50, size=(60, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(5, 30, size=(60, 2))], axis=1)
    scores = np.round(rng.random(60), 1)  # ties
    classes = rng.integers(0, 3, 60)
    got = nms(boxes, scores, classes, iou_threshold=0.4).tolist()
    assert got == greedy_reference(boxes, scores, classes, 0.4)


@pytest.mark.parametrize("seed", range(5))
def test_class_agnostic_nms_equals_opencvs_nmsboxes_as_nudenet_calls_it(seed: int) -> None:
    """``class_agnostic: true`` is OpenCV's ``cv2.dnn.NMSBoxes`` (NudeNet 3.4.2's NMS, at its
    0.25 / 0.45), which suppresses across classes: the same boxes in the same order, the greedy
    rule over one class; per class keeps more."""
    import cv2

    rng = np.random.default_rng(seed)
    corner = rng.integers(0, 50, size=(60, 2))
    boxes = np.concatenate([corner, corner + rng.integers(5, 30, size=(60, 2))], axis=1)
    scores = rng.random(60)
    classes = rng.integers(0, 3, 60)
    xywh = np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], axis=1)
    opencv = np.asarray(cv2.dnn.NMSBoxes(xywh.tolist(), scores.tolist(), 0.25, 0.45)).reshape(-1)
    agnostic = nms(
        boxes, scores, classes, iou_threshold=0.45, score_threshold=0.25, class_agnostic=True
    )
    assert agnostic.tolist() == opencv.tolist()
    above = scores >= 0.25
    one_class = greedy_reference(boxes[above], scores[above], np.zeros(int(above.sum())), 0.45)
    assert agnostic.tolist() == np.flatnonzero(above)[one_class].tolist()
    per_class = nms(boxes, scores, classes, iou_threshold=0.45, score_threshold=0.25)
    assert len(per_class) > len(agnostic)  # overlapping boxes of other classes kept


# ---------------------------------------------------------------- declarations

DECLARED = [
    # (why, the detection section, the error)
    ("yolox reads no separate scores", {"layout": "yolox", "scores": "s"}, "`scores` does not"),
    ("yolox decodes pixels", {"layout": "yolox", "normalized": True}, "`normalized` does not"),
    (
        "a gfl section on another layout",
        {"layout": "yolov8", "gfl": {"heads": [{"scores": "s", "boxes": "b", "stride": 8}]}},
        "describes layout gfl",
    ),
    ("gfl without its heads", {"layout": "gfl"}, "needs its `gfl` section"),
    (
        "ssd without its scores",
        {"layout": "ssd", "ssd": {"anchors": "a.npy", "activation": "none"}},
        "layout ssd needs `scores`",
    ),
    (
        "ssd's activation is never assumed",
        {"layout": "ssd", "scores": "s", "ssd": {"anchors": "a.npy"}},
        "missing required field `activation`",
    ),
    (
        "ssd anchors that are not an array file",
        {"layout": "ssd", "scores": "s", "ssd": {"anchors": "a.txt", "activation": "none"}},
        "must be a .npy file",
    ),
    ("a stride of 0", {"layout": "yolox", "yolox": {"strides": [0]}}, ">= 1"),
    (
        "one output twice in gfl heads",
        {"layout": "gfl", "gfl": {"heads": [{"scores": "a", "boxes": "a", "stride": 8}]}},
        "twice",
    ),
]


@pytest.mark.parametrize(
    ("data", "message"), [c[1:] for c in DECLARED], ids=[c[0] for c in DECLARED]
)
def test_a_head_declared_so_it_cannot_be_honoured_is_refused(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(msgspec.ValidationError, match=message):
        msgspec.convert({"name": "y", "type": "detection", "detection": data}, type=Output)


def test_yolox_strides_default_to_yoloxs() -> None:
    section_ = msgspec.convert({"layout": "yolox"}, type=Detection)
    assert section_.yolox is not None and section_.yolox.strides == [8, 16, 32]


def _model(outputs: list[dict[str, Any]], files: list[str]) -> dict[str, Any]:
    return {
        "kind": "model", "name": "t/heads", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": [{"path": f, "sha256": "0" * 64} for f in files],
        "inputs": [{"name": "x"}], "outputs": outputs,
    }  # fmt: skip


GFL = {"layout": "gfl", "gfl": {"heads": [{"scores": "s8", "boxes": "b8", "stride": 8}]}}
SSD = {"layout": "ssd", "scores": "s", "ssd": {"anchors": "a.npy", "activation": "softmax"}}
LABELS = {"path": "m.onnx"}
PUBLISH_REFUSED = [
    # (why, the outputs, the files, the error)
    ("a gfl output that is none of its heads'",
     [{"name": "other", "type": "detection", "labels": LABELS, "detection": GFL},
      {"name": "s8", "type": "tensor"}, {"name": "b8", "type": "tensor"}],
     ["m.onnx"], "reads GFL heads but is none of their outputs"),
    ("a gfl level the model does not declare",
     [{"name": "s8", "type": "detection", "labels": LABELS, "detection": GFL}],
     ["m.onnx"], "reads its level 0's boxes from output 'b8', which the model does not declare"),
    ("ssd scores the model does not declare",
     [{"name": "d", "type": "detection", "labels": LABELS, "detection": SSD}],
     ["m.onnx", "a.npy"], "reads its scores from output 's'"),
    ("ssd anchors that are not a file of the model",
     [{"name": "d", "type": "detection", "labels": LABELS, "detection": SSD},
      {"name": "s", "type": "tensor"}],
     ["m.onnx"], "the ssd anchors file 'a.npy' of output 'd' is not among the files"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("outputs", "files", "message"),
    [c[1:] for c in PUBLISH_REFUSED],
    ids=[c[0] for c in PUBLISH_REFUSED],
)
def test_a_head_reading_outputs_or_files_the_model_lacks_is_refused_at_publish(
    outputs: list[dict[str, Any]], files: list[str], message: str
) -> None:
    from pinbench.errors import UserError
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.supported import check_supported

    with pytest.raises(UserError, match=message):
        check_supported(parse_manifest(_model(outputs, files)))


def test_class_agnostic_is_honoured_when_scored_and_left_out_of_the_digest_while_unset() -> None:
    """One face answered as FACE_FEMALE and FACE_MALE (NudeNet's overlapping classes): per class
    keeps both boxes, ``class_agnostic: true`` the better one. A manifest that does not set it
    keeps the digest it had before the field existed; one that sets it has another."""
    from pinbench.registry.manifest import manifest_data, manifest_digest, parse_manifest
    from pinbench.tasks.detection.boxes import transform_of
    from pinbench.tasks.detection.layouts import Detections
    from pinbench.tasks.detection.score import kept

    box = np.array([[10.0, 10.0, 40.0, 50.0], [11.0, 10.0, 41.0, 50.0]])
    found = Detections(box, np.array([0.6, 0.9]), np.array([1, 12]), None)
    transform = transform_of(64, 64, [])
    counts = {}
    for agnostic in (None, False, True):
        nms = {"iou": 0.45, **({} if agnostic is None else {"class_agnostic": agnostic})}
        section = msgspec.convert({"layout": "yolov8", "nms": nms}, type=Detection)
        counts[agnostic] = [int(c) for c in kept(found, section, transform).classes]
    assert counts == {None: [12, 1], False: [12, 1], True: [12]}

    def model(**nms: Any) -> Any:
        detection = {"layout": "yolov8", "nms": {"iou": 0.45, **nms}}
        out = {"name": "o", "type": "detection", "labels": LABELS, "detection": detection}
        return parse_manifest(_model([out], ["m.onnx"]))

    unset, on = model(), model(class_agnostic=True)
    assert manifest_data(unset)["outputs"][0]["detection"]["nms"] == {
        "iou": 0.45,
        "max_detections": 100,
    }
    assert manifest_data(on)["outputs"][0]["detection"]["nms"]["class_agnostic"] is True
    assert manifest_digest(unset) != manifest_digest(on)


def _plan(detection: dict[str, Any], classes: int, anchors: Array | None = None) -> Any:
    from pinbench.registry.ports import Input
    from pinbench.tasks.detection.coco import validate_ground_truth
    from pinbench.tasks.detection.score import CategoryMap, Plan
    from pinbench.tasks.detection.truth import GroundTruth

    section = msgspec.convert(detection, type=Detection)
    output = Output(name="out", type="detection", detection=section, labels=None)
    one = {
        "images": [{"id": 1, "file_name": "a.png", "width": 9, "height": 9}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2], "area": 4,
             "iscrowd": 0}
        ],
        "categories": [{"id": 1, "name": "c0"}],
    }  # fmt: skip
    truth = GroundTruth(validate_ground_truth(one), [1], [(9, 9)], {"c0": 1})
    spec = msgspec.convert({"name": "x", "steps": [{"layout": {"to": "NCHW"}}]}, type=Input)
    names = [f"c{i}" for i in range(classes)]
    return Plan(output, section, spec, truth, CategoryMap(names, [None] * classes), anchors)


def test_the_first_answer_is_checked_against_the_grid_the_anchors_and_the_classes() -> None:
    """Before anything is timed (``BoxScorer.check``): the input batch's shape gives the grid
    (NCHW here), a YOLOX answer of another anchor count or class count is refused; an SSD
    answer is held to its anchors file."""
    from pinbench.tasks.detection.decoding import check_columns, input_size
    from pinbench.tasks.detection.score import DetectionSetupError

    size = input_size(_plan({"layout": "yolox"}, 2).spec, np.zeros((1, 3, HEIGHT, WIDTH)))
    assert size == (WIDTH, HEIGHT)
    yolox = _plan({"layout": "yolox"}, 2)
    check_columns({"out": yolox_raw(1, 126, 2)}, yolox, size)
    with pytest.raises(BadDetectorOutput, match="has 100 anchors, a 96 x 64 input"):
        check_columns({"out": yolox_raw(1, 100, 2)}, yolox, size)
    with pytest.raises(DetectionSetupError, match="scores 3 classes but its labels file names 2"):
        check_columns({"out": yolox_raw(1, 126, 3)}, yolox, size)
    ssd = {"layout": "ssd", "scores": "s", "ssd": {"anchors": "a.npy", "activation": "softmax",
                                                   "background": 0}}  # fmt: skip
    plan = _plan(ssd, 2, ssd_anchors(30))
    check_columns({"out": RNG.normal(size=(1, 30, 4)), "s": RNG.normal(size=(1, 30, 3))}, plan)
    with pytest.raises(BadDetectorOutput, match="has 29 anchors, the anchors file holds 30"):
        check_columns({"out": RNG.normal(size=(1, 29, 4)), "s": RNG.normal(size=(1, 29, 3))}, plan)
