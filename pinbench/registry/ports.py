"""A model's inputs and outputs: their steps, constants, states and streams, and the task
sections an output carries (labels, detection, segmentation, CTC, binary)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from pinbench import bounds as b
from pinbench.registry.ctc_section import LATE_CTC_ALPHABET_FIELDS as LATE_CTC_ALPHABET_FIELDS
from pinbench.registry.ctc_section import LATE_CTC_FIELDS as LATE_CTC_FIELDS
from pinbench.registry.ctc_section import Ctc as Ctc
from pinbench.registry.ctc_section import CtcAlphabet as CtcAlphabet
from pinbench.registry.detection_heads import HEADS, Gfl, Ssd, Yolox
from pinbench.registry.detection_heads import OutputName as OutputName
from pinbench.registry.manifest_parts import _SHA256, _Strict, check_relative_path
from pinbench.registry.row_steps import PadBatch
from pinbench.registry.steps import ElementType, Fraction, InputStep, OutputStep


class LabelsRef(_Strict, frozen=True, kw_only=True):
    """Where an output's class names are: a ``path`` among the model's files (one name per
    line), or an ONNX model's ``metadata`` entry (``tasks.class_names``: its key, such as
    ``names`` in ultralytics' exports)."""

    path: str | None = None
    sha256: str | None = None
    """Left out, it is the labels file's own sha256 (filled in at publish)."""
    metadata: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    """A late field (``LATE_LABELS_REF_FIELDS``): left out of the stored data while unset."""

    def __post_init__(self) -> None:
        if (self.path is None) == (self.metadata is None):
            raise ValueError(
                "labels are either a `path` among the model's files or an ONNX `metadata` key "
                "(e.g. `labels: {metadata: names}`), one of the two"
            )
        if self.path is not None:
            check_relative_path(self.path)
        if self.sha256 is not None and self.path is None:
            raise ValueError("labels read from metadata have no file: `sha256` does not apply")
        if self.sha256 is not None and not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"sha256 of labels {self.path!r} must be 64 lowercase hex digits")


LATE_LABELS_REF_FIELDS = ("metadata",)
"""``LabelsRef`` fields added after labelled outputs were published: left out while unset."""


class Nms(_Strict, frozen=True, kw_only=True):
    """Greedy non-maximum suppression (``pinbench.tasks.detection.nms``): per class, or over
    every class at once (``class_agnostic``)."""

    iou: Fraction = 0.45
    max_detections: Annotated[int, b.MAX_DETECTIONS.meta] = 100
    class_agnostic: bool | None = None
    """True: a box suppresses the boxes of every class (OpenCV's ``NMSBoxes`` as NudeNet calls
    it, YOLOX's ``multiclass_nms_class_agnostic``, ultralytics' ``agnostic_nms``, torchvision's
    ``nms``); unset or false: those of its own class only (torchvision's ``batched_nms``)."""


LATE_NMS_FIELDS = ("class_agnostic",)
"""``Nms`` fields added after detection manifests were published (``late_fields``)."""


class ProbabilityMap(_Strict, frozen=True, kw_only=True):
    """DBNet's post-processing of a ``(N, 1, H, W)`` probability map into boxes
    (``pinbench.tasks.detection.regions``); the defaults are PaddleOCR's (rapidocr's)."""

    threshold: Fraction = 0.3
    """A pixel is in a region when its probability is above this."""
    box_threshold: Fraction = 0.5
    """A region is a detection when its mean probability is at least this."""
    unclip_ratio: Annotated[float, b.UNCLIP_RATIO.meta] = 1.6
    """Each box grows on every side by its area x ratio / its perimeter."""
    min_size: Annotated[int, b.MAP_MIN_SIZE.meta] = 3
    """A region whose box's shorter side (map pixels, before growing) is below this is dropped."""
    max_candidates: Annotated[int, b.MAX_CANDIDATES.meta] = 1000
    """The regions read per map, the first in raster order of their first pixel."""


DetectionLayouts = Literal["yolov8", "yolov5", "separate", "probability-map", "yolox", "gfl", "ssd"]
BoxFormats = Literal["xyxy", "xywh", "cxcywh", "yxyx"]
PACKED_LAYOUTS = ("yolov8", "yolov5")
"""Layouts packing boxes and class scores in the one output tensor (boxes as cxcywh)."""
PROBABILITY_MAP = "probability-map"
"""The layout of a DBNet-style ``(N, 1, H, W)`` map of one class's per-pixel probability."""


