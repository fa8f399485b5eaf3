"""PyTorch training on the CPU: safetensors weights in an architecture pinbench ships
(``worker.predictors.torch.architectures``; nothing is ever unpickled), ``torch.optim``,
autograd. Deterministic runs: one thread, ``use_deterministic_algorithms``, the seed; the
previous settings and the global RNG are restored afterwards (as ``catalog.cnn.train``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.specs.training import TrainingSpec
from pinbench.training.data import TrainModel
from pinbench.training.errors import InvalidData, InvalidModel

NAME = "torch"
WEIGHTS_FORMAT = "safetensors"


def version() -> str:
    import torch

    return str(torch.__version__)


@contextlib.contextmanager
def session(
    spec: TrainingSpec, model: TrainModel, *, threads: int | None = None
) -> Iterator[_TorchTrainer]:
    import torch

    architecture, path = _check_model(model)
    wanted = 1 if spec.deterministic else threads
    previous = (
        torch.get_num_threads(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    try:
        if wanted is not None:
            torch.set_num_threads(wanted)
        if spec.deterministic:
            torch.use_deterministic_algorithms(True)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(spec.seed)
            yield _TorchTrainer(spec, _build(spec, architecture, path), architecture)
    finally:
        torch.set_num_threads(previous[0])
        torch.use_deterministic_algorithms(previous[1], warn_only=previous[2])


def _check_model(model: TrainModel) -> tuple[str, Any]:
    from pinbench.worker.predictors.torch.architectures import ARCHITECTURES

    if model.format != "safetensors":
        raise InvalidModel(
            framework=NAME,
            reason=f"training takes safetensors weights in a named architecture, got format "
            f"{model.format!r} (pickled modules are never loaded)",
        )
    if model.architecture not in ARCHITECTURES:
        raise InvalidModel(
            framework=NAME,
            reason=f"unknown architecture {model.architecture!r}; known: "
            + ", ".join(sorted(ARCHITECTURES)),
        )
    try:
        path = model.single(".safetensors")
    except ValueError as exc:
        raise InvalidModel(framework=NAME, reason=str(exc)) from None
    return model.architecture, path


def _build(spec: TrainingSpec, architecture: str, path: Any) -> Any:
    """The architecture, initialised from the (already set) seed; with ``init: weights``
    the artifact's weights loaded into it, every tensor required to fit."""
    from safetensors.torch import load_file

    from pinbench.worker.predictors.torch.architectures import ARCHITECTURES

    module = ARCHITECTURES[architecture]()
    if spec.init == "weights":
        try:
            module.load_state_dict(load_file(str(path), device="cpu"), strict=True)
        except Exception as exc:  # safetensors and torch raise several types
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise InvalidModel(framework=NAME, reason=f"weights do not load: {reason}") from None
    return module.train()


def build(spec: TrainingSpec, model: TrainModel) -> tuple[Any, str]:
    """The model's module as ``session`` builds it (the caller has set the seed), in training
    mode, and its architecture's name (distributed training builds one per worker)."""
    architecture, path = _check_model(model)
    return _build(spec, architecture, path), architecture


def optimizer(spec: TrainingSpec, params: Any) -> Any:
    """The spec's optimizer over ``params``."""
    import torch

    lr, decay = spec.learning_rate, spec.weight_decay
    if spec.optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=decay)
    return torch.optim.SGD(params, lr=lr, momentum=spec.momentum or 0.0, weight_decay=decay)


def weights_bytes(module: Any, architecture: str) -> bytes:
    """safetensors bytes as ``catalog.torch_files.save_safetensors`` writes them: the
    state dict (sorted by the format itself) with ``{"architecture": name}`` metadata."""
    from safetensors.torch import save

    state = {k: v.detach().clone().contiguous() for k, v in module.state_dict().items()}
    return bytes(save(state, metadata={"architecture": architecture}))


class _TorchTrainer:
    def __init__(self, spec: TrainingSpec, module: Any, architecture: str) -> None:
        self._module = module
        self._architecture = architecture
        self._micro_batches = spec.transform.micro_batches if spec.transform else 1
        self._optimizer: Any = optimizer(spec, module.parameters())

    def bind(self, sample: npt.NDArray[np.float32]) -> int:
        import torch

        self._module.eval()
        try:
            with torch.no_grad():
                out = self._module(torch.from_numpy(sample))
        except Exception as exc:  # a shape the architecture cannot take
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise InvalidData(
                field="x_train",
                reason=f"samples of shape {sample.shape[1:]} do not fit {self._architecture}: "
                f"{reason}",
            ) from None
        finally:
            self._module.train()
        if out.ndim != 2 or out.shape[0] != len(sample):
            raise InvalidData(
                field="x_train",
                reason=f"{self._architecture} returns {tuple(out.shape)} for a batch of "
                f"{len(sample)}, not (batch, classes) logits",
            )
        return int(out.shape[1])

    def step(self, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> float:
        """With ``transform.micro_batches`` k > 1: the batch in k contiguous micro-batches
        (``numpy.array_split``: a last partial batch smaller than k gives fewer), each one's
        mean loss weighted by its share of the batch and back-propagated on its own, the
        gradients accumulated, then one optimizer step: the full batch's mean-loss gradient,
        with only one micro-batch's activations held at a time."""
        import torch.nn.functional as F

        self._optimizer.zero_grad()
        total = 0.0
        for part in np.array_split(np.arange(len(x)), min(self._micro_batches, len(x))):
            begin, end = int(part[0]), int(part[-1]) + 1
            loss = F.cross_entropy(self._module(_tensor(x[begin:end])), _tensor(y[begin:end]))
            if end - begin != len(x):
                loss = loss * ((end - begin) / len(x))
            loss.backward()  # type: ignore[no-untyped-call]
            total += float(loss.item())
        self._optimizer.step()
        return total

    def evaluate(self, x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> tuple[float, int]:
        import torch
        import torch.nn.functional as F

        self._module.eval()
        try:
            with torch.no_grad():
                logits = self._module(_tensor(x))
                labels = _tensor(y)
                loss = F.cross_entropy(logits, labels, reduction="sum")
                correct = (logits.argmax(1) == labels).sum()
        finally:
            self._module.train()
        return float(loss.item()), int(correct.item())

    def weights(self) -> bytes:
        """The weights as ``weights_bytes`` writes them."""
        return weights_bytes(self._module, self._architecture)


def _tensor(a: npt.NDArray[Any]) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(a))
