"""The ``systems`` table: each agent that joined the cluster, its facts, and the runs it did.

A system is registered (or its facts refreshed) by the process that reads the cluster: the
server, or ``pinbench systems list --cluster``. Whether it is alive is Ray's answer at the
moment of asking and is never stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pinbench.db.plain import json_value, when
from pinbench.errors import UserError
from pinbench.specs.system_names import check_name
from pinbench.workspace import Workspace


@dataclass(frozen=True)
class SystemRow:
    name: str
    facts: dict[str, Any]
    node_id: str | None
    registered_at: datetime
    seen_at: datetime
    runs: int
    alive: bool | None = None
    """Ray's answer when a cluster was asked; None: not asked."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "facts": self.facts,
            "node_id": self.node_id,
            "registered_at": self.registered_at.isoformat(),
            "seen_at": self.seen_at.isoformat(),
            "runs": self.runs,
            "alive": self.alive,
        }


class UnknownSystem(UserError):
    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        listed = ", ".join(known) if known else "none yet (start one: pinbench agent start)"
        super().__init__(f"no system named {name!r}; the systems are: {listed}")


def record(ws: Workspace, name: str, facts: dict[str, Any], node_id: str | None) -> None:
    """Register a system, or refresh the facts and node of one registered before. Two
    writers registering one system at once (two runs placed on it together) do not conflict:
    the row is inserted if absent (decision 286), then refreshed."""
    import json

    check_name(name)
    now = datetime.now(UTC)
    values = {"name": name, "facts": json.dumps(facts), "node": node_id, "now": now}
    with ws.writes() as rows:
        inserted = rows(
            "INSERT INTO systems (name, facts, node_id, registered_at, seen_at) "
            "VALUES (:name, :facts, :node, :now, :now) ON CONFLICT (name) DO NOTHING "
            "RETURNING name",
            values,
        )
        if not inserted:
            rows(
                "UPDATE systems SET facts = :facts, node_id = :node, seen_at = :now "
                "WHERE name = :name",
                values,
            )


SYSTEMS_SQL = (
    "SELECT s.name, s.facts, s.node_id, s.registered_at, s.seen_at, "
    "(SELECT COUNT(*) FROM runs r WHERE r.system = s.name) "
    "FROM systems s ORDER BY s.name"
)


def list_systems(ws: Workspace, alive: dict[str, bool] | None = None) -> list[SystemRow]:
    """Every registered system, with its run count; ``alive`` (by name) from the cluster."""
    with ws.reads() as rows:
        found = rows(SYSTEMS_SQL, {})
    return [
        SystemRow(
            name,
            json_value(facts),
            node_id,
            when(registered),
            when(seen),
            int(runs),
            None if alive is None else alive.get(name, False),
        )
        for name, facts, node_id, registered, seen, runs in found
    ]


def show_system(ws: Workspace, name: str, alive: dict[str, bool] | None = None) -> SystemRow:
    systems = list_systems(ws, alive)
    for row in systems:
        if row.name == name:
            return row
    raise UnknownSystem(name, [row.name for row in systems])
