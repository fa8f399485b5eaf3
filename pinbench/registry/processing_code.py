"""A model manifest's processing code, as data: ``preprocess`` and ``postprocess`` (MLModelScope's
names), each one Python function in a file of the artifact or inline in the manifest.

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
