"""Speaker-verification trials, labels of format ``speaker-trials``: VoxCeleb1's trial-list
format, one trial per line, ``LABEL ENROLMENT TEST`` separated by single spaces, ``LABEL`` ``1``
(one speaker spoke both files, a target trial) or ``0`` (two speakers, a non-target trial), the
two files paths relative to the data folder, each a sample file. Blank lines are skipped; a
file may be in many trials, a trial may not pair a file with itself, and every sample file
must be in some trial (an embedding no trial reads is a sample the run did not need)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench.registry.dataset_layout import folder_prefix
from pinbench.worker.lines import LabelProblem, read_text, split_lines

MAX_TRIALS = 1_000_000
"""Trials of one list (VoxCeleb1-H, the largest in use, has 552,536)."""


@dataclass(frozen=True, slots=True)
class Trials:
    enrolment: npt.NDArray[np.int64]
    """Each trial's enrolment file, as a sample index."""
    test: npt.NDArray[np.int64]
    """Each trial's test file, as a sample index."""
    target: npt.NDArray[np.bool_]
    """Whether one speaker spoke both (label 1)."""


def read_trials(
    where: str, *, samples: list[str], folder: str, read: Callable[[str], Path]
) -> Trials:
    """The trials of ``where`` (``samples``: the sample files' artifact paths, in sample order;
    ``read`` gives a verified local file by its artifact path)."""
    prefix = folder_prefix(folder)
    index = {path[len(prefix) :]: i for i, path in enumerate(samples)}
    rows: list[tuple[int, int, bool]] = []
    for number, line in enumerate(split_lines(read_text(read(where), where), where), start=1):
        if not line.strip():
            continue
        fields = line.split(" ")
        if len(fields) != 3 or fields[0] not in ("0", "1"):
            raise LabelProblem(
                path=where,
                reason=f"line {number}: want LABEL ENROLMENT TEST separated by single spaces, "
                "LABEL 1 (same speaker) or 0",
            )
        pair = []
        for file in fields[1:]:
            if file not in index:
                raise LabelProblem(
                    path=where,
                    reason=f"line {number} names {file[:200]!r}, not a sample file of the data "
                    f"folder {folder!r} (paths are relative to it)",
                )
            pair.append(index[file])
        if pair[0] == pair[1]:
            raise LabelProblem(path=where, reason=f"line {number} pairs {fields[1]!r} with itself")
        rows.append((pair[0], pair[1], fields[0] == "1"))
        if len(rows) > MAX_TRIALS:
            raise LabelProblem(path=where, reason=f"more than {MAX_TRIALS} trials")
    if not rows:
        raise LabelProblem(path=where, reason="no trial: a trial list holds one per line")
    used = {i for e, t, _ in rows for i in (e, t)}
    unused = [p for p, i in index.items() if i not in used]
    if unused:
        raise LabelProblem(
            path=where,
            reason=f"{len(unused)} sample files are in no trial, e.g. {unused[0]!r}: leave them "
            "out of the dataset",
        )
    enrolment, test, target = zip(*rows, strict=True)
    return Trials(
        np.array(enrolment, dtype=np.int64),
        np.array(test, dtype=np.int64),
        np.array(target, dtype=bool),
    )
