"""The detection post-processing that packages ship, loaded from their pinned wheels
(``tests.package_models``) as the references pinbench's decoders are compared with, without
installing the packages or running their imports:

- rapid-layout 1.2.1's ``PPPostProcess`` (PicoDet's GFL decoding, per-class NMS), whose module
  imports NumPy alone, loaded from its file;
- ddddocr 1.6.1's ``DetectionEngine.demo_postprocess`` (YOLOX's grid decoding), a method that
  uses nothing of its instance, compiled alone from the module's syntax tree (the module
  imports OpenCV and the package at its top).
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
