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


class OutputShapesDiffer(UserError):
    """Outputs of different shapes from samples fed one at a time (sizes of their own) where a
    task stacks them: names the output and two samples."""

    def __init__(self, *, output: str, first: str, other: str) -> None:
        super().__init__(
            f"output {output!r} differs in shape between samples ({first}; {other}): this "
            "task scores outputs stacked in one array, so the samples must have one size "
            "(a resize or letterbox instead of resize_multiple)"
        )
        self.output = output
        self.first = first
        self.other = other


def stacked(answers: dict[int, Answer], names: list[str]) -> tuple[list[int], dict[str, Array]]:
    """The sample indexes answered, in order, and the named outputs for them (each stacked
    once, for accuracy and for cross-framework parity); outputs that differ in shape from
    one sample to another are refused (``OutputShapesDiffer``)."""
    indexes = sorted(answers)
    out = {}
    for name in names:
        arrays = [np.asarray(answers[i][name]) for i in indexes]
        other = next((k for k, a in enumerate(arrays) if a.shape[1:] != arrays[0].shape[1:]), 0)
        if other:
            raise OutputShapesDiffer(
                output=name,
                first=f"sample {indexes[0]}: {list(arrays[0].shape)}",
                other=f"sample {indexes[other]}: {list(arrays[other].shape)}",
            )
        out[name] = np.concatenate(arrays)
    return indexes, out


def same_shapes(answers: dict[int, Answer], names: list[str]) -> bool:
    """Whether each named output has one shape (past the batch axis) in every answer."""
    first = answers[min(answers)] if answers else {}
    return all(
        np.shape(answer[name])[1:] == np.shape(first[name])[1:]
        for answer in answers.values()
        for name in names
    )


def padded(arrays: list[Array]) -> Array:
    """Outputs of different shapes (each with its batch axis) recorded as one array: each at
    the start of every axis of the largest shape, NaN elsewhere (an output of another than a
    floating type as float64)."""
    shape = np.max([a.shape for a in arrays], axis=0)
    shape[0] = sum(a.shape[0] for a in arrays)
    kind = np.result_type(*arrays)
    out = np.full(shape, np.nan, dtype=kind if np.issubdtype(kind, np.floating) else np.float64)
    row = 0
    for a in arrays:
        out[(slice(row, row + a.shape[0]), *(slice(0, d) for d in a.shape[1:]))] = a
        row += a.shape[0]
    return out


def every_sample(task: str, answers: dict[int, Answer], samples: int) -> None:
    if len(answers) != samples:
        raise NotEverySample(task=task, answered=len(answers), samples=samples)
