"""ONNX Runtime: an ``InferenceSession`` on the CPU provider, or CUDA when present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnxruntime as ort

from pinbench.evaluator.predictors.base import (
    Array,
    DeviceUnavailable,
    ModelLoadError,
    Predictor,
    check_signature,
)
from pinbench.evaluator.predictors.config import ModelFiles, PredictorOptions
from pinbench.trace.clock import wall_minus_perf
from pinbench.trace.events import FrameworkEvent, FrameworkTrace

_PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(bool)": np.bool_,
}


def _closed(*args: object) -> Any:
    raise RuntimeError("the predictor is not open: call open() first")


class OnnxRuntimePredictor(Predictor):
    NAME: ClassVar[str] = "onnxruntime"
    TITLE: ClassVar[str] = "ONNX Runtime"
    FORMATS: ClassVar[tuple[str, ...]] = ("onnx",)

    def __init__(self) -> None:
        self._session: ort.InferenceSession | None = None
        self._input = ""
        self._outputs: list[str] = []
        self._shape: list[Any] = []
        self._dtype: Any = np.float32
        self._run: Any = _closed
        self._profile: Path | None = None

    @classmethod
    def framework_version(cls) -> str:
        return str(ort.__version__)

    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        self.check_format(model)
        provider = _PROVIDERS[options.device]
        available = ort.get_available_providers()
        if provider not in available:
            raise DeviceUnavailable(framework=self.NAME, device=options.device, available=available)
        name, path = model.single((".onnx",))
        so = ort.SessionOptions()
        if self._profile is not None:
            so.enable_profiling = True
            so.profile_file_prefix = str(self._profile / "onnxruntime")
        if options.threads is not None:
            so.intra_op_num_threads = options.threads
            so.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(str(path), so, providers=[provider])
        except Exception as exc:  # ORT raises its own exception types for bad models
            reason = str(exc).strip().replace(str(path), name)
            raise ModelLoadError(model=name, reason=reason) from None
        first = session.get_inputs()[0]
        self._session = session
        self._run = session.run
        self._input = first.name
        self._shape = list(first.shape)
        self._dtype = _DTYPES.get(first.type, np.float32)
        self._outputs = [o.name for o in session.get_outputs()][:1]

    def check_input(self, batch: Array) -> None:
        check_signature(batch, name=self._input, dtype=np.dtype(self._dtype), shape=self._shape)

    def predict(self, batch: Array) -> Array:
        out: Array = self._run(self._outputs, {self._input: batch})[0]
        return out

    def close(self) -> None:
        self._session = None
        self._run = _closed

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
