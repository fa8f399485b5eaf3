"""CTranslate2's predictor (``predictor.CTranslate2``)."""

from pinbench.worker.predictors.engines.predictor import CTranslate2

PREDICTOR = CTranslate2
__all__ = ["PREDICTOR"]
