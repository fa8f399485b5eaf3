"""The model's inputs and output: MLModelScope's ``inputs`` and ``output`` as pinbench inputs
and outputs with typed steps.

An image input, as rai-project/dlframework prepares it: decoded in ``color_mode`` (default RGB),
resized to ``dimensions`` (C, H, W; one value stands for all three), normalized as
``(x - mean) / scale`` (defaults 0 and 1; a number or one per channel), laid out as ``layout``
(default HWC). Here: ``decode``, ``resize``, ``normalize`` (``std`` is MLModelScope's scale)
and, for CHW, ``layout: NCHW`` steps; the shape is (C, H, W) or (H, W, C) after the layout. The
layer is ``input_layer`` (``layer_name`` is its older name), a name or an index; when none is
given, index 0, the model's first input, as MLModelScope takes it. ``max_dimension: N`` with
``keep_aspect_ratio: true`` is a ``max_dimension`` step (the longer side to N, aspect kept), as
rai-project/image resizes (``resize.go`` lines 34-48 at commit 407d61a9).

The output: ``classification`` (``feature``, its older name), ``raw`` (a tensor),
``semanticsegment`` (a segmentation output, ``form: classes``: dlframework reads an int64 class
per pixel), and ``boundingbox``/``instancesegment`` (a separate-layout detection output and the
tensor outputs it names: ``detection``).
"""

from __future__ import annotations

from typing import Any, Final, get_args

from pinbench.registry.mlmodelscope.detection import LAYERS, detection_outputs
from pinbench.registry.mlmodelscope.files import Files, labels_file
from pinbench.registry.mlmodelscope.reader import Reader
from pinbench.registry.steps import ElementType

IO_KEYS: Final = frozenset({"type", "description", "parameters"})
INPUT_TYPES: Final = {"image": "image", "raw": "tensor"}
INPUT_PARAMETERS: Final = {
    "image": frozenset(
        {"element_type", "input_layer", "layer_name", "layout", "color_mode", "dimensions"}
        | {"mean", "scale", "max_dimension", "keep_aspect_ratio", "url"}
    ),
    "tensor": frozenset({"element_type", "input_layer", "layer_name", "dimensions", "url"}),
}
OUTPUT_TYPES: Final = {
    "classification": "classification",
    "feature": "classification",
    "semanticsegment": "segmentation",
    "raw": "tensor",
    "boundingbox": "detection",
    "instancesegment": "detection",
}
"""``feature`` is MLModelScope's older name for a classifier's output (its predictors made
classification features of it, labelled by ``features_url``)."""
SEGMENTATION: Final = {"form": "classes"}
"""MLModelScope's semantic segment: one int64 class index per pixel, read as such by
rai-project/dlframework (``framework/predictor/image_predictor.go`` lines 688-723 at commit
4aaa12cf; a float output is "not supported" there) from, e.g., DeepLab's
``SemanticPredictions`` (rai-project/tensorflow
``predictor/image_semanitc_segmentation_predictor.go`` line 134)."""
OUTPUT_LAYER: Final = {
    "classification": ("probabilities_layer", "layer_name"),
    "segmentation": ("masks_layer",),
    "tensor": ("probabilities_layer", "layer_name"),
}
_LABELS = frozenset({"element_type", "features_url", "features_checksum"})
OUTPUT_PARAMETERS: Final = {
    "classification": _LABELS | {"probabilities_transform", *OUTPUT_LAYER["classification"]},
    "segmentation": _LABELS | {"masks_layer"},
    "tensor": frozenset({"element_type", "probabilities_layer", "layer_name"}),
    "boundingbox": _LABELS | set(LAYERS["boundingbox"]),
    "instancesegment": _LABELS | set(LAYERS["instancesegment"]),
}
ELEMENT_TYPES: Final = frozenset(get_args(ElementType))

Path = tuple[str | int, ...]


def inputs(reader: Reader) -> list[dict[str, Any]]:
    items = reader.sequence(reader.typed.get("inputs"), "inputs")
    return [_input(reader, i, item) for i, item in enumerate(items)]


