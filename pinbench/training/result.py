"""A training run's result: per-epoch records, time to accuracy, the final weights.

``metrics()`` and ``details()`` give what a run records (docs/decisions/0108-*.md)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class EpochRecord(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One epoch: ``train_loss`` is the mean cross-entropy over the epoch's samples (each
    step's batch mean weighted by its size), ``train_s`` the wall time of its training steps,
    ``samples_per_s`` the training samples over ``train_s``; ``val_loss``/``val_top1`` on the
    validation split after the epoch, which took ``eval_s`` (not part of ``train_s``)."""

    epoch: int
    train_loss: float
    train_s: float
    samples_per_s: float
    val_loss: float
    val_top1: float
    eval_s: float


class TrainingResult(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One training run. ``time_to_accuracy_s`` (MLPerf Training's definition) is the sum of
    ``train_s`` from the first epoch through ``reached_epoch``, evaluation excluded; None when
    the target was not set or not reached. ``weights`` are the final weights' file bytes
    (``weights_format``), equal bytes for equal weights; ``weights_sha256`` their digest."""

    framework: str
    framework_version: str
    epochs: list[EpochRecord]
    target_top1: float | None
    reached_epoch: int | None
    time_to_accuracy_s: float | None
    train_time_s: float
    eval_time_s: float
    final_top1: float
    best_top1: float
    deterministic: bool
    weights: bytes
    weights_format: Literal["safetensors", "keras"]
    weights_sha256: str

    def metrics(self) -> dict[str, float]:
        """The run's metrics: ``time_to_accuracy_s`` only when the target was reached;
        ``throughput_sps`` the mean of the epochs' samples/s; ``final_loss`` the last
        epoch's validation loss (the loss beside ``final_top1``)."""
        out: dict[str, float] = {}
        if self.time_to_accuracy_s is not None:
            out["time_to_accuracy_s"] = self.time_to_accuracy_s
        out["train_time_s"] = self.train_time_s
        out["eval_time_s"] = self.eval_time_s
        out["throughput_sps"] = sum(e.samples_per_s for e in self.epochs) / len(self.epochs)
        out["final_top1"] = self.final_top1
        out["best_top1"] = self.best_top1
        out["epochs_count"] = float(len(self.epochs))
        out["final_loss"] = self.epochs[-1].val_loss
        return out

    def details(self) -> dict[str, Any]:
        """``details["training"]`` of the run (no weight bytes: those are a blob)."""
        return {
            "framework": self.framework,
            "epochs": [msgspec.to_builtins(e) for e in self.epochs],
            "target_top1": self.target_top1,
            "reached_epoch": self.reached_epoch,
            "deterministic": self.deterministic,
            "weights_sha256": self.weights_sha256,
            "weights_format": self.weights_format,
        }

    def unmet_target(self) -> str | None:
        """The failed run's error when a target was set and not reached, else None."""
        if self.target_top1 is None or self.reached_epoch is not None:
            return None
        return (
            f"target top1 {self.target_top1:g} not reached after {len(self.epochs)} epochs "
            f"(best {round(self.best_top1, 4):g})"
        )
