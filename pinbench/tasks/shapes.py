"""Checks of a first answer's shapes that several tasks share."""

from __future__ import annotations

import numpy as np

from pinbench.errors import UserError
from pinbench.tasks.base import Answer, Array


class BatchAxisMismatch(UserError):
    """An output scored per sample whose first axis is not the batch's samples: its rows
    would be matched to other samples' ground truth."""

    def __init__(self, *, output: str, shape: tuple[int, ...], batch: int) -> None:
        super().__init__(
            f"output {output!r} has shape {list(shape)} for a batch of {batch} samples: its first "
            "axis must be the batch's samples"
        )
        self.output = output
        self.shape = shape
        self.batch = batch


def check_batch_axis(answer: Answer, names: list[str], batch: int) -> None:
    for name in names:
        shape = tuple(int(d) for d in np.shape(answer[name]))
        if not shape or shape[0] != batch:
            raise BatchAxisMismatch(output=name, shape=shape, batch=batch)


class NotEverySample(UserError):
    """A task that scores the whole dataset at once got answers for only some samples."""

    def __init__(self, *, task: str, answered: int, samples: int) -> None:
        super().__init__(
            f"a {task} run needs every sample answered: {answered} of {samples} were (raise "
            "the scenario's sample_count, or leave it out)"
        )
        self.task = task
        self.answered = answered
        self.samples = samples


def stacked(answers: dict[int, Answer], names: list[str]) -> tuple[list[int], dict[str, Array]]:
    """The sample indexes answered, in order, and the named outputs for them (each stacked
    once, for accuracy and for cross-framework parity)."""
    indexes = sorted(answers)
    return indexes, {
        name: np.concatenate([np.asarray(answers[i][name]) for i in indexes]) for name in names
    }


def every_sample(task: str, answers: dict[int, Answer], samples: int) -> None:
    if len(answers) != samples:
        raise NotEverySample(task=task, answered=len(answers), samples=samples)
