"""The systems pages' rows: each registered system's hardware as text, whether it is alive,
and its recent runs. Facts come from agents: every value is made plain text here, and the
templates escape it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinbench.cluster.systems import SystemRow
from pinbench.evaluator.records.run_view import show_run
from pinbench.reports.hardware import FACTS, hardware, text
from pinbench.workspace import Workspace

RECENT_RUNS = 20


@dataclass(frozen=True, slots=True)
class SystemView:
    name: str
    alive: str
    """``alive`` or ``gone`` (Ray's answer), ``unknown`` when this server has no cluster."""
    arch: str
    hardware: list[tuple[str, str]]
    """(label, value) per ``reports.hardware.FACTS``."""
    facts: list[tuple[str, str]]
    """Every fact the agent reported, by name, as text."""
    node_id: str
    registered_at: str
    seen_at: str
    runs: int


def alive_text(alive: bool | None) -> str:
    return "unknown" if alive is None else ("alive" if alive else "gone")


def system_view(row: SystemRow) -> SystemView:
    facts = row.facts if isinstance(row.facts, dict) else {}
    machine = hardware(None, facts)
    return SystemView(
        name=row.name,
        alive=alive_text(row.alive),
        arch=text(facts.get("arch")),
        hardware=[(label, machine[key]) for key, label in FACTS],
        facts=[(str(k), text(v)) for k, v in sorted(facts.items(), key=lambda kv: str(kv[0]))],
        node_id=row.node_id or "",
        registered_at=row.registered_at.isoformat(timespec="seconds"),
        seen_at=row.seen_at.isoformat(timespec="seconds"),
        runs=row.runs,
    )


RECENT_SQL = (
    "SELECT id FROM runs WHERE system = :name ORDER BY started_at IS NULL, started_at DESC, id "
    "LIMIT :limit"
)


def recent_runs(ws: Workspace, name: str, limit: int = RECENT_RUNS) -> list[dict[str, Any]]:
    """The system's latest runs, newest first (as ``show_run(..., nested=True)``)."""
    with ws.reads() as rows:
        ids = [str(r[0]) for r in rows(RECENT_SQL, {"name": name, "limit": limit})]
    return [show_run(ws, run_id, nested=True) for run_id in ids]
