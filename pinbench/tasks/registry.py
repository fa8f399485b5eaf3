"""The tasks pinbench knows, by the name a dataset's ``task:`` gives (decision 124).

Each entry of ``TASKS`` (kept in ``table``) is ``module:Class``, imported only when the task is
asked for, so asking for one task never imports another's dependencies. Adding a task is its
folder and one line in ``TASKS``; a built-in task also names its metrics' declaration in
``metrics.DECLARED`` and its datasets' in ``datasets.DECLARED``, so that naming its metrics or
checking a dataset of it (as each stored lockfile read does) imports no task.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from pinbench.errors import UserError
from pinbench.tasks import datasets, metrics
from pinbench.tasks.base import Metric, Task
from pinbench.tasks.datasets import Datasets
from pinbench.tasks.table import TASKS as TASKS  # one dict, read by ``metrics`` too


class UnknownTask(UserError):
    def __init__(self, *, name: str, known: list[str]) -> None:
        shown = name if len(name) <= 64 else f"{name[:64]}... ({len(name)} characters)"
        super().__init__(f"unknown task {shown!r}; known: {', '.join(known)}")
        self.name = name
        self.known = known


def names() -> list[str]:
    return list(TASKS)


@cache
def task(name: str) -> Task:
    """The task named ``name`` (``UnknownTask`` if there is none)."""
    where = TASKS.get(name)
    if where is None:
        raise UnknownTask(name=name, known=names())
    module, _, cls = where.partition(":")
    made: Task = getattr(importlib.import_module(module), cls)()
    return made


def tasks() -> list[Task]:
    return [task(n) for n in TASKS]


def datasets_of(task_name: str) -> Datasets:
    """What task ``task_name``'s datasets are (``tasks.datasets``): a built-in task's
    declaration, read without importing the task, or the class's own of a task added by its
    ``TASKS`` line alone (``UnknownTask`` if there is none)."""
    if task_name not in TASKS:
        raise UnknownTask(name=task_name, known=names())
    found = datasets.declared(task_name)
    if found is not None:
        return found
    chosen = task(task_name)
    return chosen.datasets or Datasets(
        chosen.label_formats,
        by_file_name=chosen.by_file_name,
        generates=chosen.generates,
        publishable=chosen.publishable,
    )


def check_dataset(task_name: str, labels: Any, *, per_file: bool) -> None:
    """A dataset's task is one pinbench knows and reads its labels section (``ValueError``
    otherwise): checked wherever a dataset manifest or a lockfile's dataset is read, from the
    tasks' declarations (``datasets_of``): a built-in task is not imported."""
    try:
        rules = datasets_of(task_name)
    except UnknownTask as exc:
        raise ValueError(str(exc)) from None
    fmt = labels.format
    if fmt not in rules.formats:
        owners = task_of_label_format(fmt)
        if not owners:
            known = sorted({f for n in TASKS for f in datasets_of(n).formats})
            raise ValueError(
                f"unknown labels format: `labels.format` must be one of {', '.join(known)}; got "
                f"{fmt!r} (task {task_name} reads {', '.join(rules.formats)})"
            )
        raise ValueError(
            f"labels of format {fmt} go with task {' or '.join(owners)}; task {task_name} "
            f"reads labels of format {', '.join(rules.formats)}"
        )
    if datasets.declared(task_name) is not None:
        rules.check(labels, per_file=per_file)
    else:  # a task added by its ``TASKS`` line alone checks its labels itself
        task(task_name).check_labels(labels, per_file=per_file)


def task_of_label_format(fmt: str) -> list[str]:
    """The tasks that read labels of format ``fmt``."""
    return [n for n in TASKS if fmt in datasets_of(n).formats]


def metric_of(key: str, task_name: str | None = None) -> Metric | None:
    """What a recorded metric ``key`` is (``metrics.metric_of``: read from the tasks'
    declarations, no task imported)."""
    return metrics.metric_of(key, task_name)


def exact_metrics(recorded: dict[str, Any], task_name: str | None = None) -> list[str]:
    """The recorded metrics a rerun must give again exactly (``metrics.exact_metrics``)."""
    return metrics.exact_metrics(recorded, task_name)


def headline(
    recorded: dict[str, Any], task_name: str | None = None
) -> tuple[Task, Metric, float] | None:
    """What lists show for a run (``metrics.headline``), with the task it is of."""
    found = metrics.headline(recorded, task_name)
    return None if found is None else (task(found[0]), found[1], found[2])
