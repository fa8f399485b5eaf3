"""The predictor interface. Timed regions contain ``predict`` and nothing else."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.input_kinds import declared_shape, model_dims
from pinbench.registry.ports import Input, Output
from pinbench.trace.events import FrameworkTrace
from pinbench.trace.levels import TraceUnsupported, offers
from pinbench.worker.named import NamedInputs, describe
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions

Array = npt.NDArray[np.generic]
Batch = Array | NamedInputs
"""What ``check_input`` and ``predict`` take."""
Outputs = dict[str, Array]
"""One prediction: every declared output under its manifest name (``str(name)`` for an
index), in manifest order; with no outputs declared, every output of the model by its own
name (or position)."""


class ModelLoadError(UserError):
    def __init__(self, *, model: str, reason: str) -> None:
        super().__init__(f"cannot load model {model}: {reason}")
        self.model = model
        self.reason = reason


class DeviceUnavailable(UserError):
    def __init__(self, *, framework: str, device: str, available: list[str]) -> None:
        super().__init__(
            f"{framework} cannot run on {device} here; available: {', '.join(available)}"
        )
        self.framework = framework
        self.device = device
        self.available = available


class InputMismatch(UserError):
    def __init__(self, *, name: str, expected: str, actual: str) -> None:
        super().__init__(f"input {name!r}: the model expects {expected}, got {actual}")
        self.name = name
        self.expected = expected
        self.actual = actual


class InputRefused(InputMismatch):
    """The framework refused the first batch, which the model's signature as read did not rule
    out (a reshape inside the graph, rows per sample the model needs): its own complaint,
    beside the model's real inputs and what it was given."""

    def __init__(self, *, inputs: list[str], actual: str, complaint: str) -> None:
        UserError.__init__(
            self,
            f"the model refused its first batch ({complaint}); the model's inputs: "
            f"{', '.join(inputs) if inputs else 'not told by the framework'}; it was given "
            f"{actual}",
        )
        self.name = ", ".join(inputs)
        self.expected = complaint
        self.actual = actual
        self.inputs = inputs
        self.complaint = complaint


class SignatureMismatch(UserError):
    """A declared input or output does not fit the model's own signature: names both sides."""

    def __init__(self, *, side: str, name: str, declared: str, model: str) -> None:
        super().__init__(
            f"{side} {name}: the manifest declares {declared}, the model has {model}; "
            "fix the manifest's inputs/outputs to match the model"
        )
        self.side = side
        self.name = name
        self.declared = declared
        self.model = model


@dataclass(frozen=True, slots=True)
class Port:
    """One input or output as the model itself describes it; ``None`` where it cannot tell.

    ``shape`` includes the batch axis; a dimension that is not an int (``None``, ``"N"``, a
    symbol) is dynamic and fits any size."""

    name: str
    dtype: str | None = None
    shape: tuple[Any, ...] | None = None

    def describe(self) -> str:
        dtype = self.dtype or "any element type"
        shape = "any shape" if self.shape is None else f"shape {list(self.shape)}"
        return f"{self.name!r} ({dtype}, {shape})"


def _listing(ports: Sequence[Port]) -> str:
    return "[" + ", ".join(p.describe() for p in ports) + "]"


def bind_inputs(declared: Sequence[Input], ports: Sequence[Port]) -> list[Port]:
    """The model's input for each declared input, in manifest order, or ``SignatureMismatch``.

    A name is a model input's name, an int its index. Every model input must be declared (the
    model needs data for each). The element type is compared where the model tells it; the
    declared ``shape`` excludes the batch axis: the model's rank is ``len(shape) + 1`` and
    each of its static dimensions after the batch axis must equal the declared one (a
    dynamic dimension fits any). An empty ``shape`` declares no shape. A state input's batch
    axis is at its ``batch_axis``; a constant has its value's shape, no batch axis
    (``registry.input_kinds.model_dims``). With nothing declared,
    the model must have exactly one input, which is used."""
    if not declared:
        if len(ports) != 1:
            raise SignatureMismatch(
                side="inputs",
                name="(none declared)",
                declared="no inputs",
                model=f"{len(ports)} inputs {_listing(ports)}",
            )
        return list(ports)
    bound = _bind("input", [d.name for d in declared], ports)
    for spec, port in zip(declared, bound, strict=True):
        label = _label(spec.name)
        if port.dtype is not None and port.dtype != spec.element_type:
            raise SignatureMismatch(
                side="input",
                name=label,
                declared=f"element type {spec.element_type}",
                model=f"element type {port.dtype} for {port.name!r}",
            )
        want = model_dims(spec)  # None at the batch axis; a constant has none
        if want is None or port.shape is None:
            continue
        fits = len(port.shape) == len(want) and all(
            dim is None or not isinstance(got, int) or got == dim
            for got, dim in zip(port.shape, want, strict=True)
        )
        if not fits:
            raise SignatureMismatch(
                side="input",
                name=label,
                declared=declared_shape(spec),
                model=f"shape {list(port.shape)} for {port.name!r} (rank {len(port.shape)})",
            )
    undeclared = [p for p in ports if p not in bound]
    if undeclared:
        raise SignatureMismatch(
            side="input",
            name=repr(undeclared[0].name),
            declared="no such input",
            model=f"it as an input it needs data for: {undeclared[0].describe()}",
        )
    return bound


