"""llama.cpp's predictor, through llama-cpp-python (``predictor.LlamaCpp``)."""

from pinbench.worker.predictors.engines.predictor import LlamaCpp

PREDICTOR = LlamaCpp
__all__ = ["PREDICTOR"]
