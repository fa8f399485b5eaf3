"""MLPerf's TEST01 finished where the run is recorded (decision 312): the timed answers that
differ from the accuracy pass's only in their last bits scored in its place, against the
dataset's ground truth, which stays there (a cluster's agent is never handed it). The host
that ran TEST01's workers compares their seals (``test01``); this is the rest."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.evaluator.runners.test01 import (
    ACCURACY_DELTA,
    NO_LABELS,
    Answers,
    _last_bits,
    _named,
    audited,
    has_labels,
    joined,
    not_run,
    twin,
)

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile
    from pinbench.worker.job import Evidence
    from pinbench.workspace import Workspace


def scored(
    ws: Workspace,
    lock: Lockfile,
    found: dict[str, Any],
    differing: Answers,
    accuracy: Answers,
    inputs: dict[str, Any] | None,
) -> dict[str, Any]:
    """TEST01's verdict ``prepared`` left to score, where the ground truth is: the accuracy
    pass (``accuracy``, with the scored ``inputs``; ``lock`` in accuracy mode) scored again with
    the ``differing`` samples' timed answers in its answers' place must move no metric of the
    task past ``ACCURACY_DELTA``, as MLPerf's TEST01 does when its hashes differ: then it
    passes, saying so; failed with the reason where they move one or cannot be scored."""
    from pinbench.errors import PinbenchError
    from pinbench.evaluator.scoring import load_truth, score_apart
    from pinbench.worker.job import Evidence

    far = sorted(i for i, answer in differing.items() if not _last_bits(answer, accuracy.get(i)))
    if far:  # as ``prepared`` found them, checked again where the run is recorded
        return {
            **found,
            "passed": False,
            "reason": f"{found['reason']}; {len(far)} of them not the accuracy pass's but for "
            f"their last bits (samples {_named(far)})",
        }
    try:
        truth = load_truth(ws, lock)
        if truth is None:
            raise UserError("the run is not scored apart from its answers")
        metrics: list[dict[str, float]] = []
        for answers in (accuracy, {**accuracy, **differing}):
            evidence = Evidence(answers=dict(answers), scored_inputs=inputs)
            score_apart(ws, lock, evidence, truth)
            metrics.append(evidence.metrics)
    except PinbenchError as exc:
        return {**found, "reason": f"{found['reason']}; the timed answers cannot be scored: {exc}"}
    base, mixed = metrics
    moved = {
        k: (v, mixed.get(k, math.nan))
        for k, v in base.items()
        if not abs(mixed.get(k, math.nan) - v) <= ACCURACY_DELTA * abs(v) + 1e-12
    }
    out = {
        **found,
        "by": "accuracy",
        "accuracy": {k: [v, mixed.get(k)] for k, v in base.items()},
        "delta": ACCURACY_DELTA,
        "passed": not moved,
    }
    if moved:
        out["reason"] = (
            f"{found['reason']}; and scored in their place, the timed answers moved "
            + ", ".join(f"{k} from {a:.6g} to {b:.6g}" for k, (a, b) in sorted(moved.items()))
            + f", past {ACCURACY_DELTA:.0%}"
        )
    else:
        out.pop("reason", None)
        out["note"] = (
            f"{found['reason']}: each within its last bits of the accuracy pass's answer, and "
            f"scored in their place every metric of the task within {ACCURACY_DELTA:.0%} of the "
            "accuracy pass's (nondeterministic answers, as MLPerf's TEST01 allows)"
        )
    return out


def settle(ws: Workspace, lock: Lockfile, evidence: Evidence) -> None:
    """TEST01's verdict in the run, finished where the run is recorded (the ground truth is
    there): the labels checked where the workers could not (``Unscored.labels_checked``), each
    verdict that waits for it ``scored``; nothing for a run TEST01 did not compare."""
    unscored, evidence.unscored = evidence.unscored, None
    if unscored is None:
        return
    if not unscored.labels_checked and not has_labels(ws, lock):
        audited(not_run(NO_LABELS), evidence)
        return
    found = [
        scored(ws, twin(lock), one, differing, unscored.accuracy, unscored.inputs)
        if differing is not None and unscored.accuracy is not None
        else one
        for one, differing in zip(unscored.found, unscored.differing, strict=True)
    ]
    audited(joined(found[0], found[1:]), evidence)
