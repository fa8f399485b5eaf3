"""A distributed training run's settings: the communication scheme, the number of workers and
(model averaging) the averaging period.

Plain data (a frozen msgspec struct): the request's ``distributed`` section, pinned in the
lockfile with the rest of the request. Constructing it validates it; ``msgspec.convert`` turns
the ``ValueError``s into ``ValidationError``s that name the field.
"""

from __future__ import annotations

import os
from typing import Annotated, Final, Literal

import msgspec

from pinbench import bounds as b
from pinbench.errors import UserError

SCHEMES: Final = ("allreduce", "pssgd", "mavg", "ddp")
"""``allreduce`` (Deep500's dsgd): every gradient all-reduced and averaged, every worker
steps; ``pssgd``: a synchronous parameter server, rank 0 reduces the gradients, steps and
broadcasts the parameters; ``mavg``: every worker steps on its own gradients and the
parameters are averaged every ``average_every`` steps; ``ddp``: PyTorch's
``DistributedDataParallel``, the native baseline."""


class DistributedSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``workers`` processes (ranks 0..workers-1), each training on its own shard of every
    global batch (``workers`` x ``training.batch_size`` samples); ``average_every``: the
    model averaging period in steps (``mavg`` only); ``systems``: how many systems of a
    cluster the ranks are spread over, ``workers / systems`` on each (ranks 0.. on the first:
    ``cluster.ranks``); 1: every rank on the one machine that runs the lockfile."""

    scheme: Literal["allreduce", "pssgd", "mavg", "ddp"]
    workers: Annotated[int, b.WORKERS.meta]
    average_every: Annotated[int, b.AVERAGE_EVERY.meta] | None = None
    systems: Annotated[int, b.RANK_SYSTEMS.meta] | None = None
    """Unset (one system) is left out of the request's data: ``LATE_DISTRIBUTED_FIELDS``."""

    @property
    def spread(self) -> int:
        """The systems the ranks are spread over (1 unless ``systems`` says more)."""
        return self.systems or 1

    @property
    def per_system(self) -> int:
        """The ranks each system starts."""
        return self.workers // self.spread

    def __post_init__(self) -> None:
        if self.workers % self.spread:
            raise ValueError(
                f"systems = {self.systems} does not divide workers = {self.workers}: each "
                "system starts the same number of ranks (workers / systems)"
            )
        if self.scheme == "mavg" and self.average_every is None:
            raise ValueError("scheme mavg needs average_every (the averaging period in steps)")
        if self.scheme != "mavg" and self.average_every is not None:
            raise ValueError(
                f"average_every is the mavg scheme's setting; scheme {self.scheme} takes none "
                "(drop average_every or use scheme mavg)"
            )


class TooManyWorkers(UserError):
    """More workers than the machine that would run them offers (one core each)."""

    def __init__(self, *, workers: int, available: int, where: str) -> None:
        super().__init__(
            f"distributed.workers = {workers}, but {where} offers {available} "
            f"(one CPU core per worker): ask for at most {available}"
        )
        self.workers = workers
        self.available = available
        self.where = where


def available_here() -> int:
    """The cores this process may run on: one worker each."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class RanksOnSystems(UserError):
    """A run whose ranks are spread over several systems, started where there is no cluster."""

    def __init__(self, *, systems: int) -> None:
        super().__init__(
            f"distributed.systems = {systems} spreads the ranks over {systems} systems of a "
            f"cluster: run it through a server with a cluster, naming them (pinbench run LOCK "
            f"--on SYSTEM_1 ... --on SYSTEM_{systems}), or lock it without systems to run every "
            "rank here"
        )
        self.systems = systems


def check_workers_here(spec: DistributedSpec | None, *, spread: bool = False) -> None:
    """Refuse a run whose workers this machine cannot host, before anything is recorded:
    ``spread``, this machine hosts its share of ranks spread over systems (an agent told so:
    ``cluster.ranks``); else all of them, and a spread run is refused here."""
    if spec is None:
        return
    if spec.spread > 1 and not spread:
        raise RanksOnSystems(systems=spec.spread)
    available = available_here()
    if spec.per_system > available:
        where = "this machine" if spec.spread == 1 else "each of its systems (per system)"
        raise TooManyWorkers(workers=spec.per_system, available=available, where=where)
