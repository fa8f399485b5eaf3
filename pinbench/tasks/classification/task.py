"""Classification: class scores per sample against each sample's class (``scores`` has the
shape rule and the metrics; ``rows`` the per-sample rows a person reads; ``scorer`` checks and
scores a run's answers, imported when a run scores, so that a lockfile naming this task imports
no NumPy)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.tasks.base import Context, Scorer, Task, TruthSource
from pinbench.tasks.classification.declared import DATASETS, METRICS, OTHER

if TYPE_CHECKING:
    from pinbench.tasks.parity import Agreement, Recorded


class NoClassificationOutput(UserError):
    """An accuracy run on a model that declares no output of ``type: classification``."""

    def __init__(self, *, model: str, outputs: list[str]) -> None:
        super().__init__(
            f"an accuracy run needs an output of `type: classification`; model {model} "
            f"declares {', '.join(outputs) if outputs else 'no outputs'}: mark the output "
            "that holds the class scores"
        )
        self.model = model
        self.outputs = outputs


class Classification(Task):
    name = "classification"
    title = "classification"
    datasets = DATASETS
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.worker.labels import read_labels

        dataset = source.dataset
        labels = read_labels(
            dataset.labels,
            samples=source.listed,
            count=source.count,
            folder=source.folder,
            read=source.paths.__getitem__,
        )
        declared = dataset.labels.classes
        if declared is None and dataset.labels.names is not None and labels is not None:
            declared = len(labels.names or [])
        return {
            "labels": labels.indexes if labels is not None else None,
            "class_names": labels.names if labels is not None else None,
            "classes": declared,
        }

    def prepare(self, context: Context) -> Scorer | None:
        scored = classification_outputs(context.model.outputs)
        binary = [o for o in context.model.outputs if o.type == "binary"]
        if binary:  # a one-sigmoid classifier: scored by its probability (``binary``)
            from pinbench.tasks.classification.binary import BinaryScorer

            if scored or len(binary) > 1:
                raise UserError(
                    f"model {context.model_ref} declares {len(scored)} classification and "
                    f"{len(binary)} binary outputs: a classification run scores either its "
                    "classification outputs or its one binary output; declare the others as "
                    "type tensor"
                )
            return BinaryScorer(binary[0], context)
        if not scored:
            if context.accuracy:
                raise NoClassificationOutput(
                    model=context.model_ref,
                    outputs=[f"{o.name} ({o.type})" for o in context.model.outputs],
                )
            return None
        from pinbench.tasks.classification.scorer import ClassScorer

        return ClassScorer(scored, context)

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """Each sample's top-1 class in both runs, and the scores' differences
        (``parity.class_parity``); of a binary output, each sample's predicted class
        (``binary.binary_parity``)."""
        from pinbench.tasks.classification.binary import binary_parity, recorded_output
        from pinbench.tasks.classification.parity import class_parity

        if recorded_output(reference) is not None:
            return binary_parity(reference, other)
        return class_parity(reference, other)


class Other(Classification):
    """A dataset for performance runs; where the model declares classification outputs and
    the dataset labels, it is scored as classification (as it always was)."""

    name = "other"
    title = "other"
    datasets = OTHER
    publishable = OTHER.publishable


def classification_outputs(outputs: list[Any]) -> dict[str, str]:
    """The declared outputs of ``type: classification`` (the ones accuracy is computed from),
    by their ``predict`` key, each with its metric suffix (``[a-z0-9_]``)."""
    found = {
        str(o.name): _metric_suffix(str(o.name)) for o in outputs if o.type == "classification"
    }
    clashes = sorted(k for k in found if list(found.values()).count(found[k]) > 1)
    if len(found) > 1 and clashes:
        raise UserError(
            f"classification outputs {', '.join(clashes)} give the same metric names "
            f"(top1_{found[clashes[0]]}): rename one"
        )
    return found


def _metric_suffix(name: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")[:80] or "output"
