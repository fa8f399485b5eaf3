"""The cells a study expands to: every model entry on every system in every scenario (and,
for an Offline scenario, every batch size the entry sweeps), each one evaluation request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinbench.studies.errors import StudyError

if TYPE_CHECKING:
    from pinbench.studies.spec import ModelEntry, Study, System

MAX_CELLS = 10_000
"""A study expands to at most this many cells (one lockfile and one run each)."""


@dataclass(frozen=True, slots=True)
class Cell:
    position: int
    """Its place in the study's order (models, then systems, then scenarios, then batch)."""
    entry: ModelEntry
    scenario: str
    """The study's name for the scenario (a key of ``Study.scenarios``)."""
    system: System
    batch_size: int
    request: dict[str, Any]

    @property
    def key(self) -> str:
        """What identifies the cell within its study, across runs of it."""
        e = self.entry
        return (
            f"{e.model}|{e.framework}|{e.dataset}|{self.scenario}|{self.system.name}|"
            f"{self.batch_size}"
        )

    @property
    def entry_key(self) -> str:
        """Its model entry: every cell of one entry runs the same resolved versions."""
        return f"{self.entry.model}|{self.entry.framework}|{self.entry.dataset}"

    @property
    def label(self) -> str:
        batch = f" batch {self.batch_size}" if self.batch_size != 1 else ""
        entry = f"{self.entry.model} {self.entry.framework}"
        return f"{entry} {self.scenario}{batch} on {self.system.name}"


def _request(entry: ModelEntry, scenario: dict[str, Any], system: System, batch: int) -> Any:
    return {
        "model": entry.model,
        "framework": entry.framework,
        "dataset": entry.dataset,
        "scenario": {"seed": 0, **scenario},
        "batch_size": batch,
        **({"generation": entry.generation} if entry.generation is not None else {}),
        **({"threads": system.threads} if system.threads is not None else {}),
    }


def cells(study: Study, *, source: str = "<study>") -> list[Cell]:
    """Every cell of ``study`` in order, each request parsed (a bad one refused naming its
    place); a study of more than ``MAX_CELLS`` cells is refused."""
    from pinbench.errors import UserError
    from pinbench.registry.request import parse_request

    out: list[Cell] = []
    for n, entry in enumerate(study.models):
        for system in study.systems:
            for name, scenario in study.scenarios.items():
                if entry.scenarios is not None and name not in entry.scenarios:
                    continue
                offline = scenario.get("name") == "Offline"
                for batch in (entry.batch_sizes or [1]) if offline else [1]:
                    if len(out) == MAX_CELLS:
                        raise StudyError(
                            source=source, reason=f"more than {MAX_CELLS} cells: split the study"
                        )
                    request = _request(entry, scenario, system, batch)
                    where = f"models[{n}] in scenario {name!r} on {system.name}"
                    try:
                        parse_request(request, source=where)
                    except UserError as exc:
                        raise StudyError(source=source, reason=str(exc)) from None
                    out.append(Cell(len(out), entry, name, system, batch, request))
    return out
