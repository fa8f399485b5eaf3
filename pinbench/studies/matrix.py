"""``study show``: every cell of a study with its state, lockfile, run and the run's figures
(each task's headline accuracy, LoadGen's latency percentiles and throughput, its verdict), and
whether a process runs it now (``active``: it holds the study's lock).

A cell that could not run carries its reason; a cell not yet run is ``planned``. Figures come
from the recorded run only (a run removed since makes its cell ``planned`` again, as ``study
run`` will treat it); nothing is filled in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pinbench.studies.cells import Cell
    from pinbench.studies.spec import Study
    from pinbench.workspace import Workspace

FIGURES = (
    "latency_p50_ns",
    "latency_p90_ns",
    "throughput_sps",
    "ttft_p50_ns",
    "tpot_p50_ns",
    "throughput_tps",
    "loadgen_valid_bool",
    "unsandboxed_bool",
)


def _figures(run: dict[str, Any]) -> dict[str, Any]:
    from pinbench.tasks.registry import headline

    out: dict[str, Any] = {k: run[k] for k in FIGURES if run.get(k) is not None}
    found = headline(run, run.get("task"))
    if found is not None and run.get("mode") == "accuracy":
        _, metric, value = found
        out |= {"accuracy": value, "accuracy_metric": metric.name, "task": run.get("task")}
    out |= {
        "framework_resolved": run.get("framework"),
        "model_resolved": run.get("model"),
        "dataset_resolved": run.get("dataset"),
        "mode": run.get("mode"),
    }
    return out


PLANNED = {"state": "planned", "lockfile": None, "run": None, "reason": None}


def _item(cell: Cell, row: dict[str, Any]) -> dict[str, Any]:
    scenario = cell.request["scenario"]
    return {
        "key": cell.key,
        "model": cell.entry.model,
        "family": cell.entry.group,
        "framework": cell.entry.framework,
        "dataset": cell.entry.dataset,
        "scenario": cell.scenario,
        "scenario_name": scenario.get("name", "SingleStream"),
        "mode": scenario.get("mode", "performance"),
        "system": cell.system.name,
        "batch_size": cell.batch_size,
        **{k: row[k] for k in PLANNED},
    }


def _head(study: Study, source: str, digest: str, created_at: str | None) -> dict[str, Any]:
    return {
        "name": study.name,
        "digest": digest,
        "source": source,
        "created_at": created_at,
        "description": study.description,
        "systems": [
            {"name": s.name, "threads": s.threads, "cpus": s.cpus}
            | ({"agent": s.agent} if s.agent is not None else {})
            for s in study.systems
        ],
        "scenarios": dict(study.scenarios),
        "models": [m.model for m in study.models],
    }


def study_matrix(ws: Workspace, name: str) -> dict[str, Any]:
    """The study ``name`` as recorded: its definition's systems, scenarios and models, and
    every cell in order with its state and figures."""
    from pinbench.evaluator.records.run_view import RunNotFound, show_run
    from pinbench.studies.cells import cells
    from pinbench.studies.spec import parse_study
    from pinbench.studies.store import read_study

    recorded = read_study(ws, name)
    study = parse_study(recorded["definition"], source=f"study {name} (as recorded)")
    out = []
    for cell in cells(study):
        item = _item(cell, recorded["cells"].get(cell.key) or PLANNED)
        if item["run"]:
            try:
                run = show_run(ws, item["run"])
            except RunNotFound:
                item |= {"state": "planned", "reason": f"its run {item['run']} was removed"}
            else:
                item |= {"status": run["status"], **_figures(run)}
        out.append(item)
    from pinbench.studies.execute import study_active

    head = _head(study, recorded["source"], recorded["digest"], recorded["created_at"])
    return head | {"active": study_active(ws, name), "cells": out}


def planned_matrix(study: Study, source: str) -> dict[str, Any]:
    """A study not yet run: its cells, each ``planned``."""
    from pinbench.studies.cells import cells

    cells_ = [_item(c, PLANNED) for c in cells(study, source=source)]
    return _head(study, source, study.digest, None) | {"active": False, "cells": cells_}
