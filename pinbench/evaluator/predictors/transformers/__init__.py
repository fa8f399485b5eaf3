"""transformers predictor (``pip install 'pinbench[transformers]'``): Hugging Face folders."""

from pinbench.evaluator.predictors.transformers.predictor import TransformersPredictor

PREDICTOR = TransformersPredictor
__all__ = ["PREDICTOR", "TransformersPredictor"]
