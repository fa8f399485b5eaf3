"""Keras twins of architectures pinbench ships for PyTorch, for putting the same weights into
TensorFlow. Inputs stay NCHW like the PyTorch originals; the model transposes inside."""

from __future__ import annotations

from typing import Any


def digits_cnn_keras() -> Any:
    """Layer for layer ``torch.architectures.digits_cnn``: the flatten runs in CHW order."""
    import keras

    x = keras.Input((1, 8, 8), name="x")
    h = keras.layers.Permute((2, 3, 1))(x)
    h = keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv1")(h)
    h = keras.layers.MaxPooling2D(2)(h)
    h = keras.layers.Conv2D(32, 3, padding="same", activation="relu", name="conv2")(h)
    h = keras.layers.MaxPooling2D(2)(h)
    h = keras.layers.Permute((3, 1, 2))(h)
    h = keras.layers.Flatten()(h)
    out = keras.layers.Dense(10, name="logits")(h)
    return keras.Model(x, out, name="digits_cnn")
