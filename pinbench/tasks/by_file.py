"""Ground truth given per sample file by the file's name (csv and JSON-lines labels of every
task): each row names one sample file of the data folder, every sample file once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pinbench.registry.dataset_layout import folder_prefix
from pinbench.worker.lines import LabelProblem

V = TypeVar("V")


def by_file(
    rows: Iterable[tuple[int, str, V]],
    samples: list[str],
    folder: str,
    where: str,
    *,
    word: str,
    what: str,
) -> list[tuple[int, V]]:
    """Each sample file's ``(number, value)`` in sample order, from ``rows`` of ``(number,
    file, value)`` (``word`` ``number`` is the row's place in ``where``: a csv ``row``, a
    JSON-lines ``line``; ``file`` relative to ``folder``). A row naming a file that is not a
    sample, a sample named twice, and a sample no row names (a missing ``what``) are refused."""
    prefix = folder_prefix(folder)
    wanted = [p[len(prefix) :] for p in samples]
    known = set(wanted)
    found: dict[str, tuple[int, V]] = {}
    for number, file, value in rows:
        if file not in known:
            raise LabelProblem(
                path=where,
                reason=f"{word} {number} names {file!r}, not a sample file of the data folder "
                f"{folder!r} (paths are relative to it)",
            )
        if file in found:
            raise LabelProblem(path=where, reason=f"{file!r} is labelled twice ({word} {number})")
        found[file] = (number, value)
    missing = [f for f in wanted if f not in found]
    if missing:
        raise LabelProblem(
            path=where,
            reason=f"{len(missing)} of {len(wanted)} samples have no {what}, e.g. {missing[0]!r}",
        )
    return [found[f] for f in wanted]
