"""What rank 0 takes from the other ranks' gathered figures, checked before it reports them
(decision 317): a rank may be another machine's, so every value must be finite and not
negative, every count whole, and whatever rank 0 can work out itself must be what it works
out: each rank's samples in an epoch (fixed by the data's size, the batch and the rank), its
steps, the parameter bytes and the bytes handed to collectives (the same on every rank in
every scheme), its time in collectives within its training time. A rank whose figures fail
fails the run, naming it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pinbench.errors import UserError

EPOCH = ("samples", "steps", "loss_sum", "train_s", "eval_s")
"""An epoch's row, as every rank gathers it."""
TOTALS = ("steps", "sent_bytes", "parameter_bytes", "collective_s")
"""A run's totals row; ``collective_s`` is -1 for a scheme that does not time it (``ddp``)."""


class RankFiguresRefused(UserError):
    def __init__(self, *, rank: int, field: str, value: float, reason: str) -> None:
        super().__init__(
            f"distributed training: rank {rank}'s {field} ({value!r}) refused: {reason}"
        )
        self.rank = rank
        self.field = field
        self.value = value
        self.reason = reason


def shares(samples: int, workers: int, batch_size: int) -> list[int]:
    """Each rank's samples in one epoch, as ``worker._train`` cuts them: full global batches
    of ``workers`` x ``batch_size``, a last one split by ``numpy.array_split`` (skipped when
    smaller than ``workers``)."""
    span = workers * batch_size
    full, rest = divmod(samples, span)
    out = [full * batch_size] * workers
    if rest >= workers:
        for r, part in enumerate(np.array_split(np.arange(rest), workers)):
            out[r] += len(part)
    return out


def check_epoch(rows: Sequence[Sequence[float]], expected: Sequence[int]) -> None:
    """Every rank's epoch row: ``expected`` samples each, rank 0's steps."""
    for rank, row in enumerate(rows):
        _plain(rank, row, EPOCH, whole=("samples", "steps"))
        if row[0] != expected[rank]:
            raise RankFiguresRefused(
                rank=rank, field="samples", value=row[0], reason=f"its shard holds {expected[rank]}"
            )
        if row[1] != rows[0][1]:
            raise RankFiguresRefused(
                rank=rank, field="steps", value=row[1], reason=f"rank 0 took {rows[0][1]:g}"
            )


def check_totals(rows: Sequence[Sequence[float]], train_s: Sequence[float]) -> None:
    """Every rank's totals: steps and bytes as rank 0's, its time in collectives within its
    training time ``train_s`` (or -1 on every rank, for a scheme that does not time it)."""
    for rank, row in enumerate(rows):
        waited = row[3]
        _plain(rank, row[:3], TOTALS[:3], whole=TOTALS[:3])
        for k in range(3):
            if row[k] != rows[0][k]:
                raise RankFiguresRefused(
                    rank=rank, field=TOTALS[k], value=row[k], reason=f"rank 0's is {rows[0][k]:g}"
                )
        untimed = rows[0][3] == -1
        if untimed and waited != -1:
            raise RankFiguresRefused(
                rank=rank, field="collective_s", value=waited, reason="this scheme is not timed"
            )
        if not untimed and not (math.isfinite(waited) and 0 <= waited <= train_s[rank] + 1e-3):
            raise RankFiguresRefused(
                rank=rank,
                field="collective_s",
                value=waited,
                reason=f"outside its training time (0 to {train_s[rank]:.6f} s)",
            )


def _plain(rank: int, row: Sequence[float], names: Sequence[str], whole: Sequence[str]) -> None:
    for name, value in zip(names, row, strict=True):
        if not math.isfinite(value) or value < 0:
            raise RankFiguresRefused(
                rank=rank, field=name, value=value, reason="not a finite, non-negative number"
            )
        if name in whole and value != int(value):
            raise RankFiguresRefused(rank=rank, field=name, value=value, reason="not a count")
