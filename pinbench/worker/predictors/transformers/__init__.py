"""transformers predictor (``pip install 'pinbench[transformers]'``): Hugging Face folders."""

from pinbench.worker.predictors.transformers.predictor import TransformersPredictor

PREDICTOR = TransformersPredictor
__all__ = ["PREDICTOR", "TransformersPredictor"]
