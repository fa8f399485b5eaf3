"""ONNX Runtime GenAI's predictor (``predictor.OrtGenAI``)."""

from pinbench.worker.predictors.engines.predictor import OrtGenAI

PREDICTOR = OrtGenAI
__all__ = ["PREDICTOR"]
