"""A model manifest's code, as data: ``preprocess`` and ``postprocess`` (MLModelScope's names),
each one Python function in a file of the artifact or inline in the manifest; and a
``torch-state-dict`` model's ``builder``, the function that builds the network its weights load
into (TorchServe's model file beside its serialized file).

This module only describes and checks the declaration; nothing here reads, imports or runs the
code (reading is not running, invariant 12). ``pinbench.processing`` runs it, inside a runner,
with the consent of whoever runs it.
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import msgspec

from pinbench.registry.manifest_parts import _Strict, check_relative_path

if TYPE_CHECKING:
    from pinbench.registry.ports import Input

MAX_INLINE_CHARS = 65536
"""Inline code is for a few lines; more belongs in a file of the artifact."""


class Code(_Strict, frozen=True, kw_only=True):
    """``{file: proc.py, function: prepare}`` or ``{code: "def prepare(...): ...", function:
    prepare}``: the function named ``function`` of a Python file among the model's ``files``
    (its sha256 pins it like every byte) or of the inline ``code`` (hashed with the manifest)."""

    function: str
    """The name of the function to call, defined at the top level of the code."""
    file: str | None = None
    """A ``.py`` file among the model's files."""
    code: Annotated[str, msgspec.Meta(max_length=MAX_INLINE_CHARS)] | None = None
    """The Python source itself (a few lines)."""

    def __post_init__(self) -> None:
        if (self.file is None) == (self.code is None):
            raise ValueError(
                "processing code names either a `file` of the artifact or inline `code`, "
                f"exactly one (function {self.function!r})"
            )
        if not self.function.isidentifier() or keyword.iskeyword(self.function):
            raise ValueError(f"function {self.function!r} is not a Python function name")
        if self.file is not None:
            check_relative_path(self.file)
            if not self.file.endswith(".py"):
                raise ValueError(f"processing code file {self.file!r} must be a .py file")

    @property
    def where(self) -> str:
        """``proc.py:prepare``, or ``<inline>:prepare``, for messages."""
        return f"{self.file or '<inline>'}:{self.function}"


STATE_DICT_FORMAT = "torch-state-dict"
"""The model format whose weights a ``builder`` builds the module for."""
WEIGHTS_SUFFIXES = (".pt", ".pth", ".ckpt", ".pt.tar", ".pth.tar", ".ckpt.tar", ".safetensors")
"""The weights file of a ``torch-state-dict`` model: the one file of the artifact ending so.
``.pth.tar`` (and its kin) is how older research code names ``torch.save``'s output (the
ImageNet example's ``checkpoint.pth.tar``): the bytes are read as what they are, whatever the
name says (``artifacts.model_formats``)."""


