"""Manifests: the typed YAML schema of the four kinds, validated at the edge.

A manifest is data, not code: identity, files with sha256, constraints on other kinds, typed
pre/post-processing steps and attributes. ``load_manifest`` turns YAML into one of
``ModelManifest | FrameworkManifest | DatasetManifest | ImageManifest`` or raises
``ManifestError`` naming the field (``$.files[0].sha256``) and what was expected.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from pinbench import bounds as b
from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.sources.uri import parse_source
from pinbench.errors import InvalidDocument, UserError
from pinbench.registry.explain import VersionText, explain
from pinbench.registry.names import KINDS, check_name
from pinbench.registry.ranges import Range, parse_version
from pinbench.registry.yamlsafe import YamlRefused, load_yaml, read_yaml_file

_SHA256 = re.compile(r"[0-9a-f]{64}")
_MD5 = re.compile(r"[0-9a-f]{32}")
REMOTE_SCHEMES = ("https://", "http://", "hf://", "dvc://")
"""Sources whose bytes are fetched (and pinned) at publish; see ``pinbench.artifacts.sources``."""
_IMAGE_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_RELEASE = re.compile(r"[0-9]+(\.[0-9]+)*[0-9A-Za-z.]*")


class ManifestError(InvalidDocument):
    what = "manifest"


class _Strict(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Unknown fields are errors, values are immutable."""


def _check_range(text: str) -> None:
    try:
        Range.parse(text)
    except UserError as exc:
        raise ValueError(str(exc)) from None


PATH_MAX_LENGTH = 1000
"""The database's column for a file path (``artifact_files.path``)."""


def check_relative_path(path: str) -> str:
    """A file path inside an artifact: relative, normalised, never escaping the artifact."""
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        raise ValueError(f"file path {path!r} must be a relative POSIX path inside the artifact")
    if posixpath.normpath(path) != path or path.split("/")[0] == "..":
        raise ValueError(f"file path {path!r} must be normalised and must not contain '..'")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ValueError(f"file path {path!r} must name a file: no empty, '.' or '..' part")
    if len(path) > PATH_MAX_LENGTH:
        raise ValueError(
            f"file path {path[:40]!r}... is {len(path)} characters: at most {PATH_MAX_LENGTH}"
        )
    return path


# ---------------------------------------------------------------- shared parts


class FileEntry(_Strict, frozen=True, kw_only=True):
    path: str
    sha256: str | None = None
    """Required, except for a file with a remote source: publishing fetches it, computes the
    sha256 and stores the manifest with it filled in."""
    size: Annotated[int, b.FILE_SIZE.meta] | None = None
    source: str | None = None
    """Where the bytes come from: ``file:REL`` (relative to the manifest) or a URI
    (``https://``, ``hf://ORG/REPO@REV/PATH``, ``dvc://REPO@REV/PATH``)."""
    md5: str | None = None
    """A legacy digest (MLModelScope manifests, DVC): checked when the bytes are fetched and
    kept beside the sha256. Never a substitute for it."""

    def __post_init__(self) -> None:
        check_relative_path(self.path)
        if self.sha256 is None:
            if not self.remote:
                raise ValueError(
                    f"sha256 of {self.path!r} is required (it may be left out only for a file "
                    f"with a remote source: {', '.join(REMOTE_SCHEMES)})"
                )
        elif not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"sha256 of {self.path!r} must be 64 lowercase hex digits")
        if self.remote:
            assert self.source is not None
            try:
                parse_source(self.source)
            except UserError as exc:
                raise ValueError(str(exc)) from None
        if self.md5 is not None and not _MD5.fullmatch(self.md5):
            raise ValueError(f"md5 of {self.path!r} must be 32 lowercase hex digits")

    @property
    def remote(self) -> bool:
        return self.source is not None and self.source.startswith(REMOTE_SCHEMES)

    @property
    def digest(self) -> Digest:
        if self.sha256 is None:
            raise UserError(
                f"file {self.path!r} has no sha256 yet: publish fetches it from {self.source}"
            )
        return Digest(self.sha256)


class Constraint(_Strict, frozen=True, kw_only=True):
    """A constraint on another artifact: its name and an npm-style range."""

    name: str
    range: VersionText = "*"

    def __post_init__(self) -> None:
        check_name(self.name)
        _check_range(self.range)


class Platform(_Strict, frozen=True, kw_only=True):
    arch: Literal["amd64", "arm64"] = "amd64"
    device: Literal["cpu", "cuda", "rocm"] = "cpu"

    def key(self) -> str:
        return f"{self.arch}/{self.device}"


Scalar = str | int | float | bool


class _Common(_Strict, frozen=True, kw_only=True):
    name: str
    version: VersionText
    description: str = ""
    license: str | None = None
    references: list[str] = msgspec.field(default_factory=list)
    attributes: dict[str, Scalar] = msgspec.field(default_factory=dict)

    def _check_identity(self) -> None:
        check_name(self.name)
        try:
            parse_version(self.version)
        except UserError as exc:
            raise ValueError(str(exc)) from None
        for key, value in self.attributes.items():
            if isinstance(value, int) and not isinstance(value, bool):
                b.ATTRIBUTE_INT.check(f"attributes.{key}", value)

    @property
    def files_list(self) -> list[FileEntry]:
        return list(getattr(self, "files", []))


