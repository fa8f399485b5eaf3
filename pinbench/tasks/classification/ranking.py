"""How a classification output's declared steps rank its classes (decision 170).

- ``softmax`` along the class axis is strictly increasing in each score, so it ranks the
  classes exactly as the scores do: top-k is computed from the scores themselves (a float32
  softmax would tie scores it rounds to the same probability, or to 0). Along another axis it
  would mix samples (the batch axis) or normalise a single value (an axis of length 1):
  refused on the first answer (``SoftmaxAxis``), naming the output, the axis and its shape;
- ``argsort``: ``descending: true`` (the default) is the scoring's own rule, highest first;
  ``descending: false`` ranks the lowest score first (a distance, an energy);
- ``topk``: the ``k`` highest classes are the sample's answer: top-5 is recorded only where
  ``k`` is 5 or more (with fewer kept it is not defined).

Ties rank the lower class index first either way. Scores are compared in their own type
(``postprocess.ranked``): integers are never cast to float64, whose 53-bit mantissa would make
int64 scores above 2**53 equal or reorder them. The steps' order and which are allowed is the
registry's rule (``registry.output_steps``), checked again here for manifests stored before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.output_steps import check_output_steps
from pinbench.registry.ports import Output
from pinbench.worker.postprocess import ranked


@dataclass(frozen=True, slots=True)
class Ranking:
    """The order a classification output's classes are ranked in, and how many it keeps."""

    descending: bool = True
    """Highest score first (False: lowest first, ``argsort: {descending: false}``)."""
    keep: int | None = None
    """``topk``'s ``k``: the classes each sample's answer holds (None: every class)."""
    softmax_axes: tuple[int, ...] = ()
    """The axes the declared softmax steps normalise along (each must be the class axis)."""

    def ranks_top5(self, classes: int) -> bool:
        """Whether top-5 is defined: five classes or more, and five of them kept."""
        return classes >= 5 and (self.keep is None or self.keep >= 5)

    def describe(self) -> str:
        order = "highest score first" if self.descending else "lowest score first"
        return order + (f", top {self.keep} kept" if self.keep is not None else "")


def ranking_of(output: Output) -> Ranking:
    """The ranking ``output``'s steps declare; ``OutputStepRefused`` for a step the
    classification task does not apply (a manifest stored before the rule)."""
    check_output_steps([output])
    descending, keep, axes = True, None, []
    for step in output.steps:
        if step.softmax is not None:
            axes.append(step.softmax.axis)
        elif step.argsort is not None:
            descending = step.argsort.descending
        elif step.topk is not None:
            keep = step.topk.k
    return Ranking(descending, keep, tuple(axes))


class SoftmaxAxis(UserError):
    """A softmax step on a classification output along an axis that is not its classes'."""

    def __init__(self, *, output: str, axis: int, shape: tuple[int, ...], reason: str) -> None:
        super().__init__(
            f"classification output {output!r} of shape {list(shape)} declares `softmax: "
            f"{{axis: {axis}}}`: {reason}; a classification output's softmax goes along its "
            "class axis (-1 for (N, classes))"
        )
        self.output = output
        self.axis = axis
        self.shape = shape
        self.reason = reason


def check_softmax_axes(ranking: Ranking, shape: Sequence[int], *, name: str) -> None:
    """Each declared softmax axis of an output of ``shape`` (samples on axis 0) is its class
    axis: the one axis past the first longer than 1 (any, when every one is 1)."""
    dims = tuple(int(d) for d in shape)
    longer = [a for a in range(1, len(dims)) if dims[a] != 1]
    for axis in ranking.softmax_axes:
        if not -len(dims) <= axis < len(dims):
            reason = f"the output has {len(dims)} axes"
        elif axis % len(dims) == 0:
            reason = "axis 0 holds the samples: it would mix the batch's samples"
        elif longer and axis % len(dims) not in longer:
            reason = f"that axis has length 1; the classes are on axis {longer[0]}"
        else:
            continue
        raise SoftmaxAxis(output=name, axis=axis, shape=dims, reason=reason)


def ranked_classes(scores: npt.NDArray[np.generic], ranking: Ranking) -> npt.NDArray[np.intp]:
    """Each row of ``scores`` ``(N, C)``: its class indices best first, as many as kept."""
    order = ranked(scores, descending=ranking.descending)
    return order if ranking.keep is None else order[:, : ranking.keep]
