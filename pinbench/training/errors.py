"""Errors of the training benchmarks: each names what is at fault and carries its data."""

from __future__ import annotations

from collections.abc import Sequence

from pinbench.errors import UserError


class UnknownFramework(UserError):
    def __init__(self, *, framework: str, known: Sequence[str]) -> None:
        super().__init__(
            f"no training benchmarks for framework {framework!r}; known: {', '.join(known)}"
        )
        self.framework = framework
        self.known = list(known)


class InvalidModel(UserError):
    """The model artifact cannot be trained here (format, architecture, files)."""

    def __init__(self, *, framework: str, reason: str) -> None:
        super().__init__(f"cannot train this model in {framework}: {reason}")
        self.framework = framework
        self.reason = reason


class InvalidData(UserError):
    """The training or validation arrays do not fit each other or the model: ``field`` names
    the array at fault (``x_train``, ``y_val``, ...)."""

    def __init__(self, *, field: str, reason: str) -> None:
        super().__init__(f"training data: {field} {reason}")
        self.field = field
        self.reason = reason


class ThreadsFixed(UserError):
    """TensorFlow fixes its thread pools the first time it runs in a process."""

    def __init__(self, *, framework: str, wanted: int, current: tuple[int, int]) -> None:
        super().__init__(
            f"{framework} has already run in this process with {current[0]} intra-op and "
            f"{current[1]} inter-op threads (0 = its default) and cannot switch to {wanted}: "
            "run the training in a fresh process"
        )
        self.framework = framework
        self.wanted = wanted
        self.current = current


class TrainingDiverged(UserError):
    """The loss became NaN or infinite: at a training ``step`` (1-based within ``epoch``), or
    on the validation split after the epoch (``step`` None)."""

    def __init__(self, *, epoch: int, step: int | None, value: float, learning_rate: float) -> None:
        kind = "NaN" if value != value else "infinite"
        where = (
            f"at epoch {epoch}, step {step}"
            if step is not None
            else (f"on the validation split after epoch {epoch}")
        )
        super().__init__(
            f"loss became {kind} {where} (training diverged with learning rate "
            f"{learning_rate:g}: lower the learning rate)"
        )
        self.epoch = epoch
        self.step = step
        self.value = value
        self.learning_rate = learning_rate


class InvalidThreads(UserError):
    """A thread count that contradicts the spec (a deterministic run uses one thread)."""

    def __init__(self, *, threads: int, reason: str) -> None:
        super().__init__(f"threads = {threads} is not allowed: {reason}")
        self.threads = threads
        self.reason = reason
