"""Which output steps the reading of each output type applies; any other is refused.

An output's ``steps`` are honoured by the task that reads outputs of its type, or refused,
naming the step and the task, never accepted and ignored (DESIGN invariant 10; decision 170):

- ``transpose`` (every type but ``generation``): applied by the evaluator to the model's raw
  answer before any task reads it (``worker.output_axes``), so it is the output's first
  step, and it is declared once; the axis it moves to the front is the output's batch axis.
  A generation run reads next-token logits itself and applies none;

- ``classification`` (the classification task ranks the classes of each sample): ``softmax``
  along the class axis (it ranks the classes as the scores do, so top-k is computed from the
  scores themselves, exactly; another axis is refused on the first answer), ``argsort``
  (``descending: false``: the lowest score ranks first) and ``topk`` (the classes a sample's
  answer keeps: top-5 is recorded only where ``k`` is 5 or more). Both give class indices,
  so at most one of them, as the last step; ``pool`` and ``l2_normalize`` are refused;
- ``embedding`` (sentence similarity): every step, applied in order as written;
- ``tensor``, ``detection``, ``segmentation``, ``text``, ``binary``, ``generation``: none.
  A tensor output is read as the model gives it; the others as their own section says
  (``detection``, ``segmentation``, ``ctc``, ``binary``) or as next-token logits.

``check_output_steps`` is asked at publish (``supported.check_supported``) and again before a
run (a manifest stored before this rule is refused there, not read otherwise than it says).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pinbench.errors import UserError
from pinbench.registry.ports import Output
from pinbench.registry.steps import OutputStep

RAW: Final = ("transpose",)
"""The steps the evaluator applies to the raw answer, before the task's reading: first."""

APPLIED: Final[dict[str, tuple[str, ...]]] = {
    "classification": (*RAW, "softmax", "argsort", "topk"),
    "embedding": (*RAW, "softmax", "argsort", "topk", "pool", "l2_normalize"),
    "tensor": RAW,
    "detection": RAW,
    "segmentation": RAW,
    "text": RAW,
    "binary": RAW,
}
"""Per output type, the steps its reading applies; a type not named here applies none."""

READ_BY: Final[dict[str, str]] = {
    "classification": "the classification task ranks its class scores (softmax, argsort and "
    "topk apply)",
    "embedding": "the sentence-similarity task",
    "tensor": "no task: a tensor output is read as the model gives it (after a transpose)",
    "detection": "the detection task reads it as its `detection` section says",
    "segmentation": "the segmentation task reads it as its `segmentation` section says",
    "text": "the text-recognition task decodes it as its `ctc` section says",
    "binary": "the voice-activity task thresholds it as its `binary` section says",
    "generation": "the text-generation task generates from its next-token logits",
}
"""Who reads an output of each type, and how: the reason a step it does not apply is refused."""

GIVES_INDICES: Final = ("argsort", "topk")


class OutputStepRefused(UserError):
    """A declared output step that the reading of its output would not apply."""

    def __init__(self, *, output: str, type: str, step: str, reason: str, at: str) -> None:
        super().__init__(
            f"output {output!r} (type {type}) declares a `{step}` step, which is not applied: "
            f"{reason}; remove the step - at `{at}`"
        )
        self.output = output
        self.type = type
        self.step = step
        self.reason = reason
        self.at = at


def step_name(step: OutputStep) -> str:
    """The one field an output step sets (``softmax``, ``topk``...)."""
    return next(n for n in step.__struct_fields__ if getattr(step, n) is not None)


def check_output_steps(outputs: Sequence[Output]) -> None:
    """Refuse (``OutputStepRefused``) an output step its output's reading does not apply, a
    ``transpose`` that is not the first step (or a second one), and, on a classification
    output, a step after ``argsort`` or ``topk`` (it would act on class indices, not scores)."""
    for i, out in enumerate(outputs):
        applied = APPLIED.get(out.type, ())
        names = [step_name(s) for s in out.steps]
        for j, name in enumerate(names):
            at = f"$.outputs[{i}].steps[{j}]"
            if name not in applied:
                reason = READ_BY[out.type]
                if applied:
                    reason += f"; {name} is not among them"
                raise OutputStepRefused(
                    output=str(out.name), type=out.type, step=name, reason=reason, at=at
                )
            if name in RAW and j != 0:
                raise OutputStepRefused(
                    output=str(out.name),
                    type=out.type,
                    step=name,
                    reason="it reorders the model's raw answer before anything else reads it: "
                    "an output's transpose is its first step, and it has one",
                    at=at,
                )
            earlier = [n for n in names[:j] if n in GIVES_INDICES]
            if out.type == "classification" and earlier:
                raise OutputStepRefused(
                    output=str(out.name),
                    type=out.type,
                    step=name,
                    reason=f"{earlier[0]} before it gives class indices, not scores: argsort "
                    "or topk is the last step of a classification output",
                    at=at,
                )