def outputs(reader: Reader, files: Files, framework: str) -> list[dict[str, Any]]:
    """MLModelScope's one ``output`` as pinbench outputs: one, none, or for a detector its boxes
    output (labelled) and then the tensor outputs its ``detection`` section names.
    ``framework`` is pinbench's name, which tells a detector's box convention."""
    spec = reader.mapping(reader.typed.get("output"), "output")
    if not spec:
        return []
    reader.check_keys(spec, IO_KEYS, "output.")
    text = reader.required_text("output.type", "output", "type", why="what the output is")
    params = reader.mapping(spec.get("parameters"), "output.parameters")
    kind = OUTPUT_TYPES.get(text)
    if kind is None:
        known = ", ".join(OUTPUT_TYPES)
        reader.refuse("output.type", f"{text!r} is not an MLModelScope output type ({known})")
    if text == "feature":
        reader.note("output.type", "feature read as classification (MLModelScope's older name)")
    if kind == "detection":
        reader.check_keys(params, OUTPUT_PARAMETERS[text], "output.parameters.")
        entry, tensors = detection_outputs(reader, text, params, framework)
    else:
        reader.check_keys(params, OUTPUT_PARAMETERS[kind], "output.parameters.")
        entry = {
            "name": _layer(reader, params, OUTPUT_LAYER[kind], "output.parameters", "output"),
            "type": kind,
        }
        tensors = []
    if kind == "segmentation":
        entry["segmentation"] = dict(SEGMENTATION)
        if framework != "tensorflow":
            reader.note(
                "output.type",
                "semanticsegment read as one class index per pixel (segmentation form "
                "classes), as MLModelScope reads it (int64 only): check that this model's "
                "output is not a score per class and pixel (then form: logits)",
            )
    steps = _output_steps(reader)
    if steps:
        entry["steps"] = steps
    labels = labels_file(reader, files)
    if labels is not None:
        entry["labels"] = {"path": labels}
    return [entry, *tensors]


def _input(reader: Reader, index: int, item: object) -> dict[str, Any]:
    field = f"inputs[{index}]"
    spec = reader.mapping(item, field)
    reader.check_keys(spec, IO_KEYS, field + ".")
    text = reader.required_text(f"{field}.type", "inputs", index, "type", why="image or raw")
    kind = INPUT_TYPES.get(text)
    if kind is None:
        reader.refuse(
            f"{field}.type", f"{text!r} is not an input type pinbench imports (image, raw)"
        )
    pfield, path = f"{field}.parameters", ("inputs", index, "parameters")
    params = reader.mapping(spec.get("parameters"), pfield)
    reader.check_keys(params, INPUT_PARAMETERS[kind], pfield + ".")
    _refuse_unsupported(reader, params, pfield)
    entry: dict[str, Any] = {
        "name": _layer(reader, params, ("input_layer", "layer_name"), pfield, "input"),
        "type": kind,
        "element_type": _element_type(reader, path, pfield),
    }
    if kind == "image":
        return entry | _image(reader, params, pfield, path)
    field = f"{pfield}.dimensions"
    dims = _sizes(reader, reader.sequence(params.get("dimensions"), field), field)
    return entry | ({"shape": dims} if dims else {})


def _refuse_unsupported(reader: Reader, params: dict[str, Any], pfield: str) -> None:
    if params.get("url") is not None:
        reader.refuse(
            f"{pfield}.url",
            "is sample input data: a pinbench model carries no input data (publish it as a "
            "dataset)",
        )


def _layer(
    reader: Reader, params: dict[str, Any], keys: tuple[str, ...], pfield: str, role: str
) -> str | int:
    """A layer name or index from the first of ``keys`` given; index 0 if none is."""
    for key in keys:
        value = params.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            reader.refuse(f"{pfield}.{key}", f"must be a layer name or index, got {value!r}")
        if isinstance(value, int) and value < 0:
            reader.refuse(f"{pfield}.{key}", f"must be an index >= 0, got {value}")
        if key != keys[0]:
            reader.note(f"{pfield}.{key}", f"read as {keys[0]} (its older name)")
        return value.strip() if isinstance(value, str) else value
    reader.note(
        f"{pfield}.{keys[0]}",
        f"is not given: the model's first {role} (index 0), as MLModelScope takes it",
    )
    return 0


def _element_type(reader: Reader, path: Path, pfield: str) -> str:
    text = reader.text(f"{pfield}.element_type", *path, "element_type")
    if text is None:
        return "float32"  # MLModelScope's default
    if text not in ELEMENT_TYPES:
        known = ", ".join(sorted(ELEMENT_TYPES))
        reader.refuse(f"{pfield}.element_type", f"{text!r} is not one of {known}")
    return text


def _image(reader: Reader, params: dict[str, Any], pfield: str, path: Path) -> dict[str, Any]:
    """Shape and steps: decode (color mode), resize, normalize, layout."""
    color = _choice(reader, f"{pfield}.color_mode", (*path, "color_mode"), ("RGB", "BGR"))
    layout = _choice(reader, f"{pfield}.layout", (*path, "layout"), ("HWC", "CHW"))
    steps: list[dict[str, Any]] = [{"decode": {"color_mode": color.lower()}}]
    longest = _max_dimension(reader, params, pfield)
    if longest is not None:
        steps.append({"max_dimension": {"size": longest}})
    dims = _dimensions(reader, params.get("dimensions"), f"{pfield}.dimensions")
    shape: list[int] = []
    if dims is not None:
        channels, height, width = dims
        steps.append({"resize": {"size": [height, width]}})
        shape = [channels, height, width] if layout == "CHW" else [height, width, channels]
    normalize = _normalize(reader, params, pfield, dims[0] if dims else None)
    if normalize is not None:
        steps.append({"normalize": normalize})
    if layout == "CHW":
        steps.append({"layout": {"to": "NCHW"}})
    return ({"shape": shape} if shape else {}) | {"steps": steps}


