"""Rerun a recorded run's lockfile and judge whether the new run reproduces it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Run
from pinbench.evaluator.history import RunNotFound, show_run
from pinbench.evaluator.run import Say, latencies_of, run_lockfile
from pinbench.evaluator.verdict import accuracy_verdict, compare_latencies
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Verdict:
    original: dict[str, Any]
    rerun: dict[str, Any]
    lines: list[str]
    reproduced: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "original": self.original["id"],
            "rerun": self.rerun["id"],
            "reproduced": self.reproduced,
            "verdict": self.lines,
        }


def recorded_lockfile(ws: Workspace, run_id: str) -> tuple[str, Lockfile]:
    with ws.transaction() as session:
        runs = session.scalars(select(Run).where(Run.id.startswith(run_id))).all()
        if len(runs) != 1:
            raise RunNotFound(run=run_id)
        body = session.get(LockfileRow, runs[0].lockfile_digest)
        assert body is not None
        return runs[0].id, Lockfile.from_bytes(body.body.encode())


def rerun(ws: Workspace, run_id: str, *, runner: str = "local", say: Say = print) -> Verdict:
    """Run the same lockfile again (every byte verified again) and compare."""
    original_id, lock = recorded_lockfile(ws, run_id)
    original = show_run(ws, original_id)
    outcome = run_lockfile(ws, lock, runner=runner, say=say)
    new = show_run(ws, outcome.id)
    lines = [f"inputs verified identical (lockfile sha256 {lock.digest.hex})"]
    failed: list[str] = []
    accuracy = accuracy_verdict(original, new)
    if accuracy is not None:
        lines.append(accuracy)
        if not accuracy.startswith("accuracy identical"):
            failed.append("accuracy")
    if original.get("latencies_sha256") and new.get("latencies_sha256"):
        latency = compare_latencies(
            latencies_of(ws, original["latencies_sha256"]),
            latencies_of(ws, new["latencies_sha256"]),
        )
        lines.append(latency.describe())
        if not latency.reproduced:
            failed.append("latency")
    elif original["status"] != "succeeded":
        lines.append(f"the original run {original['status']}: nothing to compare")
        failed.append("original run")
    reproduced = not failed
    lines.append("reproduced" if reproduced else f"not reproduced: {', '.join(failed)}")
    return Verdict(original, new, lines, reproduced)
