"""ONNX Runtime: an ``InferenceSession`` on the CPU provider, or CUDA when present."""

from __future__ import annotations

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
