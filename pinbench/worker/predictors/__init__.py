"""Framework adapters with one interface (MLModelScope's): ``open`` / ``predict`` / ``close``.

One folder per framework; a framework is imported only inside its own folder, and only when a
lockfile asks for it (each framework is a pip extra).
"""

from __future__ import annotations

import importlib

from pinbench.errors import UserError
from pinbench.worker.predictors.base import Predictor

MODULES = {
    "onnxruntime": "pinbench.worker.predictors.onnxruntime",
    "torch": "pinbench.worker.predictors.torch",
    "tensorflow": "pinbench.worker.predictors.tensorflow",
    "transformers": "pinbench.worker.predictors.transformers",
    "onnxruntime-genai": "pinbench.worker.predictors.engines.ort_genai",
    "ctranslate2": "pinbench.worker.predictors.engines.ctranslate2",
    "openvino-genai": "pinbench.worker.predictors.engines.openvino_genai",
    "llama-cpp-python": "pinbench.worker.predictors.engines.llama_cpp",
}


GPU_ENGINES = {
    "vllm": "vLLM",
    "tensorrt-llm": "TensorRT-LLM",
}
"""LLM engines that run on NVIDIA GPUs only, known by name (issue 87, item 5): a run refuses
them with the reason, naming what is missing here (docs/engines.md)."""


class FrameworkUnavailable(UserError):
    def __init__(self, *, framework: str, reason: str) -> None:
        super().__init__(f"framework {framework} is not available here: {reason}")
        self.framework = framework
        self.reason = reason


def predictor_class(framework: str) -> type[Predictor]:
    """The predictor for a framework name, importing its module (and the framework) now."""
    module = MODULES.get(framework)
    if framework in GPU_ENGINES:
        raise FrameworkUnavailable(framework=framework, reason=_gpu_engine(framework))
    if module is None:
        raise FrameworkUnavailable(
            framework=framework,
            reason=f"pinbench has predictors for {', '.join(sorted(MODULES))}",
        )
    try:
        cls: type[Predictor] = importlib.import_module(module).PREDICTOR
    except ImportError as exc:
        raise FrameworkUnavailable(
            framework=framework,
            reason=f"{exc}; install it with `pip install 'pinbench[{framework}]'` "
            "or run with a runner that provides it",
        ) from None
    return cls


def _gpu_engine(framework: str) -> str:
    """Why a GPU engine does not run here: no GPU, or (with one) no generator for it yet."""
    title = GPU_ENGINES[framework]
    if not nvidia_devices():
        return (
            f"{title} is an LLM engine for NVIDIA GPUs (CUDA), and this machine has none "
            "(no /dev/nvidia0 here): run it on a system with one"
        )
    return (
        f"{title} needs a GPU, which this machine has, but pinbench has no generator for it "
        "yet (docs/engines.md: the CPU engines are onnxruntime-genai, ctranslate2, "
        "openvino-genai and llama-cpp-python)"
    )


def nvidia_devices() -> list[str]:
    """This machine's NVIDIA GPU device files (a sandbox is given them where present)."""
    from pathlib import Path

    return sorted(str(p) for p in Path("/dev").glob("nvidia[0-9]*"))
