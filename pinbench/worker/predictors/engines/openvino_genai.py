"""OpenVINO GenAI's predictor (``predictor.OpenVINOGenAI``)."""

from pinbench.worker.predictors.engines.predictor import OpenVINOGenAI

PREDICTOR = OpenVINOGenAI
__all__ = ["PREDICTOR"]