class Builder(Code, frozen=True, kw_only=True):
    """``{file: model.py, function: build, state_dict_key: model_state}``: the function that
    builds a ``torch-state-dict`` model's ``torch.nn.Module``, called as ``function(files)``
    (``function(files, hyperparameters)`` with ``hyperparameters_key``)
    (each model file's path in the artifact to a readable local path), whose weights are then
    loaded with ``load_state_dict(strict=True)``. Run only as processing code is: inside a
    runner, with the run's consent (``--allow-code``)."""

    state_dict_key: str | None = None
    """For a checkpoint (a dict holding more than the weights): the key whose value is the
    state dict (``model_state``). Left out, the file is the state dict itself."""
    hyperparameters_key: str | None = None
    """For a checkpoint that keeps the hyper-parameters the module is made from (Lightning's
    ``hyper_parameters``): their key. The function is then called as ``function(files,
    hyperparameters)``, the value under the key read as plain data
    (``artifacts.hyperparameters``: dicts, lists, numbers, strings, tensors; omegaconf's
    containers as their content); anything else in it refuses the run, naming it."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for field, key in (
            ("state_dict_key", self.state_dict_key),
            ("hyperparameters_key", self.hyperparameters_key),
        ):
            if key is not None and not (0 < len(key) <= 256 and key.isprintable()):
                raise ValueError(f"builder {field} {key!r} must be 1 to 256 printable characters")
        if self.hyperparameters_key is not None and self.state_dict_key is None:
            raise ValueError(
                "builder hyperparameters_key needs state_dict_key: hyper-parameters are kept "
                "beside the weights in a checkpoint dict, whose weights' key it names"
            )
        if self.hyperparameters_key is not None and (
            self.hyperparameters_key == self.state_dict_key
        ):
            raise ValueError("builder hyperparameters_key and state_dict_key name the same key")


def check_builder(
    model_format: str,
    builder: Builder | None,
    paths: set[str],
    architecture: str | None,
    trusted: bool,
) -> None:
    """A ``torch-state-dict`` model names its ``builder`` (a file among the files), one weights
    file, and neither ``architecture`` nor ``trusted``; no other format names a builder
    (``ValueError`` naming what is wrong)."""
    if model_format != STATE_DICT_FORMAT:
        if builder is not None:
            raise ValueError(
                f"`builder` builds the module of a {STATE_DICT_FORMAT} model; this model's "
                f"format is {model_format}: leave it out, or declare format {STATE_DICT_FORMAT}"
            )
        return
    if builder is None:
        raise ValueError(
            f"a {STATE_DICT_FORMAT} model holds weights only: name the `builder` that makes its "
            "torch.nn.Module, e.g. `builder: {file: model.py, function: build}` (a file among "
            "the files, run with the run's consent, --allow-code)"
        )
    if builder.file is not None and builder.file not in paths:
        raise ValueError(
            f"builder file {builder.file!r} is not among the files: list it under `files` "
            "(its sha256 pins it like every byte)"
        )
    for field, value in (("architecture", architecture), ("trusted", trusted)):
        if value:
            raise ValueError(
                f"`{field}` is not for a {STATE_DICT_FORMAT} model: its `builder` makes the "
                "module and its weights load with torch.load(weights_only=True), which "
                "unpickles tensors only: leave it out"
            )
    weights = sorted(p for p in paths if p.endswith(WEIGHTS_SUFFIXES))
    if len(weights) != 1:
        raise ValueError(
            f"a {STATE_DICT_FORMAT} model has exactly one weights file ending in "
            f"{', '.join(WEIGHTS_SUFFIXES)}; it has {len(weights)}"
            + (f" ({', '.join(weights)})" if weights else "")
        )
    if builder.state_dict_key is not None and weights[0].endswith(".safetensors"):
        raise ValueError(
            f"builder state_dict_key {builder.state_dict_key!r} names a key of a checkpoint, "
            f"but {weights[0]} is safetensors, a flat state dict: leave it out"
        )


def check_processing(
    preprocess: Code | None, postprocess: Code | None, paths: set[str], inputs: Sequence[Input]
) -> None:
    """A model's ``preprocess`` and ``postprocess`` (``ValueError`` naming what is wrong): each
    file among the model's files; with ``preprocess``, the inputs it makes have no steps (the
    code makes them whole) and none is streamed."""
    for role, code in (("preprocess", preprocess), ("postprocess", postprocess)):
        if code is not None and code.file is not None and code.file not in paths:
            raise ValueError(
                f"{role} file {code.file!r} is not among the files: list it under `files` "
                "(its sha256 pins it like every byte)"
            )
    if preprocess is None:
        return
    if all(spec.value is not None or spec.state is not None for spec in inputs):
        raise ValueError(
            "`preprocess` gives the inputs fed from the samples: declare them under `inputs` "
            "(name, element_type and, best, shape), so its answers are checked"
        )
    for spec in inputs:
        if spec.stream is not None or spec.steps:
            what = "is streamed" if spec.stream is not None else "declares steps"
            raise ValueError(
                f"input {spec.name!r} {what}, but `preprocess` makes every input fed from the "
                "samples: leave its steps (and stream) out, the code does that work"
            )