class Detection(_Strict, frozen=True, kw_only=True):
    """How a detection output is read: its packed layout (or, ``separate``, the outputs that
    hold the scores, classes, count and masks beside the boxes this output holds; or,
    ``probability-map``, one class's probability per pixel whose regions become boxes), its
    boxes, the score threshold and NMS; the output's ``labels`` file names its classes,
    matched to the dataset's COCO categories by name."""

    layout: DetectionLayouts
    box_format: BoxFormats = "cxcywh"
    normalized: bool = False
    score_threshold: Fraction = 0.0
    nms: Nms | None = None
    scores: OutputName | None = None
    """``separate``: the output of each box's score, ``(N, K)``."""
    classes: OutputName | None = None
    """``separate``: the output of each box's class index, ``(N, K)`` (whole numbers, may be
    float); left out, every box is class 0 (a one-class detector)."""
    count: OutputName | None = None
    """``separate``: the output of how many of the K boxes are valid, ``(N,)`` or ``(N, 1)``."""
    masks: OutputName | None = None
    """The output of each box's mask (instance segmentation): ``(N, K, h, w)`` scores."""
    mask_kind: Literal["box", "image"] | None = None
    """``box``: each mask covers its own box (TensorFlow's and MLModelScope's Mask R-CNN);
    ``image``: each mask covers the model input (mapped back like the boxes)."""
    mask_threshold: Fraction | None = None
    """A mask pixel belongs to the instance when its score is at least this (0.5 if unset)."""
    probability_map: ProbabilityMap | None = None
    """``probability-map``: how regions become boxes (filled with the defaults if left out)."""
    yolox: Yolox | None = None
    """``yolox``: its grid's strides (filled with YOLOX's 8, 16, 32 if left out)."""
    gfl: Gfl | None = None
    """``gfl``: its heads (required)."""
    ssd: Ssd | None = None
    """``ssd``: its anchors and box coder (required)."""

    def __post_init__(self) -> None:
        if self.layout in HEADS or any(getattr(self, h) is not None for h in HEADS):
            self._check_head()
            return
        if self.layout == PROBABILITY_MAP or self.probability_map is not None:
            self._check_map()
            return
        packed = self.layout in PACKED_LAYOUTS
        if packed and self.box_format != "cxcywh":
            raise ValueError(
                f"layout {self.layout} packs boxes as cxcywh: box_format {self.box_format!r} "
                "cannot apply to it"
            )
        if packed:
            for name in ("scores", "classes", "count", "masks"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"layout {self.layout} packs boxes and scores in one tensor: `{name}` "
                        "names a separate output (layout separate)"
                    )
        elif self.scores is None:
            raise ValueError("layout separate needs `scores`: the output of the boxes' scores")
        if self.masks is None and (self.mask_kind, self.mask_threshold) != (None, None):
            raise ValueError("mask_kind and mask_threshold describe `masks`: name that output")
        if self.masks is not None and self.mask_kind is None:
            raise ValueError(
                "masks need `mask_kind`: box (each mask covers its box) or image (the input)"
            )

    def _check_map(self) -> None:
        """A probability map makes its own boxes, class 0, scored by their regions."""
        if self.layout != PROBABILITY_MAP:
            raise ValueError(f"probability_map describes layout probability-map, not {self.layout}")
        named = ("scores", "classes", "count", "masks", "mask_kind", "mask_threshold")
        given = [name for name in named if getattr(self, name) is not None]
        given += ["normalized"] if self.normalized else []
        given += ["box_format"] if self.box_format != "cxcywh" else []
        given += ["score_threshold"] if self.score_threshold != 0.0 else []
        if given:
            raise ValueError(
                f"layout probability-map makes its own boxes from the map, one class, scored by "
                f"each region's mean probability: `{given[0]}` does not apply to it (threshold "
                "the regions with `probability_map: {box_threshold: ...}`)"
            )
        if self.probability_map is None:
            msgspec.structs.force_setattr(self, "probability_map", ProbabilityMap())

    def _check_head(self) -> None:
        """A raw head's layout has its section (``detection_heads``) and no field it does not
        read: its boxes are decoded in input pixels (``ssd``: in its anchors' units and
        format), its classes are its score columns."""
        wrong = [h for h in HEADS if h != self.layout and getattr(self, h) is not None]
        if wrong:
            raise ValueError(
                f"the `{wrong[0]}` section describes layout {wrong[0]}, not {self.layout}"
            )
        if self.layout == "yolox" and self.yolox is None:
            msgspec.structs.force_setattr(self, "yolox", Yolox())
        if getattr(self, self.layout) is None:
            raise ValueError(f"layout {self.layout} needs its `{self.layout}` section")
        ssd = self.layout == "ssd"
        named = ("classes", "count", "masks", "mask_kind", "mask_threshold", "probability_map")
        unread = [name for name in named if getattr(self, name) is not None]
        unread += ["scores"] if self.scores is not None and not ssd else []
        unread += ["normalized"] if self.normalized and not ssd else []
        unread += ["box_format"] if self.box_format != "cxcywh" and not ssd else []
        if unread:
            raise ValueError(
                f"layout {self.layout} decodes its own boxes and classes: `{unread[0]}` does "
                "not apply to it"
            )
        if ssd and self.scores is None:
            raise ValueError("layout ssd needs `scores`: the output of the anchors' class scores")

    @property
    def extra_outputs(self) -> list[OutputName]:
        """The other outputs this section reads, in a fixed order."""
        named = (self.scores, self.classes, self.count, self.masks)
        heads = self.gfl.outputs if self.gfl is not None else []
        return [n for n in named if n is not None] + heads


