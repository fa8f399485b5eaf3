"""PyTorch predictor (``pip install 'pinbench[torch]'``)."""

from pinbench.worker.predictors.torch.predictor import TorchPredictor

PREDICTOR = TorchPredictor
__all__ = ["PREDICTOR", "TorchPredictor"]
