"""ONNX Runtime: an ``InferenceSession`` on the CPU provider, or CUDA when present."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import onnxruntime as ort

from pinbench.registry.onnx_files import ExternalDataOutside, OnnxRefused, check_onnx, model_file
from pinbench.trace.clock import wall_minus_perf
from pinbench.trace.events import FrameworkEvent, FrameworkTrace
from pinbench.worker.model_folder import FOLDER, confined, materialise
from pinbench.worker.named import NamedInputs
from pinbench.worker.predictors.base import (
    Batch,
    DeviceUnavailable,
    ModelLoadError,
    Outputs,
    Port,
    Predictor,
    bind_outputs,
    output_keys,
)
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.feeds import Feeds

_PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
_LEVELS = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
"""A request's ``transform.graph_optimization`` (``transforms.spec.GRAPH_LEVELS``)."""
_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(uint8)": "uint8",
    "tensor(int8)": "int8",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(bool)": "bool",
}
"""ONNX element types by the manifest's names; any other (string, bfloat16...) is shown as is."""


def _port(arg: Any) -> Port:
    """An ``onnxruntime.NodeArg`` as a ``Port``: dims are ints, or names/None when dynamic."""
    shape = tuple(arg.shape) if arg.shape is not None else None
    return Port(name=arg.name, dtype=_DTYPES.get(arg.type, str(arg.type)), shape=shape)


class ExternalDataRefused(ModelLoadError):
    """An ONNX file's external data is not a file of its artifact beside it."""

    def __init__(self, *, model: str, tensor: str, location: str, problem: str) -> None:
        super().__init__(
            model=model,
            reason=f"tensor {tensor!r} keeps its data in {location!r}, which {problem}",
        )
        self.tensor = tensor
        self.location = location
        self.problem = problem


def check_model(model: ModelFiles) -> str:
    """The artifact path of the model's ``.onnx`` file, checked as publishing checks it
    (``pinbench.registry.onnx_files``): a graph with inputs and outputs, external data only in
    the artifact's other files beside it; ``ModelLoadError`` (``ExternalDataRefused`` for a
    location) otherwise."""
    try:
        name = model_file(list(model.files))
    except OnnxRefused as exc:
        raise ModelLoadError(model="onnx", reason=exc.reason) from None
    try:
        check_onnx(name, model.files[name], list(model.files))
    except ExternalDataOutside as exc:
        raise ExternalDataRefused(
            model=name, tensor=exc.tensor, location=exc.location, problem=exc.problem
        ) from None
    except OnnxRefused as exc:
        raise ModelLoadError(model=name, reason=exc.reason) from None
    return name


def _closed(*args: object) -> Any:
    raise RuntimeError("the predictor is not open: call open() first")


