"""TensorFlow predictor (``pip install 'pinbench[tensorflow]'``)."""

import os

from pinbench.quiet import quiet_native_stderr

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is first imported
with quiet_native_stderr():  # its import prints oneDNN / absl notices from C++
    from pinbench.worker.predictors.tensorflow.predictor import TensorFlowPredictor

PREDICTOR = TensorFlowPredictor
__all__ = ["PREDICTOR", "TensorFlowPredictor"]
