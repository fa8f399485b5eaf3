"""A training benchmark's request: optimizer and hyperparameters, batch size, epoch cap,
quality target, seed and determinism.

Plain data (a frozen msgspec struct) kept apart from any framework: the lockfile holds it and
both frameworks honour every field (or the spec refuses it here). Constructing a spec
validates it; ``msgspec.convert`` turns the ``ValueError``s into ``ValidationError``s that
name the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec

from pinbench.errors import InvalidDocument

MAX_SEED: Final = 2**31 - 1
MAX_BATCH: Final = 65536
MAX_EPOCHS: Final = 1000
MAX_LEARNING_RATE: Final = 10.0


class TrainingSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``validation``: the validation split's dataset reference (``name@range``).

    ``optimizer`` sgd | adam with ``learning_rate``, ``momentum`` (sgd only; None = plain
    SGD) and ``weight_decay`` (L2 added to the gradient, PyTorch's coupled definition, in both
    frameworks). ``batch_size`` samples per step (the last partial batch kept), ``epochs`` the
    cap; with ``target_top1`` set, training stops at the first epoch whose validation top-1
    reaches it. ``seed`` fixes the initialisation and the data order; ``deterministic`` adds
    one thread and deterministic kernels. ``init``: ``seed`` initialises the architecture
    afresh from the seed, ``weights`` starts from the model artifact's weights."""

    validation: str
    optimizer: Literal["sgd", "adam"] = "adam"
    learning_rate: float = 0.003
    momentum: float | None = None
    weight_decay: float = 0.0
    batch_size: int = 64
    epochs: int = 30
    target_top1: float | None = None
    seed: int = 0
    deterministic: bool = True
    init: Literal["seed", "weights"] = "seed"

    def __post_init__(self) -> None:
        if not isinstance(self.validation, str) or not self.validation.strip():
            raise ValueError("validation must name the validation split (name@range), got ''")
        _choice("optimizer", self.optimizer, ("sgd", "adam"))
        _choice("init", self.init, ("seed", "weights"))
        _number("learning_rate", self.learning_rate, "> 0 and <= 10")
        if not 0 < self.learning_rate <= MAX_LEARNING_RATE:
            raise ValueError(f"learning_rate must be > 0 and <= 10, got {self.learning_rate}")
        if self.momentum is not None:
            _number("momentum", self.momentum, ">= 0 and < 1")
            if self.optimizer != "sgd":
                raise ValueError(
                    f"momentum is an sgd setting; optimizer {self.optimizer} takes none "
                    "(drop momentum or use optimizer sgd)"
                )
            if not 0 <= self.momentum < 1:
                raise ValueError(f"momentum must be >= 0 and < 1, got {self.momentum}")
        _number("weight_decay", self.weight_decay, ">= 0 and < 1")
        if not 0 <= self.weight_decay < 1:
            raise ValueError(f"weight_decay must be >= 0 and < 1, got {self.weight_decay}")
        _integer("batch_size", self.batch_size, 1, MAX_BATCH)
        _integer("epochs", self.epochs, 1, MAX_EPOCHS)
        _integer("seed", self.seed, 0, MAX_SEED)
        if self.target_top1 is not None:
            _number("target_top1", self.target_top1, "> 0 and <= 1")
            if not 0 < self.target_top1 <= 1:
                raise ValueError(f"target_top1 must be > 0 and <= 1, got {self.target_top1}")
        if not isinstance(self.deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {self.deterministic!r}")


def parse_spec(data: Mapping[str, Any], *, source: str = "training spec") -> TrainingSpec:
    """A spec from plain data (JSON, TOML, a lockfile section); every error is an
    ``InvalidDocument`` naming the field."""
    try:
        return msgspec.convert(data, TrainingSpec)
    except msgspec.ValidationError as exc:
        raise InvalidDocument(source=source, reason=str(exc)) from exc


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def _number(name: str, value: object, limit: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ValueError(f"{name} must be a number {limit}, got {value!r}")


def _integer(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
