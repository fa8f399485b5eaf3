"""An engine's predictor: its version, and the refusal of every task but text generation."""

from __future__ import annotations

from typing import ClassVar, NoReturn

from pinbench.worker.predictors.base import Batch, ModelLoadError, Outputs, Predictor
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions


class _Engine(Predictor):
    PACKAGE: ClassVar[str]

    @classmethod
    def framework_version(cls) -> str:
        from importlib.metadata import version

        return version(cls.PACKAGE)

    def open(self, model: ModelFiles, options: PredictorOptions) -> NoReturn:
        del options
        raise ModelLoadError(
            model=self.NAME,
            reason=f"{self.TITLE} is an LLM engine: it generates text (a dataset whose task is "
            f"text-generation, with `generation`) and runs nothing else (the model's format is "
            f"{model.format})",
        )

    def predict(self, batch: Batch) -> Outputs:
        raise ModelLoadError(model=self.NAME, reason="not open")


class OrtGenAI(_Engine):
    NAME: ClassVar[str] = "onnxruntime-genai"
    TITLE: ClassVar[str] = "ONNX Runtime GenAI"
    FORMATS: ClassVar[tuple[str, ...]] = ("ort-genai",)
    PACKAGE: ClassVar[str] = "onnxruntime-genai"


class OpenVINOGenAI(_Engine):
    NAME: ClassVar[str] = "openvino-genai"
    TITLE: ClassVar[str] = "OpenVINO GenAI"
    FORMATS: ClassVar[tuple[str, ...]] = ("openvino",)
    PACKAGE: ClassVar[str] = "openvino-genai"


class LlamaCpp(_Engine):
    NAME: ClassVar[str] = "llama-cpp-python"
    TITLE: ClassVar[str] = "llama.cpp"
    FORMATS: ClassVar[tuple[str, ...]] = ("gguf",)
    PACKAGE: ClassVar[str] = "llama-cpp-python"


class CTranslate2(_Engine):
    NAME: ClassVar[str] = "ctranslate2"
    TITLE: ClassVar[str] = "CTranslate2"
    FORMATS: ClassVar[tuple[str, ...]] = ("ctranslate2",)
    PACKAGE: ClassVar[str] = "ctranslate2"
