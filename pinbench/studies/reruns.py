"""``study rerun``: every done cell's lockfile run again on the cell's system (its threads
pinned in the lockfile, its CPUs as the affinity), each judged by ``pinbench rerun``'s
verdict (``evaluator.verdicts.rerun``): inputs the same, exact metrics equal, latency within
its band."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pinbench.worker.stop import Stop
    from pinbench.workspace import Workspace


def rerun_study(
    ws: Workspace,
    name: str,
    *,
    repeat: int,
    say: Callable[[str], None],
    stop: Stop | None,
    allow_code: bool = False,
) -> list[dict[str, Any]]:
    """Each done cell's verdict, in the study's order; a cell not done says so
    (``allow_code``: the operator's consent to processing code, as ``study run``'s)."""
    from pinbench.errors import PinbenchError
    from pinbench.evaluator.verdicts.rerun import rerun
    from pinbench.studies.cells import cells
    from pinbench.studies.execute import CpusAbsent, affinity
    from pinbench.studies.spec import parse_study
    from pinbench.studies.store import read_study

    recorded = read_study(ws, name)
    study = parse_study(recorded["definition"], source=f"study {name} (as recorded)")
    out = []
    for cell in cells(study):
        row = recorded["cells"].get(cell.key, {})
        item: dict[str, Any] = {"key": cell.key, "label": cell.label, "run": row.get("run")}
        if row.get("state") != "done":
            item |= {"outcome": "not run", "reason": f"the cell is {row.get('state', 'planned')}"}
        else:
            try:
                with affinity(cell.system.cpus):
                    verdict = rerun(
                        ws, row["run"], repeat=repeat, say=lambda _: None, stop=stop,
                        allow_code=allow_code,
                    )  # fmt: skip
            except (PinbenchError, CpusAbsent) as exc:
                item |= {"outcome": "failed", "reason": str(exc)}
            else:
                item |= {
                    "outcome": verdict.outcome,
                    "reproduced": verdict.reproduced,
                    "reruns": [r["id"] for r in verdict.reruns],
                    "lines": verdict.lines,
                }
        say(f"{cell.label}: {item['outcome']}")
        out.append(item)
        if stop is not None and stop.is_set():
            stop.check()
    return out
