"""Cross-framework parity (Deep500's "verifiable"): the same weights in two frameworks should
score the same. Accuracy runs on one dataset are compared with a reference run by what their
task scores (``Task.parity``: top-1 classes, matched boxes, class maps, embeddings), from what
each run recorded: its outputs (``details.outputs_sha256``), metrics and details.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pinbench.errors import UserError
from pinbench.evaluator.records.run_blobs import array_of
from pinbench.evaluator.records.run_view import recorded_lockfile, show_run
from pinbench.tasks.parity import Agreement, Recorded
from pinbench.workspace import Workspace


class ParityError(UserError):
    def __init__(self, *, run: str, reason: str) -> None:
        super().__init__(f"cannot compare outputs of run {run[:8]}: {reason}")
        self.run = run
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Parity:
    """One run compared with the reference (the reference's own row compares it with itself)."""

    run: str
    framework: str
    model: str
    task: str
    agreement: Agreement

    @property
    def agrees(self) -> bool:
        return self.agreement.agrees

    def figure(self, name: str) -> float:
        return self.agreement.figure(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "framework": self.framework,
            "model": self.model,
            "task": self.task,
            "agrees": self.agreement.agrees,
            "rule": self.agreement.rule,
            "figures": {
                f.name: f.value if math.isfinite(f.value) else None  # JSON has no NaN
                for f in self.agreement.figures
            },
        }


def recorded(ws: Workspace, info: dict[str, Any]) -> Recorded:
    """A run as ``Task.parity`` reads it; only a succeeded accuracy run records outputs."""
    details = info.get("details") or {}
    digest = details.get("outputs_sha256")
    if info["status"] != "succeeded" or not digest:
        raise ParityError(
            run=info["id"], reason="only a succeeded accuracy run records its outputs"
        )
    lock = recorded_lockfile(ws, info["id"])[1].body
    assert lock.model is not None and lock.dataset is not None  # it recorded outputs
    metrics = {k: float(v) for k, v in info.items() if k in (info.get("units") or {})}
    return Recorded(
        run=info["id"],
        outputs=array_of(ws, digest, "outputs"),
        outputs_name=details.get("outputs_name"),
        metrics=metrics,
        details=details,
        model=lock.model,
        dataset=lock.dataset,
    )


def parity(ws: Workspace, reference: str, others: list[str]) -> list[Parity]:
    """One row per run (the reference first, compared with itself), each compared with the
    reference by the task of their dataset."""
    from pinbench.tasks.registry import task

    ref_info = show_run(ws, reference)
    ref = recorded(ws, ref_info)
    judge = task(ref.dataset.task)
    rows = []
    for info in [ref_info, *(show_run(ws, o) for o in others)]:
        if info["dataset"] != ref_info["dataset"]:
            raise ParityError(
                run=info["id"],
                reason=f"it ran on {info['dataset']}, the reference on {ref_info['dataset']}",
            )
        rows.append(
            Parity(
                run=info["id"],
                framework=info["framework"],
                model=info["model"],
                task=judge.name,
                agreement=judge.parity(ref, recorded(ws, info)),
            )
        )
    return rows