def _check_files(files: list[FileEntry], *, required: bool) -> None:
    if required and not files:
        raise ValueError("files must list at least one file")
    seen: set[str] = set()
    for f in files:
        if f.path in seen:
            raise ValueError(f"file path {f.path!r} is listed twice")
        seen.add(f.path)


# ---------------------------------------------------------------- pre/post-processing steps


class Decode(_Strict, frozen=True, kw_only=True):
    color_mode: Literal["rgb", "bgr", "grayscale"] = "rgb"


Pixels = Annotated[int, b.PIXELS.meta]
Fraction = Annotated[float, b.FRACTION.meta]
PadValue = Annotated[float, b.PAD_VALUE.meta]


class Resize(_Strict, frozen=True, kw_only=True):
    size: tuple[Pixels, Pixels]
    """Height, width."""
    method: Literal["nearest", "bilinear", "bicubic", "area", "lanczos"] = "bilinear"
    keep_aspect_ratio: bool = False


class Crop(_Strict, frozen=True, kw_only=True):
    size: tuple[Pixels, Pixels]
    mode: Literal["center"] = "center"


class MaxDimension(_Strict, frozen=True, kw_only=True):
    """Longest-side resize: the longer side becomes ``size`` (up or down), the aspect ratio
    kept (MLModelScope's ``max_dimension``); images of different shapes stay different until a
    pad, letterbox, resize or crop makes them one size."""

    size: Pixels
    method: Literal["nearest", "bilinear", "bicubic", "area", "lanczos"] = "bilinear"


class Normalize(_Strict, frozen=True, kw_only=True):
    """``(x - mean) / std`` per channel, or ``x * scale``."""

    mean: list[Annotated[float, b.NORMALIZE.meta]] = msgspec.field(default_factory=lambda: [0.0])
    std: list[Annotated[float, b.NORMALIZE.meta]] | None = None
    scale: Annotated[float, b.NORMALIZE.meta] | None = None

    def __post_init__(self) -> None:
        if self.std is not None and self.scale is not None:
            raise ValueError("normalize takes either std or scale, not both")
        if self.std is not None and any(s == 0 for s in self.std):
            raise ValueError("normalize std must not contain 0")


class Layout(_Strict, frozen=True, kw_only=True):
    to: Literal["NCHW", "NHWC", "CHW", "HWC"]


class ColorMode(_Strict, frozen=True, kw_only=True):
    to: Literal["rgb", "bgr", "grayscale"]


ElementType = Literal["float32", "float16", "float64", "uint8", "int8", "int32", "int64", "bool"]


class DType(_Strict, frozen=True, kw_only=True):
    to: ElementType


class Tokenize(_Strict, frozen=True, kw_only=True):
    """Text to token ids with a Hugging Face ``tokenizers`` file of the model artifact; one
    of the encoding's fields feeds this input (each text input has its own step)."""

    tokenizer: str
    """The ``tokenizer.json`` file, among the model's files."""
    output: Literal["input_ids", "attention_mask", "token_type_ids"] = "input_ids"
    max_length: Annotated[int, b.MAX_LENGTH.meta]
    truncation: bool = False
    padding: Literal["fixed"] = "fixed"

    def __post_init__(self) -> None:
        check_relative_path(self.tokenizer)


Placement = Literal["top-left", "center"]


class Pad(_Strict, frozen=True, kw_only=True):
    """Pad each image to a square of its longer side (no scaling), e.g. NudeNet's pipeline."""

    to: Literal["square"] = "square"
    placement: Placement = "top-left"
    value: PadValue = 0


class Letterbox(_Strict, frozen=True, kw_only=True):
    """Scale each image to fit ``size`` (height, width) keeping its aspect ratio, then pad to
    the size (ultralytics' ``LetterBox``)."""

    size: tuple[Pixels, Pixels]
    placement: Placement = "center"
    value: PadValue = 114
    method: Literal["nearest", "bilinear", "bicubic", "area", "lanczos"] = "bilinear"


class ResizeHeight(_Strict, frozen=True, kw_only=True):
    """A text line to ``height`` keeping its aspect ratio, its width ``ceil(height * w / h)``
    but at most ``max_width``, then padded on the right with ``value`` to ``max_width``
    (PaddleOCR's ``resize_norm_img`` for its recognisers)."""

    height: Pixels
    max_width: Pixels
    value: PadValue = 0
    """In the samples' values where the step stands: PaddleOCR pads with 0 after its
    normalize (a grey of 127.5 before it)."""
    method: Literal["nearest", "bilinear", "bicubic", "area", "lanczos"] = "bilinear"


