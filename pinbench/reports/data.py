"""What a report is made of: the recorded runs (as ``history.show_run`` gives them, metrics
nested) and their raw per-query latencies, read from the blob store and verified first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.cluster.systems import list_systems
from pinbench.errors import UserError
from pinbench.evaluator.records.run_blobs import latencies_of
from pinbench.evaluator.records.run_view import show_run
from pinbench.reports.hardware import hardware, system_label
from pinbench.run_figures import marked
from pinbench.workspace import Workspace

MAX_RUNS = 32


class EmptyReport(UserError):
    def __init__(self) -> None:
        super().__init__("a report needs at least one run: name run ids (see `pinbench runs list`)")


class TooManyRuns(UserError):
    def __init__(self, *, count: int) -> None:
        super().__init__(f"a report covers at most {MAX_RUNS} runs, not {count}")
        self.count = count


@dataclass(frozen=True, slots=True)
class RunData:
    info: dict[str, Any]
    """``show_run(..., nested=True)``: summary, metrics, units, host, details, lockfile."""
    latencies_ns: npt.NDArray[np.int64] | None
    """The raw per-query latencies; None for a run that recorded none (failed, queued)."""
    system_facts: dict[str, Any] | None = None
    """The facts its cluster system registered (``systems`` table); None for a run made
    outside a cluster."""

    @property
    def id(self) -> str:
        return str(self.info["id"])

    @property
    def label(self) -> str:
        """Short and unique within a report: the id's first 8 characters, then what ran; a
        traced run says so (its latencies carry the profilers' overhead), a run LoadGen called
        INVALID too (its figures are not a result: the label marks it in every table and
        plot)."""
        i = self.info
        framework = (i["framework"] or "").split("@")[0]
        traced = f" traced:{self.trace}" if self.trace != "none" else ""
        if not i["model"]:  # an operator run: no model, dataset or scenario
            result = (i.get("details") or {}).get("operator") or {}
            op = (result.get("spec") or {}).get("op", "operator")
            return f"{i['id'][:8]} {op} {result.get('framework') or framework}{traced}"
        model = i["model"].split("@")[0].rsplit("/", 1)[-1]
        said = self.metrics.get("code_bool") == 1.0  # ``marked`` adds it (runs before had none)
        code = " +code" if self.code and not said else ""
        label = f"{i['id'][:8]} {model} {framework} {i['scenario']} b{i['batch_size']}"
        return marked(label + traced + code, self.metrics)

    @property
    def code(self) -> list[str]:
        """The sha256 of each piece of code a user allowed that ran beside the model (a
        manifest's processing, a chain's code between stages; docs/security.md), as the host
        recorded it from the lockfile: its label says ``+code``, its timings are those of a
        system that ran it."""
        found = (self.info.get("details") or {}).get("code_sha256") or []
        return [str(d) for d in found] if isinstance(found, list) else []

    @property
    def level(self) -> str:
        """What it benchmarked: ``operator`` (Deep500's L0), ``training`` (L2) or
        ``inference``; read from its details (the result), else its lockfile (the request)."""
        details = self.info.get("details") or {}
        body = self.info.get("lockfile_body") or {}
        for level in ("operator", "training"):
            if details.get(level) or body.get(level):
                return level
        return "inference"

    @property
    def system(self) -> str:
        """Where it ran: the cluster system's name, or ``HOST (local)``."""
        return system_label(self.info)

    @property
    def hardware(self) -> dict[str, str]:
        """Its machine's hardware facts as text (``reports.hardware.FACTS``)."""
        return hardware(self.info.get("host"), self.system_facts)

    @property
    def trace(self) -> str:
        return str(self.info.get("trace", "none"))

    @property
    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = self.info["metrics"]
        return out


@dataclass(frozen=True, slots=True)
class Report:
    runs: list[RunData]
    created_at: str

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.runs]


def gather(ws: Workspace, run_ids: list[str]) -> Report:
    """The runs named (ids or unique prefixes, each once, in the order given)."""
    if not run_ids:
        raise EmptyReport()
    if len(run_ids) > MAX_RUNS:
        raise TooManyRuns(count=len(run_ids))
    runs: list[RunData] = []
    seen: set[str] = set()
    systems: dict[str, dict[str, Any]] | None = None
    for run_id in run_ids:
        info = show_run(ws, run_id, nested=True)
        if info["id"] in seen:
            continue
        seen.add(info["id"])
        digest = info.get("latencies_sha256")
        if info.get("system") and systems is None:
            systems = {s.name: s.facts for s in list_systems(ws)}
        facts = (systems or {}).get(info.get("system") or "")
        runs.append(RunData(info, latencies_of(ws, digest) if digest else None, facts))
    return Report(runs=runs, created_at=datetime.now(UTC).isoformat(timespec="seconds"))
