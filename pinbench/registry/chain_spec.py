"""A chain as data: the request's ``chain`` section (``ChainSpec``) and what the lockfile pins
of it (``LockedChain``). Nothing here reads a file or runs code."""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from pinbench.bounds import CHAIN_WIRE_CHARS, CHAIN_WIRES
from pinbench.errors import UserError
from pinbench.registry.names import Kind, Spec
from pinbench.registry.ports import Input, Output
from pinbench.registry.processing_code import Code

STAGE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}\Z")
MAX_STAGES = 16
CODE_SUFFIX = "_code"
"""No stage name ends so: ``stage_<name>_latency_*`` (a stage's framework call) and
``stage_<name>_code_latency_*`` (its code) are then disjoint for any two stages."""
SAMPLE = "sample"
"""Not a stage: ``sample.bytes`` wires the query's sample file, its bytes as a ``uint8``
array ``(1, size)``, read before anything is timed (a detector's image, for the code that
crops what the detector found)."""
SAMPLE_BYTES = f"{SAMPLE}.bytes"


WireText = Annotated[str, CHAIN_WIRE_CHARS.length_meta]


class ChainRefused(UserError):
    """A chain that cannot be locked or run as declared: names the stage and what is wrong."""

    def __init__(self, *, stage: str, reason: str) -> None:
        super().__init__(f"chain stage {stage!r}: {reason}")
        self.stage = stage
        self.reason = reason


class _Strict(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class ChainStage(_Strict, frozen=True, kw_only=True):
    """One stage: a published model, its inputs wired to earlier stages' outputs."""

    name: str
    """The stage's name (``[a-z][a-z0-9_]*``, not ending in ``_code``): its metrics are
    ``stage_<name>_latency_*_ns`` and, with code, ``stage_<name>_code_latency_*_ns``."""
    model: str
    """The model (``NAME@RANGE``), resolved like the request's own; the last stage's is the
    request's ``model``, whose outputs the dataset's task scores."""
    inputs: Annotated[dict[WireText, WireText], CHAIN_WIRES.length_meta] = msgspec.field(
        default_factory=dict
    )
    """This stage's input name -> ``STAGE.OUTPUT`` it is fed from; none for the first stage,
    which is fed from the dataset's samples (by its manifest's steps)."""
    code: Code | None = None
    """Pinned code between the wired outputs and this stage's inputs: ``function(values,
    files)`` gets the wired arrays by this stage's input names and returns the arrays to feed
    (``file``: a ``.py`` file of this stage's model artifact; inline ``code``: hashed with the
    request); with ``join``, a list of them, one per call of the stage (a fan-out)."""
    join: Code | None = None
    """A fan-out's join: the stage runs once per feed its ``code`` returns (a detector's boxes,
    each cropped), and ``function(outputs, files)`` makes the stage's outputs from the list
    of each call's outputs, in order (the texts read, one after the other)."""

    def __post_init__(self) -> None:
        if not STAGE_NAME.match(self.name):
            raise ValueError(f"chain stage name {self.name!r} must match {STAGE_NAME.pattern}")
        if self.name == SAMPLE:
            raise ValueError(
                f"chain stage name {SAMPLE!r} is the samples' own: a wire {SAMPLE_BYTES!r} "
                "names the query's sample file; name the stage otherwise"
            )
        if self.name.endswith(CODE_SUFFIX):
            raise ValueError(
                f"chain stage name {self.name!r} must not end in {CODE_SUFFIX!r}: "
                f"stage_<name>{CODE_SUFFIX}_latency_* are the latencies of a stage's code"
            )
        for target, source in self.inputs.items():
            stage, dot, output = source.partition(".")
            if not dot or not stage or not output:
                raise ValueError(
                    f"chain stage {self.name!r} input {target!r}: {source!r} must be "
                    "STAGE.OUTPUT (an earlier stage's name and one of its outputs)"
                )
            if stage == SAMPLE and source != SAMPLE_BYTES:
                raise ValueError(
                    f"chain stage {self.name!r} input {target!r}: the sample offers "
                    f"{SAMPLE_BYTES!r} (its file's bytes) and nothing else, not {source!r}"
                )
        try:
            Spec.parse(self.model, kind=Kind.MODEL)
        except UserError as exc:
            raise ValueError(f"chain stage {self.name!r} model: {exc}") from None
        if self.code is not None and not self.inputs:
            raise ValueError(
                f"chain stage {self.name!r} has `code` but no wired `inputs`: the first stage "
                "is fed from the samples by its manifest's steps (or its own `preprocess`)"
            )
        if self.join is not None and self.code is None:
            raise ValueError(
                f"chain stage {self.name!r} has a `join` but no `code`: a fan-out's code "
                "returns the list of feeds (one per call) whose outputs the join gathers"
            )

    @property
    def model_spec(self) -> Spec:
        """``model`` parsed as the request's own (spaces around the name and range dropped)."""
        return Spec.parse(self.model, kind=Kind.MODEL)


class ChainSpec(_Strict, frozen=True, kw_only=True):
    stages: Annotated[list[ChainStage], msgspec.Meta(min_length=2, max_length=MAX_STAGES)]

    def __post_init__(self) -> None:
        names = [s.name for s in self.stages]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"chain stage names must be unique; given twice: {twice}")
        models = [s.model_spec.name for s in self.stages]
        again = sorted({m for m in models if models.count(m) > 1})
        if again:
            raise ValueError(
                f"chain stages name model {again[0]!r} twice: a lockfile pins one version of "
                "each model (publish the other under its own name)"
            )


class LockedStage(_Strict, frozen=True, kw_only=True):
    """A stage as the lockfile pins it: its model's identity and declarations (its files are
    among the lockfile's artifacts, each with its own sha256), its wiring and code."""

    name: str
    model: str
    version: str
    format: str
    architecture: str | None
    trusted: bool
    inputs: list[Input]
    outputs: list[Output]
    wires: dict[str, str]
    code: Code | None = None
    join: Code | None = None


class LockedChain(_Strict, frozen=True, kw_only=True):
    stages: list[LockedStage]
    """In the order they run (each after every stage it is fed from); the last is scored."""

    @property
    def has_code(self) -> bool:
        return any(s.code is not None for s in self.stages)


def check_chain_request(request: Any) -> None:
    """What a request with a ``chain`` must be: a model evaluated on a dataset, one sample per
    query (the code between stages reshapes one sample's arrays: a stage's batch is not the
    samples'), the stage of the request's model naming the same range (``ValueError``)."""
    if request.operator is not None or request.training is not None:
        raise ValueError("a chain is evaluated on a dataset: no operator or training section")
    if request.generation is not None or request.transform is not None:
        raise ValueError("a chain takes no generation or transform section")
    if request.batch_sizes() != [1]:
        raise ValueError(
            f"a chain runs one sample per query: batch_size 1 (got {request.batch_size}); "
            "its code between stages reshapes one sample's arrays"
        )
    wanted = Spec.parse(request.model, kind=Kind.MODEL)
    last = [s for s in request.chain.stages if s.model_spec.name == wanted.name]
    if not last:
        raise ValueError(
            f"the request's model {wanted.name!r} is none of the chain's stages: it is the last "
            "stage"
        )
    if last[0].model_spec.range != wanted.range:
        raise ValueError(
            f"chain stage {last[0].name!r} names model {last[0].model!r} and the request's "
            f"model is {request.model!r}: the last stage is the request's model, resolved once; "
            "give both the same range"
        )
