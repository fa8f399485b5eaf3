"""An image model's input steps from its folder's ``preprocessor_config.json``, read as data.

transformers' image processors of the plain family (ViT, DeiT, SigLIP: resize to a fixed
height and width, maybe a centre crop, rescale, normalize, channels first) map onto pinbench's
steps one for one: ``decode`` (RGB), ``resize`` (the processor's ``resample`` filter; pinbench's
resize is Pillow's float path rounded to 8 bits, the processor's own is Pillow's 8-bit path or
torchvision's, a few levels apart in some pixels of noisy images), ``crop``, ``normalize``
(``rescale_factor`` folded into mean and std: ``(x * r - m) / s == (x - m / r) / (s / r)``),
``layout`` NCHW. Any other processor,
a key this module does not know that would act (a true ``do_*`` flag, any other value), or a
size given another way (``shortest_edge``) is refused naming it: a step silently left out is a
number silently wrong. The author then writes the steps by hand (docs/steps.md).
"""

from __future__ import annotations

from math import isfinite
from typing import Any, Final

from pinbench.authoring.errors import NotAModel

PROCESSORS: Final = frozenset(
    f"{name}ImageProcessor{fast}" for name in ("ViT", "DeiT", "Siglip") for fast in ("", "Fast")
)
"""The processors whose keys mean what this module reads them as."""
RESAMPLE: Final = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "area"}
"""Pillow's filter codes (``PIL.Image.Resampling``) as the resize step names them (5, hamming,
has no step)."""
READ: Final = frozenset(
    {
        "image_processor_type",
        "do_resize",
        "size",
        "resample",
        "do_center_crop",
        "crop_size",
        "do_rescale",
        "rescale_factor",
        "do_normalize",
        "image_mean",
        "image_std",
        "do_convert_rgb",
        "model_input_names",
    }
)
CROP_KEYS: Final = frozenset({"do_center_crop", "crop_size"})
INERT: Final = frozenset({"processor_class", "feature_extractor_type", "input_data_format"})
"""Keys that name things and change no pixel."""
MAX_SIDE = 16384


def image_input(config: Any, label: str) -> tuple[dict[str, Any], list[str]]:
    """The model manifest's one image input (``pixel_values``) and the notes for its author."""

    def refuse(reason: str) -> NotAModel:
        return NotAModel(path=label, reason=reason)

    if not isinstance(config, dict):
        raise refuse("not a JSON object")
    kind = config.get("image_processor_type")
    if kind not in PROCESSORS:
        raise refuse(
            f"image_processor_type {kind!r:.80}: pinbench writes the input steps of "
            f"{', '.join(sorted(PROCESSORS))}; write this model's image steps by hand "
            "(docs/steps.md)"
        )
    crops = kind.startswith("DeiT")  # ViT and SigLIP do no centre crop: the keys would be unread
    for key, value in config.items():
        if (key in READ and (crops or key not in CROP_KEYS)) or key in INERT:
            continue
        if value is None or value is False or (key.startswith("do_") and not value):
            continue  # off: changes nothing
        raise refuse(
            f"key {key!r:.80} ({value!r:.40}) is not one pinbench reads, and it would act on "
            "the pixels; write this model's image steps by hand (docs/steps.md)"
        )
    steps: list[dict[str, Any]] = [{"decode": {"color_mode": "rgb"}}]
    height = width = None
    if _flag(config, "do_resize", refuse):
        height, width = _size(config.get("size"), "size", refuse)
        resample = config.get("resample")
        if resample not in RESAMPLE or isinstance(resample, bool):
            raise refuse(f"resample {resample!r:.40}: one of {sorted(RESAMPLE)} (Pillow's codes)")
        steps.append({"resize": {"size": [height, width], "method": RESAMPLE[resample]}})
    if crops and _flag(config, "do_center_crop", refuse):
        height, width = _size(config.get("crop_size"), "crop_size", refuse)
        steps.append({"crop": {"size": [height, width]}})
    if height is None or width is None:
        raise refuse("neither do_resize nor do_center_crop: the images' size is not fixed")
    scale = 1.0
    if _flag(config, "do_rescale", refuse):
        scale = _number(config.get("rescale_factor"), "rescale_factor", refuse)
        if scale <= 0:
            raise refuse(f"rescale_factor {scale}: must be above 0")
    if _flag(config, "do_normalize", refuse):
        mean = _channels(config.get("image_mean"), "image_mean", refuse)
        std = _channels(config.get("image_std"), "image_std", refuse)
        if any(s == 0 for s in std):
            raise refuse("image_std holds a 0")
        steps.append(
            {"normalize": {"mean": [m / scale for m in mean], "std": [s / scale for s in std]}}
        )
    elif scale != 1.0:
        steps.append({"normalize": {"scale": scale}})
    else:
        steps.append({"dtype": {"to": "float32"}})
    steps.append({"layout": {"to": "NCHW"}})
    names = config.get("model_input_names", ["pixel_values"])
    if names != ["pixel_values"]:
        raise refuse(f"model_input_names {names!r:.80}: pinbench writes one, pixel_values")
    notes = [
        f"pixel_values from {label} ({kind}): resized by pinbench's resize (Pillow's float "
        "path); transformers' processor (Pillow 8-bit or torchvision) can put a pixel a few "
        "levels away, and so the last digits of a score"
    ]
    spec = {
        "name": "pixel_values",
        "type": "image",
        "element_type": "float32",
        "shape": [3, height, width],
        "steps": steps,
    }
    return spec, notes


def _flag(config: dict[str, Any], key: str, refuse: Any) -> bool:
    value = config.get(key)
    if not isinstance(value, bool):
        raise refuse(f"{key} {value!r:.40}: true or false (the processor saves every key)")
    return value


def _size(value: Any, key: str, refuse: Any) -> tuple[int, int]:
    if not isinstance(value, dict) or set(value) != {"height", "width"}:
        raise refuse(
            f"{key} {value!r:.80}: pinbench reads {{height, width}}; a shortest_edge or "
            "longest_edge size is not written (write the steps by hand)"
        )
    sides = (value["height"], value["width"])
    if not all(type(v) is int and 1 <= v <= MAX_SIDE for v in sides):
        raise refuse(f"{key} {value!r:.80}: sides are integers 1..{MAX_SIDE}")
    return sides


def _number(value: Any, key: str, refuse: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not isfinite(value):
        raise refuse(f"{key} {value!r:.40}: a finite number")
    return float(value)


def _channels(value: Any, key: str, refuse: Any) -> list[float]:
    if not isinstance(value, list) or len(value) not in (1, 3):
        raise refuse(f"{key} {value!r:.80}: one value or three (RGB)")
    return [_number(v, key, refuse) for v in value]
