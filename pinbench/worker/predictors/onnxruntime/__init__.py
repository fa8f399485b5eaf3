"""ONNX Runtime predictor (``pip install 'pinbench[onnxruntime]'``)."""

from pinbench.worker.predictors.onnxruntime.predictor import OnnxRuntimePredictor

PREDICTOR = OnnxRuntimePredictor
__all__ = ["PREDICTOR", "OnnxRuntimePredictor"]
