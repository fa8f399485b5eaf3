"""The detection post-processing that packages ship, loaded from their pinned wheels
(``tests.package_models``) as the references pinbench's decoders are compared with, without
installing the packages or running their imports:

- rapid-layout 1.2.1's ``PPPostProcess`` (PicoDet's GFL decoding, per-class NMS), whose module
  imports NumPy alone, loaded from its file;
- ddddocr 1.6.1's ``DetectionEngine.demo_postprocess`` (YOLOX's grid decoding), a method that
  uses nothing of its instance, compiled alone from the module's syntax tree (the module
  imports OpenCV and the package at its top);
- ddddocr 1.6.1's detection and recognition as ``DdddOcr(det=True)`` and ``DdddOcr()`` run them
  (``ddddocr_engines``): the methods of ``DetectionEngine`` and ``OCREngine`` and
  ``ImageProcessor``'s resize and grey, compiled from the wheel's syntax trees into classes of
  their own, given their ONNX sessions and the default charset (taken from the wheel's
  ``charset_manager.py`` as data).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from tests.package_models import package_file


def rapid_layout_postprocess() -> Any:
    """rapid-layout's ``PPPostProcess`` class."""
    path = package_file("rapid-layout", "rapid_layout/model_handler/pp/post_process.py")
    spec = importlib.util.spec_from_file_location("rapid_layout_pp_post_process", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PPPostProcess


def ddddocr_demo_postprocess() -> Callable[..., Any]:
    """ddddocr's ``demo_postprocess(outputs, img_size, p6=False)``, as a function."""
    path = package_file("ddddocr", "ddddocr/core/detection_engine.py")
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    engine = next(
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DetectionEngine"
    )
    method = next(
        n for n in engine.body if isinstance(n, ast.FunctionDef) and n.name == "demo_postprocess"
    )
    module = ast.Module(body=[method], type_ignores=[])
    scope: dict[str, Any] = {"np": np}
    exec(compile(module, str(path), "exec"), scope)
    function = scope["demo_postprocess"]

    def demo_postprocess(outputs: Any, img_size: Any, p6: bool = False) -> Any:
        return function(None, outputs, img_size, p6)

    return demo_postprocess


def _methods(member: str, owner: str, names: tuple[str, ...], scope: dict[str, Any]) -> Any:
    """The class ``owner`` of the wheel's ``member`` with only the methods ``names`` (their
    source as the wheel has it, decorators kept), compiled in ``scope``."""
    path = package_file("ddddocr", member)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner)
    body: list[ast.stmt] = [
        n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in names
    ]
    found = sorted(n.name for n in body if isinstance(n, ast.FunctionDef))
    assert found == sorted(names), f"{member}: {owner} lacks a method"
    only = ast.ClassDef(name=owner, bases=[], keywords=[], body=body, decorator_list=[])
    module = ast.fix_missing_locations(ast.Module(body=[only], type_ignores=[]))
    exec(compile(module, str(path), "exec"), scope)
    return scope[owner]


def ddddocr_charset() -> list[str]:
    """``CharsetManager._get_old_charset()``'s list, read as a literal (nothing executed)."""
    path = package_file("ddddocr", "ddddocr/models/charset_manager.py")
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CharsetManager")
    method = next(
        n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_get_old_charset"
    )
    returned = next(n for n in ast.walk(method) if isinstance(n, ast.Return))
    assert returned.value is not None
    charset: list[str] = ast.literal_eval(returned.value)
    return charset


def ddddocr_engines(det_session: Any, ocr_session: Any) -> tuple[Any, Any]:
    """``(detector, recogniser)``: ``detector.get_bbox(image_bytes)`` is
    ``DdddOcr(det=True).detection(bytes)`` (``DetectionEngine.predict`` calls it for bytes);
    ``recogniser.classify(pil_image)`` is ``DdddOcr().classification(image)`` for a PIL image
    with ``png_fix`` and ``probability`` false and no colour filter (``OCREngine.predict``,
    ``core/ocr_engine.py`` lines 99-157: the image copied by ``load_image_from_input``, every
    charset index valid (``CharsetManager._update_valid_indices`` with no range, lines 113-124
    of ``models/charset_manager.py``), ``_preprocess_image``, ``_inference``, whose
    ``_process_text_output`` decodes). ``DdddOcr()`` loads ``common_old.onnx`` and the old
    charset (``models/model_loader.py`` lines 139-145, ``charset_manager.py`` lines 37-42)."""
    import typing

    import cv2
    from PIL import Image

    class Refused(Exception):
        pass

    scope: dict[str, Any] = {"np": np, "Image": Image, "ImageProcessError": Refused}
    processor = _methods(
        "ddddocr/preprocessing/image_processor.py",
        "ImageProcessor",
        ("resize_image", "convert_to_grayscale"),
        dict(scope),
    )
    detection = _methods(
        "ddddocr/core/detection_engine.py",
        "DetectionEngine",
        (
            "preproc", "demo_postprocess", "nms", "multiclass_nms_class_agnostic",
            "multiclass_nms", "get_bbox",
        ),
        {**scope, "cv2": cv2},
    )  # fmt: skip
    ocr = _methods(
        "ddddocr/core/ocr_engine.py",
        "OCREngine",
        ("_preprocess_image", "_inference", "_process_text_output", "_ctc_decode_indices"),
        {
            **scope,
            "ImageProcessor": processor,
            "ModelLoadError": Refused,
            "png_rgba_black_preprocess": None,  # png_fix is false: never called
            **{name: getattr(typing, name) for name in ("Any", "Dict", "List", "Union")},
        },
    )
    charset = ddddocr_charset()

    class Charsets:  # CharsetManager after load_default_charset(): every index valid
        def get_charset(self) -> list[str]:
            return charset

        def get_valid_indices(self) -> list[int]:
            return list(range(len(charset)))

    detector = detection()
    detector.session = det_session
    recogniser = ocr()
    recogniser.session = ocr_session
    recogniser.use_import_onnx = False
    recogniser.charset_manager = Charsets()

    def classify(image: Any) -> str:
        processed = recogniser._preprocess_image(image.copy(), False)
        text: str = recogniser._inference(processed, False)
        return text

    recogniser.classify = classify
    return detector, recogniser