class ResizeMultiple(_Strict, frozen=True, kw_only=True):
    """Each image to its own size, each side a multiple of ``multiple``: PaddleOCR's det
    resize (``DetResizeForTest``, ``limit_side_len``/``limit_type``), see ``size_of``. Images
    of different shapes may stay different, and are then fed one at a time."""

    multiple: Annotated[int, b.MULTIPLE.meta] = 32
    limit_side: Pixels = 960
    limit_type: Literal["max", "min", "resize_long"] = "max"
    method: Literal["nearest", "bilinear", "bicubic", "area", "lanczos"] = "bilinear"

    def size_of(self, width: int, height: int) -> tuple[int, int]:
        """The ``(width, height)`` an image of ``width x height`` is resized to, computed as
        PaddleOCR computes it (``resize_image_type0``), in the same float operations: a ratio
        of 1 unless the longer side is above ``limit_side`` (``max``: the longer side to it)
        or the shorter one below it (``min``: the shorter side to it), or always the longer
        side to it (``resize_long``); each side scaled and truncated (``int``), then rounded to
        the nearest multiple (Python's ``round``: half to even) and at least one multiple."""
        h, w, limit = height, width, self.limit_side
        ratio = 1.0
        if self.limit_type == "max" and max(h, w) > limit:
            ratio = float(limit) / h if h > w else float(limit) / w
        elif self.limit_type == "min" and min(h, w) < limit:
            ratio = float(limit) / h if h < w else float(limit) / w
        elif self.limit_type == "resize_long":
            ratio = float(limit) / max(h, w)
        m = self.multiple
        return (
            max(int(round(int(w * ratio) / m) * m), m),
            max(int(round(int(h * ratio) / m) * m), m),
        )


class DecodeAudio(_Strict, frozen=True, kw_only=True):
    """A WAV file to a 1-D float32 waveform in [-1, 1] (``pinbench.evaluator.audio``): its
    channels mixed down (``mix``, their mean) or one kept (its index from 0), as declared."""

    channel: Literal["mix"] | Annotated[int, b.AUDIO_CHANNEL.meta]
    """Required: how a file's channels become one (a mono file: ``mix`` or ``0``)."""
    rate: Annotated[int, b.SAMPLE_RATE.meta] | None = None
    """The sample rate every file must have (Hz); a file of another is refused. Required
    unless a ``resample`` step follows (then files may have any rate)."""


class Resample(_Strict, frozen=True, kw_only=True):
    """Each waveform from its file's sample rate to ``rate`` (SciPy's ``resample_poly``
    computed in NumPy, ``evaluator.polyphase``); it follows ``decode_audio`` directly."""

    rate: Annotated[int, b.SAMPLE_RATE.meta]


class FitLength(_Strict, frozen=True, kw_only=True):
    """Each waveform to ``length`` samples: a shorter one padded at its end with ``value``; a
    longer one refused, naming its file, unless ``crop`` (then its first ``length`` kept)."""

    length: Annotated[int, b.AUDIO_LENGTH.meta]
    value: Annotated[float, b.AUDIO_VALUE.meta] = 0.0
    crop: bool = False


class ExpandDims(_Strict, frozen=True, kw_only=True):
    """A new axis of size 1 in each sample, at ``axis`` of the sample's axes (the batch axis
    not counted; -1: last): a ``(T,)`` waveform with ``axis: 0`` becomes ``(1, T)``."""

    axis: Annotated[int, b.AXIS.meta]


AUDIO_STEPS = ("decode_audio", "resample", "fit_length")
"""The steps that read waveforms decoded from audio files (``data.format: audio``)."""


class InputStep(_Strict, frozen=True, kw_only=True, omit_defaults=True):
    """Exactly one of the fields: ``- resize: {size: [224, 224]}``."""

    tokenize: Tokenize | None = None
    decode: Decode | None = None
    resize: Resize | None = None
    max_dimension: MaxDimension | None = None
    crop: Crop | None = None
    pad: Pad | None = None
    letterbox: Letterbox | None = None
    normalize: Normalize | None = None
    layout: Layout | None = None
    color_mode: ColorMode | None = None
    dtype: DType | None = None
    resize_height: ResizeHeight | None = None
    resize_multiple: ResizeMultiple | None = None
    decode_audio: DecodeAudio | None = None
    resample: Resample | None = None
    fit_length: FitLength | None = None
    expand_dims: ExpandDims | None = None

    def __post_init__(self) -> None:
        _exactly_one(self)


class Softmax(_Strict, frozen=True, kw_only=True):
    axis: Annotated[int, b.AXIS.meta] = -1


class Argsort(_Strict, frozen=True, kw_only=True):
    descending: bool = True


class TopK(_Strict, frozen=True, kw_only=True):
    k: Annotated[int, b.TOP_K.meta] = 5


class Pool(_Strict, frozen=True, kw_only=True):
    """Token states ``(N, T, D)`` to one vector per sample: the mean over the tokens the
    attention mask (an input, by name) keeps, or the first token's (``cls``)."""

    mode: Literal["mean", "cls"] = "mean"
    mask: str | None = None
    """The input whose 0/1 values say which tokens count (required for ``mean``)."""

    def __post_init__(self) -> None:
        if self.mode == "mean" and self.mask is None:
            raise ValueError("mean pooling needs `mask`: the attention-mask input's name")


class L2Normalize(_Strict, frozen=True, kw_only=True):
    """Each vector divided by its Euclidean norm."""