class OnnxRuntimePredictor(Predictor):
    NAME: ClassVar[str] = "onnxruntime"
    TITLE: ClassVar[str] = "ONNX Runtime"
    FORMATS: ClassVar[tuple[str, ...]] = ("onnx",)

    def __init__(self) -> None:
        self._session: ort.InferenceSession | None = None
        self._input = ""
        self._feeds = Feeds((), ())
        self._names: list[tuple[str, str]] = []
        """Each declared input's key in ``NamedInputs`` and the model's name for it."""
        self._outputs: list[str] = []
        self._keys: list[str] = []
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._run: Any = _closed
        self._profile: Path | None = None

    @classmethod
    def framework_version(cls) -> str:
        return str(ort.__version__)

    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        """Check the model as publishing does (``check_model``), load it from a folder that
        holds the artifact's files at their artifact paths and nothing else (the one handed in
        when it is one, ``pinbench.worker.model_folder``; else one made in scratch), then
        bind the declared inputs and outputs to ``session.get_inputs()`` / ``get_outputs()``."""
        self.check_format(model)
        provider = _PROVIDERS[options.device]
        available = ort.get_available_providers()
        if provider not in available:
            raise DeviceUnavailable(framework=self.NAME, device=options.device, available=available)
        name = check_model(model)
        root = confined(model.files)
        if root is None:  # handed files that are not a folder of their own: make one
            self._dir = tempfile.TemporaryDirectory(prefix="pinbench-onnx-")
            root = Path(self._dir.name) / FOLDER
            materialise(model.files, root)
        path = root / name
        so = ort.SessionOptions()
        if self._profile is not None:
            so.enable_profiling = True
            so.profile_file_prefix = str(self._profile / "onnxruntime")
        if options.threads is not None:
            so.intra_op_num_threads = options.threads
            so.inter_op_num_threads = 1
        if options.graph_optimization is not None:
            so.graph_optimization_level = _LEVELS[options.graph_optimization]
        try:
            session = ort.InferenceSession(str(path), so, providers=[provider])
        except Exception as exc:  # ORT raises its own exception types for bad models
            reason = str(exc).strip().replace(str(root) + "/", "").replace(str(root), ".")
            raise ModelLoadError(model=name, reason=reason) from None
        ins = [_port(a) for a in session.get_inputs()]
        outs = [_port(a) for a in session.get_outputs()]
        self._feeds = Feeds.bind(model.inputs, ins)
        bound = bind_outputs(model.outputs, outs)
        self._session = session
        self._run = session.run
        self._input = self._feeds.ports[0].name
        self._names = [
            (k, p.name) for k, p in zip(self._feeds.keys, self._feeds.ports, strict=True)
        ]
        self._outputs = [p.name for p in bound]
        self._keys = output_keys(model.outputs, outs)

    def input_ports(self) -> tuple[Port, ...]:
        return self._feeds.ports

    def check_input(self, batch: Batch) -> None:
        self._feeds.check(batch)

    def predict(self, batch: Batch) -> Outputs:
        if isinstance(batch, NamedInputs):
            feed = {name: batch.arrays[key] for key, name in self._names}
            got = self._run(self._outputs, feed)
        else:
            got = self._run(self._outputs, {self._input: batch})
        return dict(zip(self._keys, got, strict=True))

    def close(self) -> None:
        self._session = None
        self._run = _closed
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def start_profiling(self, scratch: Path) -> None:
        """ONNX Runtime profiles a session from its creation: ``open`` turns it on."""
        scratch.mkdir(parents=True, exist_ok=True)
        self._profile = scratch

    def stop_profiling(self) -> FrameworkTrace:
        if self._session is None:
            raise RuntimeError("the profiled session was never opened")
        offset = wall_minus_perf()  # the profiler stamps events with the wall clock
        start_ns = int(self._session.get_profiling_start_time_ns())
        path = Path(self._session.end_profiling())
        self._profile = None
        events = [e for e in map(_event, json.loads(path.read_bytes())) if e is not None]
        path.unlink(missing_ok=True)
        for e in events:
            e.start_ns += start_ns
            e.end_ns += start_ns
        return FrameworkTrace(
            source=f"onnxruntime {ort.__version__} session profiler",
            events=events,
            offset_ns=offset,
            resolution_ns=1000,
        )


def _event(raw: dict[str, Any]) -> FrameworkEvent | None:
    """One event of ONNX Runtime's profile (``ts``/``dur`` in microseconds from its start):
    ``Node`` events are operators (kernel time; the fences around them are left out),
    ``Session`` events the runtime's own spans (load, initialisation, ``model_run``)."""
    if raw.get("ph") != "X":
        return None
    name, cat = str(raw.get("name", "")), raw.get("cat")
    if cat == "Node" and not name.endswith("_kernel_time"):
        return None
    start = int(raw.get("ts", 0)) * 1000
    end = start + int(raw.get("dur", 0)) * 1000
    args = raw.get("args") or {}
    if cat == "Node":
        op = str(args.get("op_name", ""))
        keep = {k: args[k] for k in ("provider", "output_size") if k in args}
        return FrameworkEvent(
            name.removesuffix("_kernel_time"), op, start, end, str(raw.get("tid", "")), True, keep
        )
    return FrameworkEvent(name, "", start, end, str(raw.get("tid", "")), False)
