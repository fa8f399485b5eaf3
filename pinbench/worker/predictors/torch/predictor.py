"""PyTorch: TorchScript, ``torch.export`` programs, safetensors weights in a named
architecture, or weights built by the model's own code (``torch-state-dict``: ``state_dicts``).
Pickled modules (``torch-pickle``) load only when the manifest says ``trusted``.
"""

from __future__ import annotations

import contextlib
import pickle
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

import torch

from pinbench.artifacts.model_formats import PICKLE_SUFFIXES, pickle_routes
from pinbench.errors import UserError
from pinbench.registry.processing_code import WEIGHTS_SUFFIXES
from pinbench.trace.clock import wall_minus_perf
from pinbench.trace.events import FrameworkEvent, FrameworkTrace, mark_top_level
from pinbench.worker.predictors.base import (
    Array,
    Batch,
    DeviceUnavailable,
    ModelLoadError,
    Outputs,
    Port,
    Predictor,
    SignatureMismatch,
)
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.feeds import Feeds
from pinbench.worker.predictors.torch.architectures import ARCHITECTURES, PORTS
from pinbench.worker.predictors.torch.signatures import (
    _export_inputs,
    _export_keywords,
    _export_outputs,
    _forward_inputs,
    _script_inputs,
)

_CPU = torch._C._autograd.DeviceType.CPU
_SUFFIXES = {
    "torchscript": (),  # any name: the one file whose content is a TorchScript archive
    "torch-export": (".pt2",),
    "safetensors": (".safetensors",),
    "torch-pickle": PICKLE_SUFFIXES,
    "torch-state-dict": WEIGHTS_SUFFIXES,
}