class OutputStep(_Strict, frozen=True, kw_only=True, omit_defaults=True):
    softmax: Softmax | None = None
    argsort: Argsort | None = None
    topk: TopK | None = None
    pool: Pool | None = None
    l2_normalize: L2Normalize | None = None

    def __post_init__(self) -> None:
        _exactly_one(self)


def _exactly_one(step: msgspec.Struct) -> None:
    names = step.__struct_fields__
    chosen = [n for n in names if getattr(step, n) is not None]
    if len(chosen) != 1:
        raise ValueError(
            f"a step must have exactly one of {', '.join(names)}; got {chosen or 'none'}"
        )


class LabelsRef(_Strict, frozen=True, kw_only=True):
    path: str
    sha256: str | None = None
    """Left out, it is the labels file's own sha256 (filled in at publish)."""

    def __post_init__(self) -> None:
        check_relative_path(self.path)
        if self.sha256 is not None and not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"sha256 of labels {self.path!r} must be 64 lowercase hex digits")


class Nms(_Strict, frozen=True, kw_only=True):
    """Greedy non-maximum suppression per class (``pinbench.tasks.detection.nms``)."""

    iou: Fraction = 0.45
    max_detections: Annotated[int, b.MAX_DETECTIONS.meta] = 100


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


DetectionLayouts = Literal["yolov8", "yolov5", "separate", "probability-map"]
BoxFormats = Literal["xyxy", "xywh", "cxcywh", "yxyx"]
PACKED_LAYOUTS = ("yolov8", "yolov5")
"""Layouts packing boxes and class scores in the one output tensor (boxes as cxcywh)."""
PROBABILITY_MAP = "probability-map"
"""The layout of a DBNet-style ``(N, 1, H, W)`` map of one class's per-pixel probability."""
OutputName = str | Annotated[int, b.PORT_INDEX.meta]
"""A model output's name, or an index into the model's outputs."""


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

    def __post_init__(self) -> None:
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

    @property
    def extra_outputs(self) -> list[OutputName]:
        """The other outputs this section reads, in a fixed order."""
        named = (self.scores, self.classes, self.count, self.masks)
        return [n for n in named if n is not None]