LATE_DETECTION_FIELDS = (
    "scores",
    "classes",
    "count",
    "masks",
    "mask_kind",
    "mask_threshold",
    "probability_map",
    "yolox",
    "gfl",
    "ssd",
)
"""``Detection`` fields added after detection manifests were published: left out while unset."""


class Segmentation(_Strict, frozen=True, kw_only=True):
    """How a semantic segmentation output is read into one class per pixel."""

    form: Literal["logits", "classes", "probability"]
    """``logits``: a score per class and pixel, the class is the argmax; ``classes``: the
    class index per pixel; ``probability``: one foreground score per pixel, class 1 where it
    is at least ``threshold``, else 0."""
    layout: Literal["NCHW", "NHWC"] = "NCHW"
    """Where ``logits`` keep the classes: axis 1 (NCHW) or last (NHWC)."""
    threshold: Fraction = 0.5


class Binary(_Strict, frozen=True, kw_only=True):
    """A ``type: binary`` output: one value per sample (or frame), the probability of the
    positive class (a sigmoid's, in [0, 1]) or, ``form: logit``, the sigmoid's input; read as
    positive where the probability is at or above ``threshold``."""

    threshold: Fraction = 0.5
    form: Literal["probability", "logit"] | None = None
    """``probability`` (left out: the same) or ``logit`` (the probability is its sigmoid,
    computed in float64). A late field, left out of the stored data while unset."""

    @property
    def logit(self) -> bool:
        return self.form == "logit"


LATE_BINARY_FIELDS = ("form",)
"""``Binary`` fields added after binary outputs were published: left out while unset."""


class State(_Strict, frozen=True, kw_only=True):
    """A state input (``registry.input_kinds``): zeros of the input's ``shape`` with the batch's
    size inserted at ``batch_axis``, fed with every call; in a streamed run, each chunk's
    output ``next`` is fed back to it for the next chunk."""

    batch_axis: Annotated[int, b.BATCH_AXIS.meta] | None = None
    """Required (refused, with why, when left out): where the batch axis goes among the model
    input's axes (0..len(shape))."""
    next: OutputName | None = None
    """The model output carried into this input from one chunk to the next."""


class Stream(_Strict, frozen=True, kw_only=True):
    """The input a sample is streamed through (``pinbench.worker.stream``): cut along its
    first axis into chunks of ``chunk`` rows, each fed with the ``context`` rows before it."""

    chunk: Annotated[int, b.STREAM_CHUNK.meta]
    context: Annotated[int, b.STREAM_CONTEXT.meta] = 0


FLOAT32_TINY = 1.1754943508222875e-38
FLOAT32_MAX = 3.4028234663852886e38
"""``numpy.finfo(numpy.float32)``'s ``tiny`` and ``max``: the range of a normal float32."""


