"""Each direct wire of a chain (an output fed as is to the next stage's input, no code between)
checked at ``pinbench lock`` against the ONNX graph that gives it: the output's element type
and its dimensions after the batch axis must be what the receiving stage's model declares for
the input. The graphs are read as data by ``onnx_proto`` (no ``onnx`` package, no tensor
copied); nothing runs. A wired output that is not a tensor (a sequence, a map), or whose graph
gives no shape, is left to the run's check. A
stage in another format, a wire through code, from a fan-out's join (its outputs are the
join's, not the graph's) or from ``sample.bytes`` is checked on the first prediction of the
run, before anything is timed (``predict.check_fed``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.onnx_proto import GraphOutput, NotProtobuf, graph_outputs
from pinbench.registry.chain_spec import SAMPLE, ChainRefused, LockedStage
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace

Locate = Callable[[str], Path | None]
"""A pinned file's sha256 -> where its bytes are here (None: not here; checked at run)."""


def check_stored(ws: Workspace, lock: Lockfile) -> None:
    """``check_signatures`` with each graph from the workspace's store (``store.local``: a
    store on object storage fetches it into its cache): at lock, and again at every re-derivation
    of the lockfile (``verify``, ``run``)."""
    if lock.body.chain is None:
        return

    def locate(sha256: str) -> Path | None:
        path = ws.store.local(Digest(sha256))
        return path if path.is_file() else None

    check_signatures(lock, locate)


def check_signatures(lock: Lockfile, locate: Locate) -> None:
    chain = lock.body.chain
    if chain is None:
        return
    by_name = {s.name: s for s in chain.stages}
    graphs: dict[str, dict[str, GraphOutput] | None] = {}
    for stage in chain.stages:
        if stage.code is not None:
            continue
        declared = {str(i.name): i for i in stage.inputs}
        for target, wire in stage.wires.items():
            source_name, _, output = wire.partition(".")
            if source_name == SAMPLE or by_name[source_name].join is not None:
                continue  # no graph gives it: checked on the first prediction
            source = by_name[source_name]
            if source_name not in graphs:
                graphs[source_name] = _outputs(lock, source, locate)
            found = graphs[source_name]
            if found is None:
                continue
            name = _graph_name(source, output, list(found))
            if name not in found:
                continue
            dtype, dims = ELEMENT_TYPES.get(found[name].elem_type), found[name].dims
            if dtype is None:  # not a tensor (a sequence, a map) or a type no input declares
                continue  # the run's first prediction checks what the stage is fed
            spec = declared[target]
            if dtype != spec.element_type:
                raise ChainRefused(
                    stage=stage.name,
                    reason=f"input {target!r} is wired to {wire!r}, whose graph gives "
                    f"{dtype}; model {stage.model}@{stage.version} declares element_type "
                    f"{spec.element_type} (add `code` to the stage to convert it)",
                )
            if dims is None:  # the graph gives no shape: checked on the first prediction
                continue
            after = dims[1:]
            if spec.shape and (
                len(after) != len(spec.shape)
                or any(
                    d is not None and s > 0 and d != s
                    for d, s in zip(after, spec.shape, strict=True)
                )
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


# onnx.proto's TensorProto.DataType -> NumPy's name (the types a declared input may have)
ELEMENT_TYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
}  # fmt: skip


def _outputs(lock: Lockfile, stage: LockedStage, locate: Locate) -> dict[str, GraphOutput] | None:
    """The stage's ONNX graph outputs by name, read as data (``onnx_proto``: no ``onnx``
    package, no tensor copied); None where the stage is not one ONNX file here."""
    if stage.format != "onnx":
        return None
    files = [f for f in lock.stage_artifact(stage).files if f.path.endswith(".onnx")]
    path = locate(files[0].sha256) if len(files) == 1 else None
    if path is None:
        return None
    try:
        return {out.name: out for out in graph_outputs(path)}
    except NotProtobuf:
        return None  # not a graph this reader reads: the run's first prediction checks the wire
