"""A real detector's output as an SSD head would give it: NudeNet's YOLOv8n boxes
(``(N, 4 + C, A)``, pixels of its 320 x 320 input) encoded against fixed anchors by SSD's box
coder (Caffe's ``EncodeBBox`` with variances ``VARIANCES``, anchors in fractions of the input),
and its class scores with a background column before them: box deltas ``(N, A, 4)`` and scores
``(N, A, 1 + C)``. Each anchor keeps only its best class's score (the others 0) and a
background of 1 minus it, so that SSD's every-class candidates are YOLOv8's best-class ones.
In NumPy (``anchors``) and as ONNX nodes appended to the model (``wrap``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from tests.yolox_grid import LEVELS, SIZE

VARIANCES = (0.1, 0.1, 0.2, 0.2)


def anchors() -> npt.NDArray[np.float32]:
    """One anchor per YOLOv8 anchor, ``(A, 4)`` centre and size in fractions of the input: the
    cell's centre, four strides wide and high."""
    rows = []
    for cells, stride in LEVELS:
        for row in range(cells):
            for col in range(cells):
                centre = ((col + 0.5) * stride / SIZE, (row + 0.5) * stride / SIZE)
                rows.append((*centre, 4 * stride / SIZE, 4 * stride / SIZE))
    return np.array(rows, dtype=np.float32)


def wrap(model: bytes, *, output: str) -> bytes:
    """The ONNX ``model`` with its output ``output`` encoded as SSD outputs ``ssd_deltas`` and
    ``ssd_scores`` (its only outputs)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.load_from_string(model)
    graph = m.graph
    for node in graph.node:
        node.output[:] = ["decoded" if o == output else o for o in node.output]
    a = anchors()[None]
    consts: dict[str, npt.NDArray[Any]] = {
        "size": np.array(SIZE, dtype=np.float32),
        "a_xy": a[..., :2],
        "a_wh": a[..., 2:],
        "v_xy_wh": (np.float32(VARIANCES[0]) * a[..., 2:]).astype(np.float32),
        "v_size": np.array(VARIANCES[2], dtype=np.float32),
        "one": np.array(1.0, dtype=np.float32),
        **{k: np.array(v, dtype=np.int64) for k, v in _SLICES.items()},
    }
    graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in consts.items())
    nodes = [
        helper.make_node("Transpose", ["decoded"], ["rows"], perm=[0, 2, 1]),
        helper.make_node("Slice", ["rows", "at0", "at2", "axis2"], ["xy"]),
        helper.make_node("Slice", ["rows", "at2", "at4", "axis2"], ["wh"]),
        helper.make_node("Slice", ["rows", "at4", "end", "axis2"], ["cls"]),
        helper.make_node("Div", ["xy", "size"], ["xy_n"]),
        helper.make_node("Sub", ["xy_n", "a_xy"], ["xy_off"]),
        helper.make_node("Div", ["xy_off", "v_xy_wh"], ["d_xy"]),
        helper.make_node("Div", ["wh", "size"], ["wh_n"]),
        helper.make_node("Div", ["wh_n", "a_wh"], ["wh_ratio"]),
        helper.make_node("Log", ["wh_ratio"], ["wh_log"]),
        helper.make_node("Div", ["wh_log", "v_size"], ["d_wh"]),
        helper.make_node("Concat", ["d_xy", "d_wh"], ["ssd_deltas"], axis=2),
        helper.make_node("ReduceMax", ["cls"], ["best"], axes=[2], keepdims=1),
        helper.make_node("Equal", ["cls", "best"], ["is_best"]),
        helper.make_node("Cast", ["is_best"], ["best_mask"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["cls", "best_mask"], ["cls_best"]),
        helper.make_node("Sub", ["one", "best"], ["background"]),
        helper.make_node("Concat", ["background", "cls_best"], ["ssd_scores"], axis=2),
    ]
    graph.node.extend(nodes)
    del graph.output[:]
    graph.output.extend(
        helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, None, None])
        for name in ("ssd_deltas", "ssd_scores")
    )
    onnx.checker.check_model(m)
    return bytes(m.SerializeToString())


_SLICES = {"at0": [0], "at2": [2], "at4": [4], "end": [2**31 - 1], "axis2": [2]}
