"""Semantic segmentation: a class per pixel against each sample's mask, scored with mIoU and
pixel accuracy (``score``, ``metrics``)."""

from __future__ import annotations

from typing import Any

from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.parity import Agreement, Recorded
from pinbench.tasks.segmentation.declared import DATASETS, METRICS
from pinbench.tasks.shapes import check_batch_axis, every_sample, stacked


class Segmentation(Task):
    name = "segmentation"
    title = "segmentation"
    datasets = DATASETS
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.tasks.segmentation.truth import mask_truth

        assert source.listed is not None  # the manifest checked: masks go with image files
        masks = mask_truth(
            source.dataset.labels,
            samples=source.listed,
            folder=source.folder or ".",
            paths=source.paths,
        )
        return {"class_names": masks.names, "classes": masks.classes, "segmentation": masks}

    def check_truth(self, source: TruthSource) -> None:
        from pinbench.tasks.segmentation.publish import check_masks

        check_masks(source)

    def prepare(self, context: Context) -> Scorer | None:
        samples = context.samples
        if not context.accuracy or samples.segmentation is None:
            return None
        from pinbench.tasks.segmentation.score import plan

        pixels = plan(
            context.model.inputs,
            context.model.outputs,
            samples.segmentation,
            context.model_paths,
            model=context.model_ref,
        )
        return PixelScorer(pixels, context)

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """The share of pixels of the same class in both runs' class maps
        (``parity.pixel_parity``)."""
        from pinbench.tasks.segmentation.parity import pixel_parity

        return pixel_parity(reference, other)


class PixelScorer(Scorer):
    def __init__(self, pixels: Any, context: Context) -> None:
        self.pixels = pixels
        self.outputs = [pixels.name]
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        from pinbench.tasks.segmentation.score import check_answer

        check_batch_axis(answer, self.outputs, batch)
        check_answer(answer, self.pixels)

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        """mIoU and pixel accuracy of every sample's class map (``score``)."""
        from pinbench.tasks.segmentation.score import score_masks

        samples = self.context.samples
        assert samples.files is not None
        every_sample("segmentation", answers, len(samples))
        name = self.pixels.name
        _, outputs = stacked(answers, [name])
        files = [(f.path, f.local) for f in samples.files]
        scored = score_masks(outputs[name], self.pixels, files)
        return Scored(scored.metrics, outputs[name], name, {"segmentation": scored.details})
