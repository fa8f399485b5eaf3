"""Cross-framework parity (Deep500's "verifiable"): the same weights in two frameworks should
give the same outputs up to floating-point reordering. Compares the recorded outputs of
accuracy runs, sample by sample, against a reference run.

Relative difference is taken per element against the reference, with the denominator floored
at 0.1% of the reference's largest magnitude so that elements near zero do not make it
meaningless.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pinbench.errors import UserError
from pinbench.evaluator.history import show_run
from pinbench.evaluator.run import array_of
from pinbench.workspace import Workspace

REL_FLOOR = 1e-3


class ParityError(UserError):
    def __init__(self, *, run: str, reason: str) -> None:
        super().__init__(f"cannot compare outputs of run {run[:8]}: {reason}")
        self.run = run
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Parity:
    run: str
    framework: str
    model: str
    max_abs_diff: float
    max_rel_diff: float
    top1_agree: int
    samples: int

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "framework": self.framework,
            "model": self.model,
            "max_abs_diff": self.max_abs_diff,
            "max_rel_diff": self.max_rel_diff,
            "top1_agree": self.top1_agree,
            "samples": self.samples,
        }


def _outputs(ws: Workspace, info: dict[str, Any]) -> np.ndarray[Any, Any]:
    digest = (info.get("details") or {}).get("outputs_sha256")
    if info["status"] != "succeeded" or not digest:
        raise ParityError(
            run=info["id"], reason="only a succeeded accuracy run records its outputs"
        )
    out = array_of(ws, digest, "outputs").astype(np.float64)
    return out.reshape(len(out), -1)


def parity(ws: Workspace, reference: str, others: list[str]) -> list[Parity]:
    """One row per run (the reference first, all zeros), compared with the reference."""
    ref_info = show_run(ws, reference)
    ref = _outputs(ws, ref_info)
    floor = REL_FLOOR * float(np.max(np.abs(ref))) if ref.size else 0.0
    rows = []
    for info in [ref_info, *(show_run(ws, o) for o in others)]:
        if info["dataset"] != ref_info["dataset"]:
            raise ParityError(
                run=info["id"],
                reason=f"it ran on {info['dataset']}, the reference on {ref_info['dataset']}",
            )
        out = _outputs(ws, info)
        if out.shape != ref.shape:
            raise ParityError(
                run=info["id"],
                reason=f"outputs of shape {out.shape}, the reference's are {ref.shape}",
            )
        diff = np.abs(out - ref)
        rel = diff / np.maximum(np.abs(ref), max(floor, np.finfo(np.float64).tiny))
        rows.append(
            Parity(
                run=info["id"],
                framework=info["framework"],
                model=info["model"],
                max_abs_diff=float(diff.max(initial=0.0)),
                max_rel_diff=float(rel.max(initial=0.0)),
                top1_agree=int(np.sum(out.argmax(axis=1) == ref.argmax(axis=1))),
                samples=len(ref),
            )
        )
    return rows