LATE_DETECTION_FIELDS = (
    "scores",
    "classes",
    "count",
    "masks",
    "mask_kind",
    "mask_threshold",
    "probability_map",
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


class CtcAlphabet(_Strict, frozen=True, kw_only=True):
    """Where a CTC output's characters are, one per line in class order (blank and space
    left out): a ``file`` of the model (PaddleOCR's dict format) or an ONNX model's metadata
    entry (``metadata``: its key, ``character`` in rapidocr's PP-OCR recognisers)."""

    file: str | None = None
    metadata: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None

    def __post_init__(self) -> None:
        if (self.file is None) == (self.metadata is None):
            raise ValueError(
                "a CTC alphabet is either a `file` of the model or an ONNX `metadata` key"
            )
        if self.file is not None:
            check_relative_path(self.file)


class Ctc(_Strict, frozen=True, kw_only=True):
    """How a ``type: text`` output ``(N, T, C)`` is read: CTC greedy decoding
    (``pinbench.tasks.text_recognition``). Class ``blank`` is CTC's blank; the others are the
    alphabet's characters in order, then a space when ``space`` is set (PaddleOCR's
    ``use_space_char``), so C = len(alphabet) + 1 (+ 1)."""

    blank: Annotated[int, b.CTC_BLANK.meta]
    """The blank's class index (0 in PaddleOCR's recognisers): given, never assumed."""
    alphabet: CtcAlphabet
    space: bool = False


class Binary(_Strict, frozen=True, kw_only=True):
    """A ``type: binary`` output: each value is the probability of the positive class (a
    sigmoid's, in [0, 1]), read as positive at or above ``threshold``."""

    threshold: Fraction = 0.5


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
    """The input a sample is streamed through (``pinbench.evaluator.stream``): cut along its
    first axis into chunks of ``chunk`` rows, each fed with the ``context`` rows before it."""

    chunk: Annotated[int, b.STREAM_CHUNK.meta]
    context: Annotated[int, b.STREAM_CONTEXT.meta] = 0


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

    def __post_init__(self) -> None:
        from pinbench.registry.input_kinds import check_input

        check_input(self)


class Output(_Strict, frozen=True, kw_only=True):
    name: OutputName
    type: Literal[
        "classification", "tensor", "embedding", "detection", "segmentation", "text", "binary"
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


# ---------------------------------------------------------------- the four kinds


class TrainedBy(_Strict, frozen=True, kw_only=True):
    """The training run whose final weights a model version holds (``run --publish-as``).

    Publishing checks it against the run recorded in this registry: the run succeeded, is
    a run of ``lockfile``, and its final weights' sha256 is the sha256 of the file ``weights``
    (``registry.trained``); a claim that does not hold is refused."""

    run: str
    """The run's id."""
    lockfile: str
    """The sha256 of the run's lockfile."""
    weights: str
    """The path of the model file holding the run's final weights."""


class ModelManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="model"):
    framework: Constraint
    format: Literal[
        "onnx",
        "torchscript",
        "torch-export",
        "safetensors",
        "torch-pickle",
        "savedmodel",
        "keras",
        "tf-graphdef",
        "caffe",
        "caffe2",
        "mxnet",
    ]
    """The last four come from MLModelScope manifests (``import-mlmodelscope``): described and
    published, but no predictor loads them; a run stops with an error naming the framework or
    the format."""
    files: list[FileEntry]
    architecture: str | None = None
    """For safetensors weights: the architecture the weights load into."""
    trusted: bool = False
    """Allow unpickling (format ``torch-pickle``). Never implied."""
    inputs: list[Input] = msgspec.field(default_factory=list)
    outputs: list[Output] = msgspec.field(default_factory=list)
    trained_by: TrainedBy | None = None
    """The training run these weights come from, checked when published."""

    def __post_init__(self) -> None:
        self._check_identity()
        _check_files(self.files, required=True)
        paths = {f.path for f in self.files}
        if self.trained_by is not None and self.trained_by.weights not in paths:
            raise ValueError(
                f"trained_by.weights {self.trained_by.weights!r} is not among the files"
            )
        for out in self.outputs:
            if out.labels is not None and out.labels.path not in paths:
                raise ValueError(
                    f"labels file {out.labels.path!r} of output {out.name!r} is not among the "
                    "files: list it under `files` (`pinbench manifest model MODEL "
                    f"{out.labels.path}` does)"
                )
            if out.ctc is not None:
                _check_alphabet(out, self.format, paths)
        _check_keys("inputs", [i.name for i in self.inputs])
        _check_keys("outputs", [o.name for o in self.outputs])
        names = {str(i.name): i for i in self.inputs}
        for inp in self.inputs:
            _check_tokenize(inp, paths)
            _check_audio(inp)
        from pinbench.registry.input_kinds import check_model_inputs

        check_model_inputs(self.inputs, self.outputs)
        for out in self.outputs:
            for ostep in out.steps:
                if ostep.pool is None or ostep.pool.mask is None:
                    continue
                mask = names.get(ostep.pool.mask)
                if mask is None:
                    raise ValueError(
                        f"output {out.name!r} pools with mask {ostep.pool.mask!r}, which is not "
                        f"an input (inputs: {', '.join(sorted(names))})"
                    )
                first = mask.steps[0].tokenize if mask.steps else None
                if first is not None and first.output != "attention_mask":
                    raise ValueError(
                        f"output {out.name!r} pools with mask {mask.name!r}, whose tokenize "
                        f"step gives {first.output}, not attention_mask"
                    )


def _check_keys(side: str, names: list[str | int]) -> None:
    """Each declared input (output) is fed (read) by its name as text, an index by its digits:
    two whose names read the same would share one array (the second's silently lost)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        first = seen.setdefault(str(name), i)
        if first != i:
            raise ValueError(
                f"{side}[{first}] ({names[first]!r}) and {side}[{i}] ({name!r}) are both "
                f"{str(name)!r}: a run keys each declared {side[:-1]} by its name as text (an "
                "index as its digits), so give each its own"
            )


def _check_alphabet(out: Output, model_format: str, paths: set[str]) -> None:
    assert out.ctc is not None
    alphabet = out.ctc.alphabet
    if alphabet.file is not None and alphabet.file not in paths:
        raise ValueError(
            f"the alphabet file {alphabet.file!r} of output {out.name!r} is not among the files"
        )
    if alphabet.metadata is not None and model_format != "onnx":
        raise ValueError(
            f"output {out.name!r} reads its alphabet from ONNX metadata, but the model's "
            f"format is {model_format}: give the alphabet as a `file`"
        )


def _check_tokenize(inp: Input, paths: set[str]) -> None:
    """A tokenize step is the input's first, only a dtype step may follow it, and its
    tokenizer is a file of the model."""
    for i, step in enumerate(inp.steps):
        if step.tokenize is None:
            continue
        if i != 0:
            raise ValueError(f"input {inp.name!r}: tokenize must be the first step")
        if step.tokenize.tokenizer not in paths:
            raise ValueError(
                f"tokenizer file {step.tokenize.tokenizer!r} of input {inp.name!r} is not "
                "among the files"
            )
        if any(later.dtype is None for later in inp.steps[1:]):
            raise ValueError(f"input {inp.name!r}: only a dtype step may follow tokenize")


def _check_audio(inp: Input) -> None:
    """``decode_audio`` is the input's first step, ``resample`` (if any) the next, the other
    audio steps come after it, and the waveform's sample rate is declared (``decode_audio``'s
    ``rate`` or a ``resample``)."""
    kinds = [step_name(step) for step in inp.steps]
    if not any(k in AUDIO_STEPS for k in kinds):
        return
    if kinds[0] != "decode_audio" or "decode_audio" in kinds[1:]:
        raise ValueError(
            f"input {inp.name!r}: decode_audio must be the first step (and only once) of an "
            "input with audio steps (resample, fit_length)"
        )
    if kinds.count("resample") > 1 or ("resample" in kinds and kinds[1] != "resample"):
        raise ValueError(f"input {inp.name!r}: resample must follow decode_audio directly, once")
    first = inp.steps[0].decode_audio
    assert first is not None
    if first.rate is None and "resample" not in kinds:
        raise ValueError(
            f"input {inp.name!r}: declare the sample rate the model takes: `decode_audio: "
            "{rate: 16000, ...}` (every file must have it) or a `resample: {rate: 16000}` step "
            "after decode_audio (files of any rate are resampled)"
        )


def step_name(step: InputStep) -> str:
    """The one field a step sets: ``resize`` for ``- resize: {...}``."""
    return next(n for n in step.__struct_fields__ if getattr(step, n) is not None)


class Requirement(_Strict, frozen=True, kw_only=True):
    """One hash-pinned package: ``name==version`` with its allowed sha256 hashes."""

    name: str
    version: VersionText
    hashes: list[str]

    def __post_init__(self) -> None:
        if not self.hashes:
            raise ValueError(f"requirement {self.name} must list at least one sha256 hash")
        for h in self.hashes:
            if not _IMAGE_DIGEST.fullmatch(h):
                raise ValueError(f"hash {h!r} of {self.name} must be 'sha256:' + 64 hex digits")


class Environment(_Strict, frozen=True, kw_only=True):
    """How to obtain the framework on one platform: an image, a requirements set, or both."""

    platform: Platform = msgspec.field(default_factory=Platform)
    image: Constraint | None = None
    requirements: list[Requirement] = msgspec.field(default_factory=list)
    python: str | None = None

    def __post_init__(self) -> None:
        if self.image is None and not self.requirements:
            raise ValueError(
                f"environment {self.platform.key()} needs an image, requirements, or both"
            )


class FrameworkManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="framework"):
    environments: list[Environment]
    files: list[FileEntry] = msgspec.field(default_factory=list)
    installs: VersionText | None = None
    """The framework release its environments install (``1.31.0``), what a run checks it
    has; left out, the artifact's own version. Set it when a corrected manifest of the same
    release is published as a new artifact version (decision 80)."""

    def __post_init__(self) -> None:
        self._check_identity()
        if self.installs is not None and not _RELEASE.fullmatch(self.installs):
            raise ValueError(
                f"installs {self.installs!r} must be a release as the framework reports it, "
                "e.g. '1.31.0' or '2.21.0rc1' (no local label)"
            )
        _check_files(self.files, required=False)
        if not self.environments:
            raise ValueError("environments must list at least one platform")
        keys = [e.platform.key() for e in self.environments]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"platform {dupes[0]} is listed twice in environments")

    @property
    def installed_version(self) -> str:
        """The framework release a run must find: ``installs``, else the artifact's version."""
        return self.installs if self.installs is not None else self.version

    def environment_for(self, platform: Platform) -> Environment | None:
        for env in self.environments:
            if env.platform == platform:
                return env
        return None


