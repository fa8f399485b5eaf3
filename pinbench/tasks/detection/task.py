"""Object detection: a model's boxes (and masks) against COCO ground truth, scored with COCO
mAP (``score``, ``coco``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.detection.declared import DATASETS, METRICS
from pinbench.tasks.parity import Agreement, Recorded
from pinbench.tasks.shapes import check_batch_axis, every_sample, padded, same_shapes, stacked
from pinbench.worker.undefined import DETAILS_KEY

GRID_LAYOUTS = ("yolox", "gfl")
"""Raw heads laid out on a grid of the model input's size (``decoding._heads``): with
``preprocess`` that size is the code's, not known to pinbench (each image's own size would be
taken), so such a model's run is refused (decision 262)."""


class Detection(Task):
    name = "detection"
    title = "detection"
    datasets = DATASETS
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.tasks.detection.truth import read_ground_truth

        path = source.dataset.labels.path
        assert path is not None and source.listed is not None  # the manifest checked
        truth = read_ground_truth(
            source.paths[path], where=path, samples=source.listed, folder=source.folder or "."
        )
        return {"detection": truth}

    def check_truth(self, source: TruthSource) -> None:
        """COCO ground truth for image files, each image's size as its header gives it."""
        from pinbench.tasks.detection.truth import check_sizes
        from pinbench.worker.lines import LabelProblem

        truth = self.read_truth(source)["detection"]
        data = source.dataset.data
        if source.sizes is None or source.listed is None:
            where = data.path if data is not None else "data"
            raise LabelProblem(path=where, reason="COCO ground truth needs image files")
        check_sizes(truth, source.listed, source.sizes)

    def prepare(self, context: Context) -> Scorer | None:
        samples = context.samples
        if not context.accuracy or samples.detection is None:
            return None
        from pinbench.tasks.detection.score import DetectionSetupError, plan

        boxes = plan(
            context.model.inputs,
            context.model.outputs,
            samples.detection,
            context.model_paths,
            model=context.model_ref,
        )
        layout = boxes.detection.layout
        if context.model.preprocess is not None and layout in GRID_LAYOUTS:
            raise DetectionSetupError(
                what=f"output {boxes.name!r}",
                reason=f"layout {layout} is decoded by the model input's size of each image, "
                "which `preprocess` makes and pinbench does not know: decode the head in "
                "`postprocess` into `layout: separate` boxes (fractions of the input with "
                "`normalized: true`)",
            )
        return BoxScorer(boxes, context)

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """Each image's recorded boxes matched across the runs (``parity.box_parity``)."""
        from pinbench.tasks.detection.parity import box_parity

        return box_parity(reference, other)


class BoxScorer(Scorer):
    def __init__(self, boxes: Any, context: Context) -> None:
        self.boxes = boxes
        self.outputs = list(boxes.names)
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        from pinbench.tasks.detection.decoding import check_columns, input_size

        check_batch_axis(answer, self.outputs, batch)
        spec = self.boxes.spec
        check_columns(answer, self.boxes, input_size(spec, arrays.get(str(spec.name))))

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        """The twelve COCO statistics of every sample's detections (and masks), those
        undefined named with their reasons in the details (``score``)."""
        from pinbench.tasks.detection.score import score_detections

        samples = self.context.samples
        assert samples.files is not None
        every_sample("detection", answers, len(samples))
        files = [(f.path, f.local) for f in samples.files]
        name = self.boxes.name
        if same_shapes(answers, self.outputs):
            _, outputs = stacked(answers, self.outputs)
            scored = score_detections([outputs], self.boxes, files)
            recorded = outputs[name]
        else:  # images fed one at a time at sizes of their own: decoded one by one
            each = [answers[i] for i in sorted(answers)]
            scored = score_detections(each, self.boxes, files)
            recorded = padded([np.asarray(answer[name]) for answer in each])
        details: dict[str, Any] = {"detections": scored.details}
        if scored.undefined:
            details[DETAILS_KEY] = scored.undefined
        return Scored(scored.metrics, recorded, name, details)
