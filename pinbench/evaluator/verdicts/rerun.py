"""Rerun a recorded run's lockfile and judge whether the new run reproduces it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import recorded_lockfile, show_run
from pinbench.evaluator.run import Say, latencies_of, run_lockfile
from pinbench.evaluator.verdicts.verdict import (
    BAND,
    accuracy_verdict,
    compare_latencies,
    time_to_accuracy_line,
    weights_verdict,
)
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace

REPEAT = 3


@dataclass(frozen=True, slots=True)
class Verdict:
    original: dict[str, Any]
    reruns: list[dict[str, Any]]
    lines: list[str]
    reproduced: bool
    outcome: str = "reproduced"
    """``reproduced``, ``not reproduced`` or ``inconclusive`` (the reruns disagree with each
    other too much to tell; inputs and accuracy reproduced)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "original": self.original["id"],
            "reruns": [r["id"] for r in self.reruns],
            "reproduced": self.reproduced,
            "outcome": self.outcome,
            "verdict": self.lines,
        }


def contended(run: dict[str, Any]) -> bool:
    """``show_run``'s run was timed while other work took the machine."""
    from pinbench.run_figures import contended as flagged

    return flagged(run)


def rerun(
    ws: Workspace,
    run_id: str,
    *,
    repeat: int = REPEAT,
    runner: str | None = None,
    say: Say = print,
    trace: str | None = None,
    allow_pickle: bool = False,
    stop: Stop | None = None,
    band: float = BAND,
    allow_code: bool = False,
    sandbox: str = "bwrap",
) -> Verdict:
    """Run the same lockfile ``repeat`` times (every byte verified each time) and compare;
    with the original's runner and trace level unless ``runner`` or ``trace`` name others.
    Latencies are compared only between runs traced at the same level.

    An accuracy run is deterministic and runs once whatever ``repeat`` says.
    """
    if repeat < 1:
        raise UserError(f"repeat must be >= 1, got {repeat}")
    original_id, lock = recorded_lockfile(ws, run_id)
    original = show_run(ws, original_id)
    if original.get("system"):
        raise UserError(
            f"run {original_id[:8]} ran on cluster system {original['system']}: a rerun on this "
            "machine would compare other hardware; rerun it there with "
            f"`pinbench run LOCKFILE --on {original['system']}` and compare the runs"
        )
    trace = trace or original["trace"]
    if lock.body.scenario.mode == "accuracy":
        repeat = 1
    reruns = []
    for i in range(repeat):
        say(f"rerun {i + 1} of {repeat}")
        outcome = run_lockfile(
            ws,
            lock,
            runner=runner or original["runner"],
            say=say,
            trace=trace,
            allow_pickle=allow_pickle,
            allow_code=allow_code,
            stop=stop,
            sandbox=sandbox,
        )
        reruns.append(show_run(ws, outcome.id))
    lines = [f"inputs verified identical (lockfile sha256 {lock.digest.hex})"]
    failed: list[str] = []
    undecided = False
    task = lock.body.dataset.task if lock.body.dataset is not None else None
    accuracy = accuracy_verdict(original, reruns[0], task)  # the exact metrics of its task
    if accuracy is not None:
        lines.append(accuracy)
        if not accuracy.startswith("accuracy identical"):
            failed.append("accuracy")
    training = lock.body.training
    weights = weights_verdict(original, reruns) if training else None
    if training is not None and weights is not None:
        if training.deterministic:
            lines.append(weights)
            if not weights.startswith("final weights identical"):
                failed.append("final weights")
        else:
            lines.append(f"{weights} (not deterministic: not part of the verdict)")
    tta = time_to_accuracy_line(original, reruns) if training else None
    if tta is not None:
        lines.append(tta)
    if original["status"] != "succeeded" or not original.get("latencies_sha256"):
        lines.append(f"the original run {original['status']}: nothing to compare")
        failed.append("original run")
    elif trace != original["trace"]:
        lines.append(
            f"latency not compared: the original ran at trace level {original['trace']!r}, "
            f"the reruns at {trace!r} (a traced run's latencies carry its profilers' overhead)"
        )
    elif lock.body.scenario.mode == "performance":
        latency = compare_latencies(
            latencies_of(ws, original["latencies_sha256"]),
            [latencies_of(ws, r["latencies_sha256"]) for r in reruns],
            band=band,
        )
        lines.append(latency.describe())
        busy = [r["id"][:8] for r in (original, *reruns) if contended(r)]
        if busy:
            lines.append(
                f"note: run(s) {', '.join(busy)} were timed while other work took the machine "
                "(BUSY in `runs show`): the latencies compared carry it; rerun on a quiet machine"
            )
        if not latency.reproduced:
            failed.append("latency")
        undecided = latency.inconclusive
    if failed:
        lines.append(f"not reproduced: {', '.join(failed)}")
        return Verdict(original, reruns, lines, False, "not reproduced")
    if undecided:
        lines.append("inconclusive (inputs and accuracy reproduced)")
        return Verdict(original, reruns, lines, False, "inconclusive")
    lines.append("reproduced")
    return Verdict(original, reruns, lines, True, "reproduced")
