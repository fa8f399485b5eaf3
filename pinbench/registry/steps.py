"""The pre- and post-processing steps a model manifest's inputs and outputs declare, each a
strict struct (docs/steps.md is generated from their schema)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from pinbench import bounds as b
from pinbench.registry.manifest_parts import _Strict, check_relative_path
from pinbench.registry.row_steps import Reshape, Take, Views

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
    antialias: bool | None = None
    """False: bilinear without antialiasing, OpenCV's ``INTER_LINEAR`` geometry
    (``image_steps.resize_linear``; ``cv2.resize`` and ``cv2.dnn.blobFromImage`` feed models
    so); unset or true: Pillow's filter, which widens when shrinking. A late field
    (``LATE_RESIZE_FIELDS``)."""

    def __post_init__(self) -> None:
        if self.antialias is False and self.method != "bilinear":
            raise ValueError(
                f"resize antialias: false is OpenCV's bilinear (INTER_LINEAR) and needs "
                f"method bilinear, got {self.method}: use method bilinear, or leave antialias "
                "out for Pillow's filter"
            )


LATE_RESIZE_FIELDS = ("antialias",)
"""``Resize`` fields added after manifests with resize steps were published: left out of the
stored data while unset (``late_fields.drop_unset_inputs``)."""


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
    padding: Literal["fixed", "longest"] = "fixed"
    """``longest``: each text at its own length (``text_inputs.text_rows``), a batch padded
    to its longest with the tokenizer's pad, as transformers' pipelines pad (issue 86)."""
    doc_stride: Annotated[int, b.DOC_STRIDE.meta] | None = None
    """Question answering (``questions-jsonl`` samples): the context tokens from one window's
    start to the next's, as MLPerf's BERT windows a long context (unset: its 128). A late
    field, as is ``max_query_length``: refused for other samples."""
    max_query_length: Annotated[int, b.QUERY_TOKENS.meta] | None = None
    """Question answering: a question's tokens kept, the rest cut (unset: MLPerf's 64)."""

    def __post_init__(self) -> None:
        check_relative_path(self.tokenizer)


LATE_TOKENIZE_FIELDS = ("doc_stride", "max_query_length")
"""``Tokenize`` fields added after manifests with tokenize steps were published: left out of
the stored data while unset (``late_fields.drop_unset_inputs``)."""


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
    """A WAV file to a 1-D float32 waveform in [-1, 1] (``pinbench.worker.audio``): its
    channels mixed down (``mix``, their mean) or one kept (its index from 0), as declared."""

    channel: Literal["mix"] | Annotated[int, b.AUDIO_CHANNEL.meta]
    """Required: how a file's channels become one (a mono file: ``mix`` or ``0``)."""
    rate: Annotated[int, b.SAMPLE_RATE.meta] | None = None
    """The sample rate every file must have (Hz); a file of another is refused. Required
    unless a ``resample`` step follows (then files may have any rate)."""


class Resample(_Strict, frozen=True, kw_only=True):
    """Each waveform from its file's sample rate to ``rate`` (SciPy's ``resample_poly``
    computed in NumPy, ``worker.polyphase``); it follows ``decode_audio`` directly."""

    rate: Annotated[int, b.SAMPLE_RATE.meta]


class FitLength(_Strict, frozen=True, kw_only=True):
    """Each waveform to ``length`` samples: a shorter one padded at its end with ``value``; a
    longer one refused, naming its file, unless ``crop`` (then its first ``length`` kept)."""

    length: Annotated[int, b.AUDIO_LENGTH.meta]
    value: Annotated[float, b.AUDIO_VALUE.meta] = 0.0
    crop: bool = False


class ZeroMeanUnitVar(_Strict, frozen=True, kw_only=True):
    """Each waveform made zero-mean and unit-variance over its own samples, ``(x - mean) /
    sqrt(var + epsilon)`` in float32, as a Hugging Face ``Wav2Vec2FeatureExtractor`` with
    ``do_normalize`` computes it; before any padding (a ``fit_length`` after it pads with 0, as
    the extractor pads its normalised values)."""

    epsilon: Annotated[float, msgspec.Meta(ge=1e-12, le=1.0)] = 1e-7


class ExpandDims(_Strict, frozen=True, kw_only=True):
    """A new axis of size 1 in each sample, at ``axis`` of the sample's axes (the batch axis
    not counted; -1: last): a ``(T,)`` waveform with ``axis: 0`` becomes ``(1, T)``."""

    axis: Annotated[int, b.AXIS.meta]


class ReadBytes(_Strict, frozen=True, kw_only=True):
    """A sample file of any kind (``data.format: files``) as one row of ``length`` integers,
    its bytes 0..255 in file order (``worker.file_bytes``): a shorter file padded at its end
    with ``pad``, a longer one refused, naming its file, unless ``crop`` (then its first
    ``length`` bytes kept)."""

    length: Annotated[int, b.BYTES_LENGTH.meta]
    pad: Annotated[int, b.BYTES_PAD.meta] = 0
    crop: bool = False


AUDIO_STEPS = ("decode_audio", "resample", "fit_length", "zero_mean_unit_var")
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
    zero_mean_unit_var: ZeroMeanUnitVar | None = None
    expand_dims: ExpandDims | None = None
    read_bytes: ReadBytes | None = None
    take: Take | None = None
    reshape: Reshape | None = None
    views: Views | None = None

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


class Transpose(_Strict, frozen=True, kw_only=True):
    """The model's raw output with its axes reordered, as NumPy's ``transpose(perm)`` and
    ONNX's ``Transpose`` do: axis ``j`` of the result is axis ``perm[j]`` of the output. The
    output's own first axis need not be the batch's: a time-first CTC output ``(T, N, C)``
    with ``perm: [1, 0, 2]`` is read as ``(N, T, C)`` (``worker.output_axes``)."""

    perm: list[Annotated[int, b.PERM_AXIS.meta]]

    def __post_init__(self) -> None:
        if len(self.perm) < 2 or sorted(self.perm) != list(range(len(self.perm))):
            raise ValueError(
                f"transpose perm must be a permutation of 0..{len(self.perm) - 1} (each axis "
                f"of the output once, at least 2 axes), got {self.perm}"
            )


class OutputStep(_Strict, frozen=True, kw_only=True, omit_defaults=True):
    transpose: Transpose | None = None
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