LabelFormats = Annotated[str, msgspec.Meta(max_length=64, pattern="^[a-z][a-z0-9-]*$")]
"""A label format some task reads (``pinbench.tasks``: each task lists its own)."""


class LabelFormat(_Strict, frozen=True, kw_only=True):
    format: LabelFormats
    path: str | None = None
    classes: Annotated[int, b.CLASSES.meta] | None = None
    names: str | None = None
    """A class-names file among the files (added later: left out of the stored data while
    unset, see ``LATE_LABEL_FIELDS``)."""
    ignore_index: int | None = None
    """``masks``: the mask value of pixels no metric counts (e.g. 255, VOC's borders); a late
    field likewise."""

    def __post_init__(self) -> None:
        if self.ignore_index is not None and self.format != "masks":
            raise ValueError("ignore_index is a mask value: it goes with labels of format masks")
        if self.format == "masks" and (self.path is None or self.classes is None):
            raise ValueError(
                "masks labels need `path` (the folder of one mask PNG per sample file) and "
                "`classes` (how many classes the mask values index)"
            )
        if self.format == "masks":
            assert self.path is not None and self.classes is not None
            if self.path != ".":
                check_relative_path(self.path)
            b.MASK_CLASSES.check("labels.classes", self.classes)
            no_class = b.between(self.classes, b.MASK_VALUE.high, "a mask value, no class index")
            no_class.check("labels.ignore_index", self.ignore_index)
        if self.format == "imagefolder" and self.path is not None:
            raise ValueError(
                "imagefolder labels are the folders the samples are in: give no `path` "
                "(a class-names file goes in `names`)"
            )


PER_FILE_FORMATS = ("images", "npy-files", "audio")
"""Sample formats whose ``path`` is a folder of one file per sample."""


class SampleFiles(_Strict, frozen=True, kw_only=True):
    """Where the samples are: an ``.npy`` array ``(N, H, W[, C])`` among the files, or a
    folder of sample files (``images``: JPEG/PNG/WebP/BMP decoded by the input's ``decode``
    step; ``npy-files``: one ``.npy`` array per sample; ``text-lines``: a UTF-8 file, one
    text sample per line; ``audio``: PCM WAV files decoded by the input's ``decode_audio``
    step)."""

    format: Literal["npy", "images", "npy-files", "text-lines", "audio"] = "npy"
    path: str

    def __post_init__(self) -> None:
        if self.format in PER_FILE_FORMATS and self.path != ".":
            check_relative_path(self.path)


class DatasetManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="dataset"):
    files: list[FileEntry]
    labels: LabelFormat
    data: SampleFiles | None = None
    task: Annotated[str, msgspec.Meta(max_length=64, pattern="^[a-z][a-z0-9-]*$")] = (
        "classification"
    )
    """What the samples mean: a task of ``pinbench.tasks.registry`` (classification,
    sentence-similarity, detection, segmentation, other, ...), which reads the labels."""
    samples: Annotated[int, b.SAMPLES.meta] | None = None
    file_index: FileEntry | None = None
    """A file of the artifact that lists its other files, one ``sha256 size path`` line each
    (``registry.file_index``), for a dataset of more files than a manifest lists (decision
    118). Its sha256 pins every file it lists: publishing reads it and stores, records and
    locks each listed file as one of ``files``. It lies outside the data (and masks) folder."""

    def __post_init__(self) -> None:
        self._check_identity()
        index = self.file_index
        _check_files(self.files, required=index is None)
        paths = {f.path for f in self.files} if index is None else None
        if paths is not None:
            self._check_named(paths)
        per_file = self.data is not None and self.data.format in PER_FILE_FORMATS
        self._check_task(per_file)
        if index is not None:
            self._check_index_entry(index)
        elif paths is not None:
            self._check_data(paths)

    def _check_task(self, per_file: bool) -> None:
        """The task is one pinbench knows, and reads labels of this format (each task checks
        its own labels section)."""
        from pinbench.tasks.registry import check_dataset

        check_dataset(self.task, self.labels, per_file=per_file)

    @property
    def files_list(self) -> list[FileEntry]:
        """The files the manifest itself lists: ``files`` and the file index (whose lines list
        the rest: ``listing``)."""
        return [*self.files, self.file_index] if self.file_index is not None else list(self.files)

    def check_listing(self, paths: set[str]) -> None:
        """What needs the path of every file (``files``, the index and what it lists): the
        labels and class-names files among them, the sample layout; ``ValueError`` if not."""
        self._check_named(paths)
        self._check_data(paths)

    def _check_index_entry(self, index: FileEntry) -> None:
        if index.sha256 is None or index.remote:
            raise ValueError(
                f"file_index {index.path!r} is a local file of the artifact with its sha256 "
                "(it is read when publishing, before any other file)"
            )
        if any(f.path == index.path for f in self.files):
            raise ValueError(f"file_index {index.path!r} is also listed in files")
        from pinbench.registry.dataset_layout import folder_prefix

        folders = []
        if self.data is not None and self.data.format in PER_FILE_FORMATS:
            folders.append(("data", self.data.path))
        if self.labels.format == "masks" and self.labels.path is not None:
            folders.append(("masks", self.labels.path))
        for what, folder in folders:
            if index.path.startswith(folder_prefix(folder)):
                raise ValueError(
                    f"file_index {index.path!r} is inside the {what} folder {folder!r}, where "
                    "every file is a sample: keep it beside the folder"
                )

    def _check_named(self, paths: set[str]) -> None:
        masks = self.labels.format == "masks"
        label_file = None if masks else self.labels.path
        for what, path in (("labels", label_file), ("class-names", self.labels.names)):
            if path is not None and path not in paths:
                raise ValueError(f"{what} file {path!r} is not among the files")

    def _check_data(self, paths: set[str]) -> None:
        if self.data is None:
            return
        if self.data.format not in PER_FILE_FORMATS:
            if self.data.path not in paths:
                raise ValueError(f"data file {self.data.path!r} is not among the files")
            return
        from pinbench.registry.dataset_layout import (
            LayoutError,
            imagefolder_class,
            mask_paths,
            sample_paths,
        )

        masks = self.labels.format == "masks"
        if masks and self.data.format != "images":
            raise ValueError("masks labels go with image samples (data.format images)")
        extra = {p for p in (self.labels.path, self.labels.names) if p is not None}
        try:
            found = sample_paths(self.data.format, self.data.path, paths, extra=extra)
            if self.labels.format == "imagefolder":
                for path in found:
                    imagefolder_class(self.data.path, path)
            if masks:
                assert self.labels.path is not None  # LabelFormat checked
                mask_paths(found, self.data.path, self.labels.path, paths)
        except LayoutError as exc:
            raise ValueError(str(exc)) from None
        if self.samples is not None and self.samples != len(found):
            raise ValueError(
                f"samples is {self.samples} but the data folder {self.data.path!r} holds "
                f"{len(found)} sample files"
            )


class ImageManifest(_Common, frozen=True, kw_only=True, tag_field="kind", tag="image"):
    digest: str
    """The image's content digest ``sha256:...`` (the manifest or index digest)."""
    reference: str | None = None
    """Where it can be pulled from, e.g. ``127.0.0.1:5000/pinbench/onnxruntime``."""
    platform: Platform = msgspec.field(default_factory=Platform)

    def __post_init__(self) -> None:
        self._check_identity()
        if not _IMAGE_DIGEST.fullmatch(self.digest):
            raise ValueError("digest must be 'sha256:' followed by 64 lowercase hex digits")


