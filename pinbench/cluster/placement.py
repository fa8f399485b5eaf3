"""Placement: which systems meet a lockfile's ``system`` constraints (decision 103).

A system is a candidate when it is alive and its facts meet every constraint set: the
platform (``arch``: ``amd64`` is an ``x86_64`` machine, ``arm64`` an ``aarch64`` one;
``device: cuda`` needs an NVIDIA GPU, ``rocm`` the ROCm runtime), and the placement fields
(``name``, ``gpu``: whole words of a GPU's model name, ``cpu_flags``). When none is, the
error lists the constraint and every system with what it lacks, and nothing is queued.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.registry.request import SystemRequest

if TYPE_CHECKING:
    from pinbench.registry.lockfile import LockBody

MACHINE_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class Candidate:
    name: str
    facts: dict[str, Any]
    alive: bool


def describe(system: SystemRequest) -> str:
    """The constraint as the request wrote it (for errors): ``arch=amd64 device=cpu gpu=H100``."""
    parts = [f"arch={system.arch}", f"device={system.device}"]
    if system.name is not None:
        parts.append(f"name={system.name}")
    if system.gpu is not None:
        parts.append(f"gpu={system.gpu}")
    if system.cpu_flags is not None:
        parts.append(f"cpu_flags={','.join(system.cpu_flags)}")
    return " ".join(parts)


def unmet(
    system: SystemRequest, facts: dict[str, Any], name: str | None, *, workers: int = 1
) -> list[str]:
    """What a system (``name``, or this machine: None) lacks to run a lockfile placed so;
    ``workers``: a distributed training run's workers, one core each."""
    lacks: list[str] = []
    cores = facts.get("cores")
    if workers > 1 and isinstance(cores, int) and workers > cores:
        lacks.append(f"has {cores} cores, fewer than distributed.workers = {workers}")
    machine = str(facts.get("arch", "?"))
    if MACHINE_ARCH.get(machine) != system.arch:
        lacks.append(f"arch is {machine}, not {system.arch}")
    gpus = [str(g.get("name", "")) if isinstance(g, dict) else str(g) for g in _list(facts, "gpus")]
    if system.device == "cuda" and not gpus:
        lacks.append("no CUDA GPU")
    if system.device == "rocm" and "amdhip64" not in _list(facts, "accelerator_libraries"):
        lacks.append("no ROCm runtime (libamdhip64)")
    if system.name is not None and name is not None and name != system.name:
        lacks.append(f"is not system {system.name}")
    if system.gpu is not None and not any(_names_gpu(system.gpu, g) for g in gpus):
        have = ", ".join(gpus) if gpus else "none"
        lacks.append(f"no {system.gpu} GPU (has: {have})")
    if system.cpu_flags is not None:
        flags = set(_list(facts, "cpu_flags"))
        missing = [f for f in system.cpu_flags if f not in flags]
        if missing:
            lacks.append(f"lacks CPU flag(s) {', '.join(missing)}")
    return lacks


def _list(facts: dict[str, Any], key: str) -> list[Any]:
    value = facts.get(key)
    return value if isinstance(value, list) else []


def _names_gpu(wanted: str, model: str) -> bool:
    """``H100`` names "NVIDIA H100 80GB HBM3" (whole words, any case); ``A10`` no A100."""
    pattern = rf"(?<![a-z0-9]){re.escape(wanted.strip().lower())}(?![a-z0-9])"
    return re.search(pattern, model.lower()) is not None


class NoMatchingSystem(UserError):
    def __init__(self, constraint: str, systems: list[tuple[str, list[str]]]) -> None:
        self.constraint = constraint
        self.systems = systems
        listed = "; ".join(f"{name}: {', '.join(why)}" for name, why in systems)
        super().__init__(
            f"no system meets {constraint}: "
            + (listed if systems else "the cluster has no systems (pinbench agent start)")
        )


def choose(
    system: SystemRequest,
    candidates: Sequence[Candidate],
    on: Sequence[str] | None,
    *,
    workers: int = 1,
) -> list[str]:
    """The systems to run on: those named in ``on`` (each must meet the constraints), or every
    one that does (``on`` None: ``--on all``); never empty. ``workers``: a distributed
    training run's, all on the one system that runs it."""
    why: dict[str, list[str]] = {}
    for c in candidates:
        lacks = unmet(system, c.facts, c.name, workers=workers)
        why[c.name] = (["gone"] if not c.alive else []) + lacks
    if on is None:
        chosen = [name for name, lacks in why.items() if not lacks]
        if not chosen:
            raise NoMatchingSystem(describe(system), sorted(why.items()))
        return sorted(chosen)
    refused = [
        (name, why.get(name, ["no such system"])) for name in on if why.get(name, ["?"]) != []
    ]
    if refused:
        raise NoMatchingSystem(describe(system), refused)
    return list(dict.fromkeys(on))


def choose_for(
    body: LockBody, candidates: Sequence[Candidate], on: Sequence[str] | None
) -> list[str]:
    """``choose`` for a lockfile: its system constraints, and a distributed training run's
    workers each system starts (one core each): all of them, or their share where the run
    spreads them over systems (``cluster.spread``)."""
    distributed = body.request.distributed
    workers = 1 if distributed is None else distributed.per_system
    return choose(body.system, candidates, on, workers=workers)


class PlacedElsewhere(UserError):
    def __init__(self, constraint: str, lacks: list[str]) -> None:
        self.constraint = constraint
        self.lacks = lacks
        super().__init__(
            f"this machine does not meet the lockfile's system {constraint}: " + "; ".join(lacks)
        )


def check_here(system: SystemRequest) -> None:
    """A run on this machine (no cluster) of a lockfile with placement constraints: they are
    checked against this machine's facts (a named system is never this machine)."""
    if not system.placed():
        return
    from pinbench.cluster.facts import system_facts

    lacks = unmet(system, system_facts(), None)
    if system.name is not None:
        lacks.insert(0, f"it is placed on system {system.name}: run it on the cluster")
    if lacks:
        raise PlacedElsewhere(describe(system), lacks)
