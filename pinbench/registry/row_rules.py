"""The rules that tie a model's inputs and outputs together where samples become rows: views
(``row_steps.Views``: every output says how its rows per sample become one answer) and
lengths (``pad_batch`` and ``mask_of`` only where samples keep their own lengths, no pooling
over answers of different lengths). Checked when a model manifest is read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pinbench.registry.input_kinds import from_samples

if TYPE_CHECKING:
    from pinbench.registry.ports import Input, Output
    from pinbench.registry.row_steps import Views


def views_of(spec: Input) -> Views | None:
    """The input's views step (its last), or None."""
    return spec.steps[-1].views if spec.steps else None


def check_views(inputs: Sequence[Input], outputs: Sequence[Output]) -> None:
    """A ``views`` step is its input's last; every input with one gives the same number of
    views in the same order (an input without one is repeated ``k`` times, as ICLabel repeats
    its spectra); a streamed or state input goes without views; and every output says how its
    rows become one answer (``Output.views``) exactly when some input has views."""
    found: dict[str, Views] = {}
    for spec in inputs:
        for i, step in enumerate(spec.steps):
            if step.views is not None and i != len(spec.steps) - 1:
                raise ValueError(
                    f"input {spec.name!r}: views is step {i + 1} of {len(spec.steps)}; it "
                    "must be the last (later steps would read k rows as one sample)"
                )
        views = views_of(spec)
        if views is not None:
            found[str(spec.name)] = views
    if not found:
        for out in outputs:
            if out.views is not None:
                raise ValueError(
                    f"output {out.name!r} declares views: {out.views}, but no input has a "
                    "views step: each sample is one row, there is nothing to reduce"
                )
        return
    shapes = {(len(v.transforms), v.order) for v in found.values()}
    if len(shapes) > 1:
        listed = ", ".join(f"{n!r}: {len(v.transforms)} {v.order}" for n, v in found.items())
        raise ValueError(f"inputs' views disagree ({listed}): one count and one order")
    turned = [str(o.name) for o in outputs for s in o.steps if s.transpose is not None]
    if turned:
        raise ValueError(
            f"output {turned[0]!r} has a transpose step: views reduce an output's rows along "
            "its first axis, which a transpose moves; inputs with views take outputs batch-first"
        )
    for spec in inputs:
        if spec.stream is not None or spec.state is not None:
            raise ValueError(
                f"input {spec.name!r} is streamed or a state: views go with inputs fed per "
                "sample only"
            )
    if not outputs:
        raise ValueError(
            "inputs have views: declare the outputs, each with `views: mean`, `max` or "
            "`model` (how its rows per sample become one answer)"
        )
    k = len(next(iter(found.values())).transforms)
    for out in outputs:
        if out.views is None:
            raise ValueError(
                f"output {out.name!r}: inputs have views ({k} rows per sample); say how its "
                "rows become one answer: `views: mean`, `max`, "
                "or `model` (the model answers one row per sample itself)"
            )
        if out.type == "generation":
            raise ValueError(f"output {out.name!r}: a generation output takes no views")


MASK_TYPES = ("int32", "int64", "bool", "float32")
"""What an attention mask's 0 and 1 are given as (transformers' extractors: int32)."""


def own_length(spec: Input) -> bool:
    """Whether each sample keeps its own length: waveforms decoded without ``fit_length``, or
    texts tokenized with ``padding: longest``."""
    names = {n for step in spec.steps for n in step.__struct_fields__ if getattr(step, n)}
    longest = bool(spec.steps) and getattr(spec.steps[0].tokenize, "padding", "") == "longest"
    return longest or ("decode_audio" in names and "fit_length" not in names)


def may_differ(spec: Input) -> bool:
    """Whether the input's samples may differ in size from one another (``own_length``, a mask
    of such an input, or images each sized by its own: ``resize_multiple``)."""
    sized = any(step.resize_multiple is not None for step in spec.steps)
    return own_length(spec) or spec.mask_of is not None or sized


def check_lengths(inputs: Sequence[Input], outputs: Sequence[Output] = ()) -> None:
    """``pad_batch`` only on waveforms at their own length (a tokenizer pads texts with its
    own pad); ``mask_of`` on an input with nothing else (no steps, value, state, stream or
    shape; element type of ``MASK_TYPES``), naming an input at its own length, one mask each;
    and no ``pool`` step over answers of different lengths (not built)."""
    fed = {str(i.name): i for i in inputs if from_samples(i)}
    masked: dict[str, str] = {}
    for spec in inputs:
        name = str(spec.name)
        texts = bool(spec.steps) and spec.steps[0].tokenize is not None
        if spec.pad_batch is not None and (texts or not (name in fed and own_length(spec))):
            raise ValueError(
                f"input {name!r}: pad_batch pads waveforms kept at their own length (a "
                "decode_audio step and no fit_length); this input's samples "
                + (
                    "are texts its tokenizer pads (with its own pad)"
                    if texts
                    else "are never of different lengths"
                )
            )
        if spec.mask_of is None:
            continue
        keys = ("value", "state", "stream", "pad_batch")
        others = [k for k in keys if getattr(spec, k) is not None]
        if spec.steps or spec.shape or others or spec.type != "tensor":
            raise ValueError(
                f"input {name!r} is the mask of {spec.mask_of!r}: it is made at each call, "
                f"so it has no steps, shape, {', '.join(others) or 'value or state'}, and type "
                "tensor"
            )
        if spec.element_type not in MASK_TYPES:
            raise ValueError(
                f"input {name!r}: a mask's element_type is one of {', '.join(MASK_TYPES)}, "
                f"not {spec.element_type}"
            )
        target = fed.get(spec.mask_of)
        if target is None or not own_length(target):
            kept = ", ".join(repr(n) for n, i in fed.items() if own_length(i)) or "none"
            raise ValueError(
                f"input {name!r}: mask_of {spec.mask_of!r} names no input of the model kept "
                "at its own length (waveforms without fit_length, texts tokenized with "
                f"padding: longest; those: {kept})"
            )
        if spec.mask_of in masked:
            raise ValueError(
                f"inputs {masked[spec.mask_of]!r} and {name!r} are both the mask of "
                f"{spec.mask_of!r}"
            )
        masked[spec.mask_of] = name
    own = [str(i.name) for i in inputs if own_length(i)]
    pooled = [str(o.name) for o in outputs for s in o.steps if s.pool is not None]
    if own and pooled:
        raise ValueError(
            f"input {own[0]!r} feeds samples at their own lengths and output {pooled[0]!r} "
            "pools their states: pooling answers of different lengths is not built; give the "
            "samples one length (fit_length, or tokenize with padding: fixed)"
        )