def bind_outputs(declared: Sequence[Output], ports: Sequence[Port]) -> list[Port]:
    """The model's output for each declared output, in manifest order, or ``SignatureMismatch``
    (a name is a model output's name, an int its index; declaring some outputs leaves the
    others unread). With nothing declared, every output of the model."""
    if not declared:
        return list(ports)
    return _bind("output", [d.name for d in declared], ports)


def output_keys(declared: Sequence[Output], ports: Sequence[Port]) -> list[str]:
    """The keys ``predict`` returns: declared names (``str`` of an index), else the model's."""
    return [str(d.name) for d in declared] if declared else [p.name for p in ports]


def _label(name: str | int) -> str:
    return f"#{name}" if isinstance(name, int) else repr(name)


def _bind(side: str, names: Sequence[str | int], ports: Sequence[Port]) -> list[Port]:
    by_name = {p.name: p for p in ports}
    bound: list[Port] = []
    for name in names:
        port = (
            (ports[name] if 0 <= name < len(ports) else None)
            if isinstance(name, int)
            else by_name.get(name)
        )
        if port is None:
            raise SignatureMismatch(
                side=side,
                name=_label(name),
                declared=f"{side} {_label(name)}",
                model=f"{len(ports)} {side}s {_listing(ports)}",
            )
        if port in bound:
            raise SignatureMismatch(
                side=side,
                name=_label(name),
                declared=f"{port.name!r} twice",
                model=f"it once, among {_listing(ports)}",
            )
        bound.append(port)
    return bound


class Predictor(ABC):
    """``open(model, options)`` once, ``predict(batch)`` many times, ``close()`` once."""

    NAME: ClassVar[str]
    TITLE: ClassVar[str]
    """The framework's name for people (``PyTorch``)."""
    FORMATS: ClassVar[tuple[str, ...]]

    @classmethod
    @abstractmethod
    def framework_version(cls) -> str:
        """The version of the framework this process actually imported."""

    def check_format(self, model: ModelFiles) -> None:
        """Raise ``ModelLoadError`` if this framework does not load ``model``'s format."""
        if model.format not in self.FORMATS:
            raise ModelLoadError(
                model=model.format, reason=f"{self.TITLE} loads {', '.join(self.FORMATS)} only"
            )

    @abstractmethod
    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        """Load the model and bind ``model.inputs``/``model.outputs`` to its own signature;
        raise ``ModelLoadError`` / ``DeviceUnavailable`` / ``SignatureMismatch`` with the
        reason, before anything is timed."""

    def check_input(self, batch: Batch) -> None:  # noqa: B027 - optional hook
        """Raise ``InputMismatch`` if the batch's shape or dtype cannot be fed to the model
        (one array, or ``NamedInputs``: an array per declared input).

        Predictors that know their input signature override this with a precise check; for
        the others ``first_predict`` reports the framework's own complaint.
        """

    def first_predict(self, batch: Batch) -> Outputs:
        """The first (cold) prediction; a failure is the framework's complaint about the input,
        named beside the model's real inputs (``InputRefused``; a ``SignatureMismatch`` found
        only now, e.g. PyTorch's output count, passes as is)."""
        try:
            return self.predict(batch)
        except SignatureMismatch:
            raise
        except Exception as exc:  # the framework's own error types
            raise InputRefused(
                inputs=[p.describe() for p in self.input_ports()],
                actual=describe(batch),
                complaint=f"{type(exc).__name__}: {exc}".strip(),
            ) from None

    def input_ports(self) -> Sequence[Port]:
        """The model's own inputs, as bound at ``open`` (in manifest order); none where the
        predictor does not read them."""
        return ()

    @abstractmethod
    def predict(self, batch: Batch) -> Outputs:
        """Run the model on one batch (one array for a model of one input; ``NamedInputs``, an
        array per declared input, for any number: ``feeds.Feeds``); return the declared outputs
        by name, in manifest order."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model."""

    def begin_stream(self, rows: int) -> None:  # noqa: B027 - optional hook
        """A streamed batch of ``rows`` samples begins (``worker.stream``): a model that
        keeps state of its own between calls (a TensorFlow Lite model's variables) starts it
        afresh now and carries it from chunk to chunk until the next stream begins."""

    PROFILES_ONE_THREAD: ClassVar[bool] = False
    """The framework's profiler records only the thread that started it: while it runs,
    predictions are made on that thread (``run_scenario(on_caller=True)``)."""

    def start_profiling(self, scratch: Path) -> None:
        """Start the framework's own operator profiler, before ``open`` (so loading is
        profiled too) and outside any timed region; ``scratch`` is a writable folder."""
        raise TraceUnsupported(
            framework=self.NAME,
            level="framework",
            offers=offers(self.NAME),
            reason="its predictor reads no operator profiler",
        )

    def stop_profiling(self) -> FrameworkTrace:
        """Stop the profiler and return its events on the framework's clock."""
        raise NotImplementedError