class Quantization(_Strict, frozen=True, kw_only=True):
    """A quantized TensorFlow Lite tensor's affine map as its file records it: ``real = (q -
    zero_point) * scale`` (decision 280). Declared on an input, the float values the steps make
    are quantized to the tensor's integers; on an output, its integers are dequantized."""

    scale: Annotated[float, msgspec.Meta(ge=FLOAT32_TINY, le=FLOAT32_MAX)]
    """A float32's positive normal range, closed (a manifest's bounds have no open end)."""
    zero_point: Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]


ConstantValue = int | float | bool | list[Any]
"""A constant input's value: a number or nested lists of numbers (``input_kinds``)."""


class Input(_Strict, frozen=True, kw_only=True):
    name: OutputName
    """A layer name, or an index into the model's inputs."""
    type: Literal["image", "tensor", "text"] = "tensor"
    element_type: ElementType = "float32"
    shape: list[Annotated[int, b.DIMENSION.meta]] = msgspec.field(default_factory=list)
    steps: list[InputStep] = msgspec.field(default_factory=list)
    value: ConstantValue | None = None
    """A constant input: fed unchanged with every call (a late field, see
    ``LATE_INPUT_FIELDS``; as are ``state`` and ``stream``)."""
    state: State | None = None
    stream: Stream | None = None
    quantization: Quantization | None = None
    """A quantized TFLite input's scale and zero point (a late field)."""
    pad_batch: PadBatch | None = None
    """How a batch of samples of different lengths is padded (``row_steps.PadBatch``; a late
    field, as is ``mask_of``)."""
    mask_of: str | None = None
    """This input is the attention mask of the named input: 1 over each sample's own length,
    0 over its padding, made at each call (``worker.lengths``)."""

    def __post_init__(self) -> None:
        if self.quantization is not None and self.element_type != "float32":
            raise ValueError(
                f"input {self.name!r} declares a quantization: its element type is the "
                f"float32 its steps make before quantizing, not {self.element_type}"
            )
        from pinbench.registry.input_kinds import check_input

        check_input(self)


class Output(_Strict, frozen=True, kw_only=True):
    name: OutputName
    type: Literal[
        "classification",
        "tensor",
        "embedding",
        "detection",
        "segmentation",
        "text",
        "binary",
        "generation",
    ] = "tensor"
    steps: list[OutputStep] = msgspec.field(default_factory=list)
    labels: LabelsRef | None = None
    detection: Detection | None = None
    """How a ``type: detection`` output is read (added later: left out of the stored data
    while unset, see ``LATE_OUTPUT_FIELDS``)."""
    segmentation: Segmentation | None = None
    """How a ``type: segmentation`` output is read (likewise a late field)."""
    ctc: Ctc | None = None
    """How a ``type: text`` output is decoded (likewise a late field)."""
    binary: Binary | None = None
    """How a ``type: binary`` output is read (likewise a late field; filled in when left out)."""
    quantization: Quantization | None = None
    """A quantized TFLite output's scale and zero point (likewise a late field)."""
    views: Literal["mean", "max", "model"] | None = None
    """Where inputs have views (``registry.row_steps``): how this output's ``k`` rows per
    sample become one answer (likewise a late field)."""

    def __post_init__(self) -> None:
        if self.type == "binary" and self.binary is None:
            msgspec.structs.force_setattr(self, "binary", Binary())
        sections = (
            ("detection", "detection"),
            ("segmentation", "segmentation"),
            ("ctc", "text"),
            ("binary", "binary"),
        )
        for section, kind in sections:
            if getattr(self, section) is not None and self.type != kind:
                raise ValueError(
                    f"output {self.name!r} has a `{section}` section but type {self.type!r}: "
                    f"give it `type: {kind}`"
                )
        if self.type == "text" and self.ctc is None:
            raise ValueError(
                f"output {self.name!r} of type text needs a `ctc` section: how it is decoded, "
                "e.g. `ctc: {blank: 0, alphabet: {file: keys.txt}, space: true}`"
            )


def check_quantization(model_format: str, ports: list[Input | Output]) -> None:
    """A declared ``quantization`` is applied by the TensorFlow Lite predictor alone."""
    for port in ports:
        if port.quantization is not None and model_format != "tflite":
            side = "input" if isinstance(port, Input) else "output"
            raise ValueError(
                f"{side} {port.name!r} declares a quantization, which only a TensorFlow Lite "
                f"model's quantized tensors take; the model's format is {model_format}"
            )
