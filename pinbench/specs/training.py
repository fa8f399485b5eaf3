"""A training benchmark's request: optimizer and hyperparameters, batch size, epoch cap,
quality target, seed and determinism.

Plain data (a frozen msgspec struct) kept apart from any framework: the lockfile holds it and
both frameworks honour every field (or the spec refuses it here). Constructing a spec
validates it; ``msgspec.convert`` turns the ``ValueError``s into ``ValidationError``s that
name the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from pinbench import bounds as b
from pinbench import typed
from pinbench.errors import InvalidDocument
from pinbench.specs.transforms import TransformSpec

LATE_TRAINING_FIELDS = ("transform",)
"""Fields added after training lockfiles were first written: left out of the plain data while
unset, so earlier lockfiles keep their digests."""


class TrainingSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``validation``: the validation split's dataset reference (``name@range``).

    ``optimizer`` sgd | adam with ``learning_rate``, ``momentum`` (sgd only; None = plain
    SGD) and ``weight_decay`` (L2 added to the gradient, PyTorch's coupled definition, in both
    frameworks). ``batch_size`` samples per step (the last partial batch kept), ``epochs`` the
    cap; with ``target_top1`` set, training stops at the first epoch whose validation top-1
    reaches it. ``seed`` fixes the initialisation and the data order; ``deterministic`` adds
    one thread and deterministic kernels. ``init``: ``seed`` initialises the architecture
    afresh from the seed, ``weights`` starts from the model artifact's weights.
    ``transform``: a network transformation trained with and validated against the
    untransformed network (``pinbench.transforms``); micro-batching only: a graph optimization
    is an ONNX inference transformation."""

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
    transform: TransformSpec | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.validation, str) or not self.validation.strip():
            raise ValueError("validation must name the validation split (name@range), got ''")
        _choice("optimizer", self.optimizer, ("sgd", "adam"))
        _choice("init", self.init, ("seed", "weights"))
        _number("learning_rate", self.learning_rate, b.LEARNING_RATE)
        if self.momentum is not None:
            _number("momentum", self.momentum, b.MOMENTUM)
            if self.optimizer != "sgd":
                raise ValueError(
                    f"momentum is an sgd setting; optimizer {self.optimizer} takes none "
                    "(drop momentum or use optimizer sgd)"
                )
        _number("weight_decay", self.weight_decay, b.WEIGHT_DECAY)
        _integer("batch_size", self.batch_size, b.TRAINING_BATCH_SIZE)
        _integer("epochs", self.epochs, b.EPOCHS)
        _integer("seed", self.seed, b.TRAINING_SEED)
        if self.target_top1 is not None:
            _number("target_top1", self.target_top1, b.TARGET_TOP1)
        if not isinstance(self.deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {self.deterministic!r}")
        if self.transform is not None:
            if self.transform.graph_optimization is not None:
                raise ValueError(
                    "transform.graph_optimization is an ONNX inference transformation; a "
                    "training transform takes micro_batches (and steps)"
                )
            self.transform.check_batch(self.batch_size, field="batch_size")


def parse_spec(data: Mapping[str, Any], *, source: str = "training spec") -> TrainingSpec:
    """A spec from plain data (JSON, TOML, a lockfile section); every error is an
    ``InvalidDocument`` naming the field."""
    try:
        return typed.convert(data, TrainingSpec)
    except msgspec.ValidationError as exc:
        raise InvalidDocument(source=source, reason=str(exc)) from exc


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def _number(name: str, value: object, bound: b.Bound) -> None:
    """A number (not a bool) within ``bound`` (NaN is within none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number {bound.text()}, got {value!r}")
    bound.check(name, value)


def _integer(name: str, value: object, bound: b.Bound) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int {bound.text()}, got {value!r}")
    bound.check(name, value)