Manifest = ModelManifest | FrameworkManifest | DatasetManifest | ImageManifest
MANIFEST_TYPES: dict[str, type[Manifest]] = {
    "model": ModelManifest,
    "framework": FrameworkManifest,
    "dataset": DatasetManifest,
    "image": ImageManifest,
}


# ---------------------------------------------------------------- loading and digests


def parse_manifest(data: object, *, source: str = "<manifest>") -> Manifest:
    """Validate already-parsed data (a mapping) as a manifest."""
    if not isinstance(data, dict):
        raise ManifestError(source=source, reason="expected a mapping at the top level")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in MANIFEST_TYPES:
        shown = repr(kind) if isinstance(kind, str | None) else f"a {type(kind).__name__}"
        raise ManifestError(
            source=source,
            reason=f"`kind` must be one of {', '.join(KINDS)}, got {shown} - at `$.kind`",
        )
    try:
        manifest = msgspec.convert(data, type=MANIFEST_TYPES[kind], strict=True)
    except msgspec.ValidationError as exc:
        reason = explain(str(exc), MANIFEST_TYPES[kind], data)
        raise ManifestError(source=source, reason=reason) from None
    try:
        canonical_json(manifest_data(manifest))
    except ValueError as exc:  # a non-finite float from data not read by yamlsafe
        raise ManifestError(source=source, reason=f"cannot be digested: {exc}") from None
    return manifest


def load_manifest_text(text: str, *, source: str = "<manifest>") -> Manifest:
    """Parse (YAML within ``yamlsafe``'s limits) and validate a manifest."""
    try:
        data = load_yaml(text)
    except YamlRefused as exc:
        raise ManifestError(source=source, reason=exc.reason) from None
    return parse_manifest(data, source=source)


def load_manifest(path: Path) -> Manifest:
    try:
        text = read_yaml_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(source=str(path), reason=f"cannot read: {exc}") from None
    except YamlRefused as exc:
        raise ManifestError(source=str(path), reason=exc.reason) from None
    return load_manifest_text(text, source=str(path))


LATE_FILE_FIELDS = ("md5",)
"""File fields added after manifests were first published: left out of the stored data while
unset, so the digests of manifests published before them do not change."""
LATE_FIELDS = ("installs", "trained_by", "file_index")
"""Top-level fields added likewise (a framework's ``installs``, a model's ``trained_by``, a
dataset's ``file_index``)."""
LATE_LABEL_FIELDS = ("names", "ignore_index")
"""A dataset's ``labels`` fields added likewise (stripped in lockfiles too)."""
LATE_OUTPUT_FIELDS = ("detection", "segmentation", "ctc", "binary")
"""A model output's fields added likewise (stripped in lockfiles too)."""


LATE_INPUT_FIELDS = ("value", "state", "stream")
"""A model input's fields added likewise (stripped in lockfiles too)."""


def drop_unset_inputs(inputs: object) -> None:
    """``drop_unset`` of ``LATE_INPUT_FIELDS`` on each input of a model's plain data."""
    if isinstance(inputs, list):
        for spec in inputs:
            if isinstance(spec, dict):
                drop_unset(spec, LATE_INPUT_FIELDS)


def drop_unset_outputs(outputs: object) -> None:
    """``drop_unset`` of ``LATE_OUTPUT_FIELDS`` on each output of a model's plain data, and of
    ``LATE_DETECTION_FIELDS`` in its detection section."""
    if isinstance(outputs, list):
        for output in outputs:
            if isinstance(output, dict):
                drop_unset(output, LATE_OUTPUT_FIELDS)
                if isinstance(output.get("detection"), dict):
                    drop_unset(output["detection"], LATE_DETECTION_FIELDS)


def drop_unset(data: dict[str, Any], names: tuple[str, ...]) -> None:
    """Remove the late fields ``names`` from ``data`` where they are unset (``None``)."""
    for name in names:
        if name in data and data[name] is None:
            del data[name]


def manifest_data(manifest: Manifest) -> dict[str, Any]:
    """The manifest as plain data, every default filled in (what is stored and digested)."""
    data = msgspec.to_builtins(manifest)
    assert isinstance(data, dict)
    drop_unset(data, LATE_FIELDS)
    for entry in [*data.get("files", []), *([data["file_index"]] if "file_index" in data else [])]:
        drop_unset(entry, LATE_FILE_FIELDS)
    if isinstance(data.get("labels"), dict):
        drop_unset(data["labels"], LATE_LABEL_FIELDS)
    drop_unset_inputs(data.get("inputs"))
    drop_unset_outputs(data.get("outputs"))
    return data


def manifest_digest(manifest: Manifest) -> Digest:
    return Digest.of_bytes(canonical_json(manifest_data(manifest)))


def json_schemas() -> dict[str, dict[str, Any]]:
    """One JSON Schema per kind, for editors, every struct and field described
    (``schema_docs``, read only here)."""
    from pinbench.registry.schema_docs import describe

    return {kind: describe(msgspec.json.schema(t)) for kind, t in MANIFEST_TYPES.items()}
