"""A real detector's output as a raw, undecoded YOLOX head would give it: NudeNet's YOLOv8n
boxes (``(N, 4 + C, A)``, pixels) re-encoded per anchor as YOLOX encodes its regression
(``x / stride - cell column``, ``y / stride - cell row``, ``log(w / stride)``,
``log(h / stride)``), then an objectness (the best class score) and the class scores over it:
``(N, A, 5 + C)``, the shape ``layout: yolov5`` reads, numbers it cannot read as pixels.
In NumPy (``encode``) and as ONNX nodes appended to the model (``wrap``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

SIZE = 320
LEVELS = ((SIZE // 8, 8), (SIZE // 16, 16), (SIZE // 32, 32))
"""(cells per side, stride) of YOLOv8's three heads at a 320 x 320 input: 2,100 anchors."""


def grid() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Each anchor's stride ``(A, 1)`` and cell ``(A, 2)`` (column, row), in YOLOv8's order
    (level by level, row by row)."""
    strides = np.concatenate([np.full(n * n, s) for n, s in LEVELS])[:, None]
    cols = np.concatenate([np.tile(np.arange(n), n) for n, _ in LEVELS])
    rows = np.concatenate([np.repeat(np.arange(n), n) for n, _ in LEVELS])
    return strides.astype(np.float32), np.stack([cols, rows], axis=1).astype(np.float32)


def encode(output: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``(N, 4 + C, A)`` decoded YOLOv8 output as ``(N, A, 5 + C)`` raw YOLOX grid."""
    strides, cells = grid()
    rows = np.transpose(output, (0, 2, 1))
    xy = rows[..., 0:2] / strides - cells
    wh = np.log(rows[..., 2:4] / strides)
    cls = rows[..., 4:]
    obj = cls.max(axis=2, keepdims=True)
    return np.concatenate([xy, wh, obj, cls / np.maximum(obj, 1e-9)], axis=2)


def wrap(model: bytes, *, output: str, renamed: str) -> bytes:
    """The ONNX ``model`` with ``encode`` appended to its output ``output``; the raw grid is
    the model's one output, named ``renamed``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.load_from_string(model)
    graph = m.graph
    for node in graph.node:
        node.output[:] = ["decoded" if o == output else o for o in node.output]
    strides, cells = grid()
    consts: dict[str, npt.NDArray[Any]] = {
        "strides": strides[None],
        "cells": cells[None],
        "eps": np.array(1e-9, dtype=np.float32),
        **{k: np.array(v, dtype=np.int64) for k, v in _SLICES.items()},
    }
    graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in consts.items())
    nodes = [
        helper.make_node("Transpose", ["decoded"], ["rows"], perm=[0, 2, 1]),
        helper.make_node("Slice", ["rows", "at0", "at2", "axis2"], ["xy"]),
        helper.make_node("Slice", ["rows", "at2", "at4", "axis2"], ["wh"]),
        helper.make_node("Slice", ["rows", "at4", "end", "axis2"], ["cls"]),
        helper.make_node("Div", ["xy", "strides"], ["xy_cells"]),
        helper.make_node("Sub", ["xy_cells", "cells"], ["raw_xy"]),
        helper.make_node("Div", ["wh", "strides"], ["wh_cells"]),
        helper.make_node("Log", ["wh_cells"], ["raw_wh"]),
        helper.make_node("ReduceMax", ["cls"], ["obj"], axes=[2], keepdims=1),
        helper.make_node("Max", ["obj", "eps"], ["obj_safe"]),
        helper.make_node("Div", ["cls", "obj_safe"], ["cls_given_obj"]),
        helper.make_node("Concat", ["raw_xy", "raw_wh", "obj", "cls_given_obj"], [renamed], axis=2),
    ]
    graph.node.extend(nodes)
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info(renamed, TensorProto.FLOAT, [None, None, None])
    )
    onnx.checker.check_model(m)
    return bytes(m.SerializeToString())


_SLICES = {"at0": [0], "at2": [2], "at4": [4], "end": [2**31 - 1], "axis2": [2]}