def _max_dimension(reader: Reader, params: dict[str, Any], pfield: str) -> int | None:
    """``max_dimension`` as rai-project/image resizes (``resize.go`` lines 34-48 and 65-67 at
    commit 407d61a9): with ``keep_aspect_ratio: true`` the longer side becomes it, the other
    scaled alike; without, each side is raised to at least it on its own; and
    ``keep_aspect_ratio`` is read only with ``max_dimension`` (else it changes nothing)."""
    keep = reader.flag(params.get("keep_aspect_ratio"), f"{pfield}.keep_aspect_ratio")
    value = params.get("max_dimension")
    if value is None:
        if keep:
            reader.note(
                f"{pfield}.keep_aspect_ratio",
                "true without max_dimension changes nothing in MLModelScope's resize "
                "(rai-project/image resize.go:34-37, 65-67): left out",
            )
        return None
    field = f"{pfield}.max_dimension"
    size = _sizes(reader, [value], field)[0]
    if not keep:
        reader.refuse(
            field,
            "without keep_aspect_ratio: true, MLModelScope raises each side to at least it on "
            "its own (rai-project/image resize.go:40-41), which no pinbench step does",
        )
    if params.get("dimensions") is not None:
        reader.refuse(
            field,
            "with dimensions: MLModelScope's resize then ignores dimensions (rai-project/image "
            "resize.go:65-67) while its predictor shapes the tensor by them; pinbench does not "
            "import the pair",
        )
    reader.note(
        field,
        f"the longer side to {size}, the aspect ratio kept (a max_dimension step); MLModelScope "
        "truncates the scaled sides (rai-project/image resize.go:44-46) where pinbench rounds "
        "them, so a side may be one pixel longer here",
    )
    return size


def _choice(reader: Reader, field: str, path: Path, allowed: tuple[str, ...]) -> str:
    """One of ``allowed`` (any case); the first when absent (MLModelScope's default)."""
    text = reader.text(field, *path)
    if text is None:
        return allowed[0]
    if text.upper() not in allowed:
        reader.refuse(field, f"{text!r} is not one of {', '.join(allowed)}")
    return text.upper()


def _dimensions(reader: Reader, value: object, field: str) -> tuple[int, int, int] | None:
    dims = _sizes(reader, reader.sequence(value, field), field)
    if not dims:
        return None
    if len(dims) == 1:
        return dims[0], dims[0], dims[0]
    if len(dims) != 3:
        reader.refuse(
            field,
            f"has {len(dims)} values: MLModelScope takes 1 or 3 (C, H, W), without the batch size",
        )
    return dims[0], dims[1], dims[2]


def _sizes(reader: Reader, values: list[Any], field: str) -> list[int]:
    sizes: list[int] = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            reader.refuse(field, f"must be positive whole numbers, got {v!r}")
        sizes.append(v)
    return sizes


def _normalize(
    reader: Reader, params: dict[str, Any], pfield: str, channels: int | None
) -> dict[str, Any] | None:
    """MLModelScope's ``(x - mean) / scale`` as pinbench's ``(x - mean) / std``; None when it is
    the identity (MLModelScope's defaults: mean 0, scale 1)."""
    mean = _per_channel(reader, params.get("mean"), f"{pfield}.mean", channels)
    scale = _per_channel(reader, params.get("scale"), f"{pfield}.scale", channels)
    if scale is not None and 0 in scale:
        reader.refuse(f"{pfield}.scale", "must not be 0: MLModelScope divides by it")
    if set(mean or [0.0]) == {0.0} and set(scale or [1.0]) == {1.0}:
        return None
    return {"mean": mean or [0.0]} | ({"std": scale} if scale is not None else {})


def _per_channel(
    reader: Reader, value: object, field: str, channels: int | None
) -> list[float] | None:
    if value is None:
        return None
    numbers: list[float] = []
    for v in value if isinstance(value, list) else [value]:
        if isinstance(v, bool) or not isinstance(v, int | float):
            reader.refuse(field, f"must be a number or one number per channel, got {v!r}")
        numbers.append(float(v))
    if channels is not None and len(numbers) not in (1, channels):
        reader.refuse(field, f"has {len(numbers)} values for {channels} channels")
    return numbers


def _output_steps(reader: Reader) -> list[dict[str, Any]]:
    field = "output.parameters.probabilities_transform"
    text = reader.text(field, "output", "parameters", "probabilities_transform")
    if text is None:
        return []
    if text.lower() != "softmax":
        reader.refuse(field, f"{text!r} is not a transform pinbench imports (softmax)")
    return [{"softmax": {}}]
