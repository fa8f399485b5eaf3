"""A PyTorch model's inputs and outputs read from what it declares (a TorchScript module's
schema, an ExportedProgram's graph signature, an nn.Module's forward), never by running it."""

from __future__ import annotations

from typing import Any

import torch

from pinbench.worker.predictors.base import (
    ModelLoadError,
    Port,
)


def _script_inputs(script: Any, name: str) -> list[Port]:
    """A scripted module's ``forward`` arguments without a default (after ``self``), each a
    tensor: a declared input is fed as one (an ``int`` argument, say, is refused here rather
    than at the first prediction)."""
    ports = []
    for arg in script.forward.schema.arguments[1:]:
        if arg.has_default_value():
            continue
        if not isinstance(arg.type, torch.TensorType):
            raise ModelLoadError(
                model=name,
                reason=f"forward's argument {arg.name!r} is {arg.type}, not a Tensor: pinbench "
                "feeds each declared input as a tensor (a batch of samples)",
            )
        ports.append(Port(arg.name))
    return ports


def _dim(d: Any) -> int | None:
    return d if isinstance(d, int) else None


def _export_inputs(program: Any) -> list[Port]:
    """A ``torch.export`` program's user inputs: names, element types, shapes (a symbolic
    dimension is dynamic)."""
    user = set(program.graph_signature.user_inputs)
    ports = []
    for node in program.graph.nodes:
        if node.op != "placeholder" or node.name not in user:
            continue
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            dtype = str(val.dtype).removeprefix("torch.")
            ports.append(Port(node.name, dtype, tuple(_dim(d) for d in val.shape)))
        else:
            ports.append(Port(node.name))
    return ports


def _export_keywords(program: Any, name: str, count: int) -> list[str]:
    """The keywords of a program's last user inputs, from its call spec ``(args, kwargs)``:
    exported with ``(x,), {"extra": y}``, it takes ``extra`` by keyword. Inputs nested in a
    tuple or dict (one argument holding several tensors) are refused: each declared input is
    one argument."""
    spec = program.call_spec.in_spec
    if spec is None:
        return []
    args, kwargs = spec.child(0), spec.child(1)
    leaves = [args.child(i).is_leaf() for i in range(args.num_children)]
    leaves += [kwargs.child(i).is_leaf() for i in range(kwargs.num_children)]
    if not all(leaves) or spec.num_leaves != count:
        raise ModelLoadError(
            model=name,
            reason=f"forward takes its {count} inputs nested in {args.num_children} positional "
            f"and {kwargs.num_children} keyword arguments: pinbench feeds each declared input "
            "as one tensor argument (export forward(x, y, ...) with one tensor each)",
        )
    return [str(k) for k in kwargs.context]


def _export_outputs(program: Any) -> int:
    return len(program.graph_signature.user_outputs)


def _forward_inputs(module: Any) -> list[Port]:
    """The required parameters of a module's ``forward`` (an unpickled module)."""
    import inspect

    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return [Port("input")]
    return [
        Port(p.name)
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