@contextlib.contextmanager
def _checked_sympify(name: str) -> Iterator[None]:
    """While an archive loads, every text ``sympy.sympify`` is handed must pass
    ``check_expression`` (``sympify`` is ``eval``; the archive's JSON was checked before
    loading, this holds for any member or field that check did not read)."""
    import sympy  # type: ignore[import-untyped]

    from pinbench.artifacts.shape_exprs import ShapeExprRefused, check_expression

    real = sympy.sympify

    def checked(a: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(a, str):
            try:
                check_expression(a)
            except ShapeExprRefused as exc:
                raise ModelLoadError(model=name, reason=str(exc)) from None
        return real(a, *args, **kwargs)

    with mock.patch.object(sympy, "sympify", checked):
        yield


@contextlib.contextmanager
def _no_unpickling(name: str) -> Iterator[None]:
    """Load a ``torch.export`` archive without unpickling: torch 2.13 unpickles a weight or
    constant the archive marks ``use_pickle`` with ``torch.load(weights_only=False)``, and
    opaque objects with ``pickle``; either runs arbitrary code. Here ``torch.load`` reads
    tensors only (``weights_only=True``) and any other unpickling is refused."""

    def weights_only(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        return real_load(*args, **kwargs)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ModelLoadError(
            model=name,
            reason="the torch.export archive holds a pickled object; pinbench never "
            "unpickles one from a torch-export model (export it without custom objects)",
        )

    real_load = torch.load
    with (
        mock.patch.object(torch, "load", weights_only),
        mock.patch.object(pickle, "loads", refuse),
        mock.patch.object(pickle, "load", refuse),
        mock.patch.object(torch._C, "_pickle_load_obj", refuse),
    ):
        yield


class TorchPredictor(Predictor):
    """What PyTorch can tell of a signature, and so what ``open`` checks:

    - ``torch-export``: the graph signature's input names, element types, ranks and static
      dims, and its output count;
    - ``torchscript`` / ``torch-pickle`` / ``torch-state-dict``: ``forward``'s argument names
      (those without a default must all be declared; TorchScript's must be tensors); element
      types and shapes are not recorded, so a wrong one is the framework's complaint at the
      first (cold) prediction;
    - ``safetensors``: the architecture is pinbench's own (``architectures.PORTS``): the
      names are whatever the manifest says, the counts must match the architecture's.

    Several inputs bind by name: a declared name is one of ``forward``'s arguments (a
    program's user inputs, which carry them), an int that argument's position; a name the
    model lacks is refused, never matched by position. Each prediction passes the declared
    inputs' arrays as ``forward`` takes them, in its order (a program exported with keyword
    arguments gets those by keyword); a safetensors architecture takes them in manifest order.

    Outputs have no names in PyTorch: the declared outputs bind to the model's outputs in
    manifest order (a declared int binds that index), and their count must equal the model's:
    checked at ``open`` where it is known, else on every prediction (the first, untimed one
    refuses a mismatch before anything is measured)."""

    NAME: ClassVar[str] = "torch"
    TITLE: ClassVar[str] = "PyTorch"
    FORMATS: ClassVar[tuple[str, ...]] = tuple(_SUFFIXES)
    PROFILES_ONE_THREAD: ClassVar[bool] = True  # torch.profiler: RecordFunction is per thread

    def __init__(self) -> None:
        self._module: Any = None
        self._device = torch.device("cpu")
        self._threads = torch.get_num_threads()
        self._profiler: Any = None
        self._count: int | None = None
        self._pick: list[tuple[str, int]] = []
        self._declared: list[str] = []
        self._feeds = Feeds((), ())
        self._order: list[int] = []
        """For each argument ``forward`` takes, in its order: the declared input that feeds it."""
        self._keywords: list[str] = []
        """The last arguments' keywords (a program exported with keyword arguments)."""

    @classmethod
    def framework_version(cls) -> str:
        return str(torch.__version__)

    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        self.check_format(model)
        if options.device == "cuda" and not torch.cuda.is_available():
            raise DeviceUnavailable(framework=self.NAME, device="cuda", available=["cpu"])
        self._device = torch.device(options.device)
        if options.threads is not None:
            torch.set_num_threads(options.threads)
        name, path = _model_file(model)
        self._keywords = []
        try:
            module, inputs, outputs = self._load(model, name, str(path))
        except UserError:  # ModelLoadError; a builder's CodeRefused or CodeFailed
            raise
        except Exception as exc:  # torch raises many types for a bad file
            reason = f"{type(exc).__name__}: {exc}".replace(str(path), name).strip()
            raise ModelLoadError(model=name, reason=reason.splitlines()[0]) from None
        self._feeds = Feeds.bind(model.inputs, inputs)
        self._order = self._feeds.order(inputs)
        self._bind_outputs(model, outputs)
        self._module = module.to(self._device) if hasattr(module, "to") else module

    def _bind_outputs(self, model: ModelFiles, count: int | None) -> None:
        declared = [d.name for d in model.outputs]
        self._declared = [str(d) for d in declared]
        if count is not None and declared and len(declared) != count:
            self._mismatch(count)
        self._count = len(declared) if declared else None
        self._pick = [(str(d), d if isinstance(d, int) else i) for i, d in enumerate(declared)]
        if count is not None:
            for _, index in self._pick:
                if index >= count:
                    raise SignatureMismatch(
                        side="output",
                        name=f"#{index}",
                        declared=f"output #{index}",
                        model=f"{count} outputs",
                    )

    def _mismatch(self, count: int) -> None:
        raise SignatureMismatch(
            side="outputs",
            name=", ".join(self._declared),
            declared=f"{len(self._declared)} outputs {self._declared}",
            model=f"{count} outputs (PyTorch outputs have no names: they bind in order)",
        )

    def _load(self, model: ModelFiles, name: str, path: str) -> tuple[Any, list[Port], int | None]:
        """The module, its inputs as far as PyTorch tells, and its output count if known."""
        if model.format == "torchscript":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                script = torch.jit.load(path, map_location="cpu").eval()  # type: ignore[no-untyped-call]
            return script, _script_inputs(script, name), None
        if model.format == "torch-export":
            from pinbench.artifacts.shape_exprs import ArchiveRefused, check_archive

            try:
                check_archive(Path(path))
            except ArchiveRefused as exc:
                raise ModelLoadError(model=name, reason=str(exc)) from None
            with _no_unpickling(name), _checked_sympify(name):
                program = torch.export.load(path)
                module = program.module()
            inputs = _export_inputs(program)
            self._keywords = _export_keywords(program, name, len(inputs))
            return module, inputs, _export_outputs(program)
        if model.format == "safetensors":
            ins, outs = PORTS.get(model.architecture or "", (1, 1))
            names = [str(d.name) for d in model.inputs] or ["0"]
            ports = [Port(n) for n in names[:ins]] + [Port(f"#{i}") for i in range(len(names), ins)]
            return self._from_weights(model, name, path), ports, outs
        if model.format == "torch-state-dict":
            from pinbench.worker.predictors.torch.state_dicts import build

            built = build(model, name, Path(path))
            return built, _forward_inputs(built), None
        if not model.trusted:
            raise ModelLoadError(
                model=name,
                reason="torch-pickle files run arbitrary code when loaded; pinbench unpickles "
                "only models whose manifest says `trusted: true`, and only when the run allows "
                f"it (`pinbench run --allow-pickle`; a server started with `--allow-pickle`). "
                f"{pickle_routes(name)}",
            )
        module = torch.load(path, map_location="cpu", weights_only=False)
        if not isinstance(module, torch.nn.Module):
            raise ModelLoadError(model=name, reason=f"unpickled a {type(module).__name__}")
        return module.eval(), _forward_inputs(module), None

    @staticmethod
    def _from_weights(model: ModelFiles, name: str, path: str) -> torch.nn.Module:
        from safetensors.torch import load_file

        build = ARCHITECTURES.get(model.architecture or "")
        if build is None:
            raise ModelLoadError(
                model=name,
                reason=f"safetensors weights need an architecture pinbench knows; the manifest "
                f"names {model.architecture!r}, known: {', '.join(sorted(ARCHITECTURES))}",
            )
        module = build()
        state = load_file(path, device="cpu")
        missing, unexpected = module.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ModelLoadError(
                model=name,
                reason=f"weights do not fit {model.architecture}: missing {sorted(missing)[:5]}, "
                f"unexpected {sorted(unexpected)[:5]}",
            )
        return module.eval()

    def input_ports(self) -> tuple[Port, ...]:
        return self._feeds.ports

    def check_input(self, batch: Batch) -> None:
        self._feeds.check(batch)

    def predict(self, batch: Batch) -> Outputs:
        arrays = self._feeds.arrays(batch)
        with torch.inference_mode():
            args = [torch.from_numpy(arrays[i]).to(self._device) for i in self._order]
            if self._keywords:
                at = len(args) - len(self._keywords)
                out = self._module(*args[:at], **dict(zip(self._keywords, args[at:], strict=True)))
            else:
                out = self._module(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if self._count is None:  # nothing declared: every output, by position
            return {str(i): _numpy(t) for i, t in enumerate(outs)}
        if len(outs) != self._count:
            self._mismatch(len(outs))
        return {key: _numpy(outs[index]) for key, index in self._pick}

    def close(self) -> None:
        self._module = None
        torch.set_num_threads(self._threads)  # the setting is process-wide

    def start_profiling(self, scratch: Path) -> None:
        """``torch.profiler`` on the CPU activities (Kineto). Kineto prints a ``USDT:`` line at
        start and stop that no setting silences (torch 2.13)."""
        from torch.profiler import ProfilerActivity, profile

        self._profiler = profile(activities=[ProfilerActivity.CPU])
        self._profiler.start()

    def stop_profiling(self) -> FrameworkTrace:
        assert self._profiler is not None
        self._profiler.stop()
        offset = wall_minus_perf()  # Kineto stamps events with the wall clock
        results = self._profiler.profiler.kineto_results
        self._profiler = None
        events = [
            FrameworkEvent(
                e.name(),
                e.name(),
                int(e.start_ns()),
                int(e.end_ns()),
                str(e.start_thread_id()),
                True,
            )
            for e in results.events()
            if e.device_type() == _CPU and e.end_ns() > e.start_ns()
        ]
        mark_top_level(events)
        return FrameworkTrace(
            source=f"torch.profiler {torch.__version__}",
            events=events,
            offset_ns=offset,
            resolution_ns=1000,
            notes=[
                "operators are aten:: calls; nested calls appear on the timeline, the table "
                "counts top-level calls only"
            ],
        )


def _model_file(model: ModelFiles) -> tuple[str, Path]:
    """The model's file: a TorchScript archive by its content, whatever its name
    (``artifacts.torchscript``); the other formats by their suffix."""
    if model.format == "torchscript":
        from pinbench.artifacts.torchscript import NotOneTorchScript, torchscript_file

        try:
            name = torchscript_file(model.files)
        except NotOneTorchScript as exc:
            raise ModelLoadError(model=model.format, reason=str(exc)) from None
        return name, model.files[name]
    try:
        return model.single(_SUFFIXES[model.format])
    except ValueError as exc:
        raise ModelLoadError(model=model.format, reason=str(exc)) from None


def _numpy(t: Any) -> Array:
    result: Array = t.numpy() if t.device.type == "cpu" else t.cpu().numpy()
    return result
