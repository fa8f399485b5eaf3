"""PyTorch predictor (``pip install 'pinbench[torch]'``)."""

from pinbench.evaluator.predictors.torch.predictor import TorchPredictor

PREDICTOR = TorchPredictor
__all__ = ["PREDICTOR", "TorchPredictor"]
