"""A model made slower by construction: the same ONNX graph plus a costly chain whose result
is multiplied by zero and added to the output (so the answers are the same, and ONNX Runtime
cannot prune or fold the chain: it depends on the input)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def slow_copy(source: Path, target: Path, *, size: int = 64, steps: int = 4) -> None:
    """Write ``source``'s model with ``steps`` (``size`` x ``size``) MatMuls fed by its
    flattened input added, times zero, to its output ``logits``."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    (out,) = [o for o in graph.output if o.name == "logits"]
    for node in graph.node:  # the original output becomes an inner value
        node.output[:] = ["logits_fast" if o == "logits" else o for o in node.output]
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((size, size)) / size).astype(np.float32)
    graph.initializer.extend(
        [
            numpy_helper.from_array(weight, "slow_w"),
            numpy_helper.from_array(np.array([size, 1], dtype=np.int64), "slow_tile"),
            numpy_helper.from_array(np.zeros((1,), dtype=np.float32), "slow_zero"),
        ]
    )
    nodes = [
        helper.make_node("Flatten", ["x"], ["slow_flat"], axis=1),
        helper.make_node("ReduceSum", ["slow_flat"], ["slow_row"], keepdims=1),
        helper.make_node("Tile", ["slow_row", "slow_tile"], ["slow_col"]),  # (size*N, 1)
        helper.make_node("Mul", ["slow_col", "slow_w"], ["slow_0"]),  # (size, size)
    ]
    for i in range(steps):
        nodes.append(helper.make_node("MatMul", [f"slow_{i}", "slow_w"], [f"slow_{i + 1}"]))
    nodes += [
        helper.make_node("ReduceSum", [f"slow_{steps}"], ["slow_sum"], keepdims=0),
        helper.make_node("Mul", ["slow_sum", "slow_zero"], ["slow_nothing"]),
        helper.make_node("Add", ["logits_fast", "slow_nothing"], ["logits"]),
    ]
    graph.node.extend(nodes)
    del out  # the graph output keeps its name and type
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
