"""TensorFlow training on the CPU: a Keras ``.keras`` model (loaded with safe mode, no
compile), a custom step (``tf.function`` over a ``GradientTape``, not ``model.fit``).

Deterministic runs: one intra-op and one inter-op thread, ``enable_op_determinism`` and
``keras.utils.set_random_seed``. TensorFlow fixes its thread pools when it first runs in a
process and op determinism cannot be switched off again: a deterministic run in a process
where TensorFlow already ran with other threads is refused (``ThreadsFixed``), and the
settings stay for the rest of the process (run training in a fresh worker).

The optimizers match PyTorch's definitions: Adam with epsilon 1e-8, SGD with momentum as
``v = m v - lr g`` (the same trajectory as PyTorch's ``v = m v + g; p -= lr v`` at a fixed
learning rate), and ``weight_decay`` as L2 added to each gradient (PyTorch's coupled decay,
not Keras' decoupled one)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainModel
from pinbench.training.errors import InvalidData, InvalidModel, ThreadsFixed

NAME = "tensorflow"
WEIGHTS_FORMAT = "keras"


def version() -> str:
    import tensorflow as tf

    return str(tf.__version__)


@contextlib.contextmanager
def session(
    spec: TrainingSpec, model: TrainModel, *, threads: int | None = None
) -> Iterator[_KerasTrainer]:
    if model.format != "keras":
        raise InvalidModel(
            framework=NAME, reason=f"training takes a .keras model, got format {model.format!r}"
        )
    try:
        path = model.single(".keras")
    except ValueError as exc:
        raise InvalidModel(framework=NAME, reason=str(exc)) from None
    import keras
    import tensorflow as tf

    if spec.deterministic:
        _set_threads(1, 1)
    elif threads is not None:
        _set_threads(threads, None)
    keras.utils.set_random_seed(spec.seed)
    if spec.deterministic:
        tf.config.experimental.enable_op_determinism()
    with tempfile.TemporaryDirectory(prefix="pinbench-train-") as scratch:
        net = _load(Path(scratch), path)
        if spec.init == "seed":
            net = keras.models.clone_model(net)  # same layers, fresh weights from the seed
        with tf.device("/CPU:0"):
            yield _KerasTrainer(spec, net, Path(scratch))


def _set_threads(intra: int, inter: int | None) -> None:
    import tensorflow as tf

    threading = tf.config.threading
    current = (
        threading.get_intra_op_parallelism_threads(),
        threading.get_inter_op_parallelism_threads(),
    )
    if current[0] == intra and inter in (None, current[1]):
        return
    try:
        threading.set_intra_op_parallelism_threads(intra)
        if inter is not None:
            threading.set_inter_op_parallelism_threads(inter)
    except RuntimeError:  # TensorFlow fixes its thread pools when it first runs
        raise ThreadsFixed(framework=NAME, wanted=intra, current=current) from None


def _load(scratch: Path, path: Path) -> Any:
    """Keras wants a name ending in ``.keras``: a link to the file under ``scratch``."""
    import keras

    link = scratch / "start.keras"
    link.symlink_to(path.resolve())
    try:
        return keras.saving.load_model(link, compile=False, safe_mode=True)
    except Exception as exc:  # Keras raises many types for a bad file
        reason = f"{type(exc).__name__}: {exc}".replace(str(link), path.name).splitlines()[0]
        raise InvalidModel(
            framework=NAME, reason=f"the .keras file does not load: {reason}"
        ) from None


class _KerasTrainer:
    def __init__(self, spec: TrainingSpec, net: Any, scratch: Path) -> None:
        import keras

        self._net = net
        self._scratch = scratch
        self._spec = spec
        self._optimizer: Any = (
            keras.optimizers.Adam(learning_rate=spec.learning_rate, epsilon=1e-8)
            if spec.optimizer == "adam"
            else keras.optimizers.SGD(
                learning_rate=spec.learning_rate, momentum=spec.momentum or 0.0
            )
        )
        self._step: Any = None
        self._evaluate: Any = None

    def bind(self, sample: npt.NDArray[np.float32]) -> int:
        import tensorflow as tf

        try:
            out = self._net(tf.constant(sample), training=False)
        except Exception as exc:  # a shape the model cannot take
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise InvalidData(
                field="x_train",
                reason=f"samples of shape {sample.shape[1:]} do not fit the model: {reason}",
            ) from None
        if isinstance(out, list | tuple | dict) or len(out.shape) != 2:
            raise InvalidData(
                field="x_train",
                reason="the model must return one (batch, classes) tensor of logits",
            )
        self._trace(sample.shape[1:])
        return int(out.shape[1])

    def _trace(self, shape: tuple[int, ...]) -> None:
        import tensorflow as tf

        net, optimizer, decay = self._net, self._optimizer, self._spec.weight_decay
        variables = net.trainable_variables
        optimizer.build(variables)
        signature = [tf.TensorSpec([None, *shape], tf.float32), tf.TensorSpec([None], tf.int64)]

        def cross_entropy(logits: Any, y: Any) -> Any:
            return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)

        def step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(cross_entropy(net(x, training=True), y))
            grads = tape.gradient(loss, variables)
            if decay:
                grads = [g + decay * v for g, v in zip(grads, variables, strict=True)]
            optimizer.apply_gradients(zip(grads, variables, strict=True))
            return loss

        def evaluate(x: Any, y: Any) -> Any:
            logits = net(x, training=False)
            hits = tf.equal(tf.argmax(logits, axis=1, output_type=tf.int64), y)
            return tf.reduce_sum(cross_entropy(logits, y)), tf.reduce_sum(tf.cast(hits, tf.int64))

        # Traced here, before the first timed step: graph building is set-up, like MLPerf's
        # untimed model compilation.
        self._step = tf.function(step, input_signature=signature).get_concrete_function()
        self._evaluate = tf.function(evaluate, input_signature=signature).get_concrete_function()

    def step(self, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> float:
        return float(self._step(x, y).numpy())

    def evaluate(self, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> tuple[float, int]:
        loss, correct = self._evaluate(x, y)
        return float(loss.numpy()), int(correct.numpy())

    def weights(self) -> bytes:
        """The model as a ``.keras`` file normalised as the catalog's (no save date, shared
        object ids numbered in order, fixed zip timestamps): equal weights, equal bytes."""
        from pinbench.artifacts.keras_archive import normalise_keras

        raw, final = self._scratch / "raw.keras", self._scratch / "final.keras"
        self._net.save(raw)
        normalise_keras(raw, final)
        data = final.read_bytes()
        raw.unlink()
        final.unlink()
        return data
