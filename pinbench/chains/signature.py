"""Each direct wire of a chain (an output fed as is to the next stage's input, no code between)
checked at ``pinbench lock`` against the ONNX graph that gives it: the output's element type
and its dimensions after the batch axis must be what the receiving stage's model declares for
the input. The graphs are read as data (protobuf, external data not loaded); nothing runs. A
stage in another format, or a wire through code, is checked on the first prediction of the
run, before anything is timed (``predict.check_fed``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinbench.chains.spec import ChainRefused, LockedStage
from pinbench.registry.lockfile import Lockfile

Locate = Callable[[str], Path | None]
"""A pinned file's sha256 -> where its bytes are here (None: not here; checked at run)."""


def check_signatures(lock: Lockfile, locate: Locate) -> None:
    chain = lock.body.chain
    if chain is None:
        return
    by_name = {s.name: s for s in chain.stages}
    graphs: dict[str, dict[str, tuple[str, list[int | None]]] | None] = {}
    for stage in chain.stages:
        if stage.code is not None:
            continue
        declared = {str(i.name): i for i in stage.inputs}
        for target, wire in stage.wires.items():
            source_name, _, output = wire.partition(".")
            source = by_name[source_name]
            if source_name not in graphs:
                graphs[source_name] = _outputs(lock, source, locate)
            found = graphs[source_name]
            if found is None:
                continue
            name = _graph_name(source, output, list(found))
            if name not in found:
                continue
            dtype, dims = found[name]
            spec = declared[target]
            if dtype != spec.element_type:
                raise ChainRefused(
                    stage=stage.name,
                    reason=f"input {target!r} is wired to {wire!r}, whose graph gives "
                    f"{dtype}; model {stage.model}@{stage.version} declares element_type "
                    f"{spec.element_type} (add `code` to the stage to convert it)",
                )
            after = dims[1:]
            if spec.shape and (
                len(after) != len(spec.shape)
                or any(d is not None and d != s for d, s in zip(after, spec.shape, strict=True))
            ):
                shown = ["?" if d is None else d for d in dims]
                raise ChainRefused(
                    stage=stage.name,
                    reason=f"input {target!r} is wired to {wire!r}, whose graph gives shape "
                    f"{shown}; model {stage.model}@{stage.version} declares {spec.shape} "
                    "after the batch axis (add `code` to the stage to reshape it)",
                )


def _graph_name(stage: LockedStage, output: str, names: list[str]) -> str:
    """The graph's own name of a declared output (an index names the graph's Nth output)."""
    for declared in stage.outputs:
        if str(declared.name) == output and isinstance(declared.name, int):
            return names[declared.name] if declared.name < len(names) else output
    return output


def _outputs(
    lock: Lockfile, stage: LockedStage, locate: Locate
) -> dict[str, tuple[str, list[int | None]]] | None:
    """The stage's ONNX graph outputs: name -> (element type, dims; None where symbolic)."""
    if stage.format != "onnx":
        return None
    from pinbench.chains.spec import stage_artifact

    files = [f for f in stage_artifact(lock, stage).files if f.path.endswith(".onnx")]
    path = locate(files[0].sha256) if len(files) == 1 else None
    if path is None:
        return None
    import onnx
    from onnx import helper

    graph = onnx.load(str(path), load_external_data=False).graph
    out: dict[str, tuple[str, list[int | None]]] = {}
    for value in graph.output:
        tensor: Any = value.type.tensor_type
        dtype = str(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        out[value.name] = (dtype, dims)
    return out
