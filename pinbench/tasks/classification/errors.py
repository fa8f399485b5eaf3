"""A classification output that cannot be scored against its dataset."""

from __future__ import annotations

from pinbench.errors import UserError


class ClassCountMismatch(UserError):
    """A classification output scores another number of classes than the dataset declares:
    its indexes cannot mean the dataset's classes."""

    def __init__(self, *, output: str, scores: int, dataset: str, classes: int) -> None:
        super().__init__(
            f"output {output} scores {scores} classes but dataset {dataset} declares {classes}: "
            "an accuracy run needs the model's class indexes to be the dataset's (pair them "
            "with a dataset labelled for this model)"
        )
        self.output = output
        self.scores = scores
        self.dataset = dataset
        self.classes = classes
