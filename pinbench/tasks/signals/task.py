"""The signal tasks: each sample's answer a signal of its reference's shape, scored against it
(``metrics``). The reference signals are one ``.npy`` array among the dataset's files, a row per
sample, never unpickled; the model's one ``type: tensor`` output is the answer."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from pinbench.errors import UserError
from pinbench.tasks.audio_to_audio import declared as audio
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.image_to_image import declared as image


class NotASignal(UserError):
    """An answer, a reference or a model that cannot be scored as a signal: says which and why."""

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason


class SignalTask(Task):
    kind: ClassVar[str]
    """``audio`` or ``image``."""

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        path = source.dataset.labels.path
        assert path is not None  # the dataset's checks: a reference format needs its path
        labels = source.dataset.labels
        try:
            references = np.load(source.paths[path], allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise NotASignal(
                what=f"reference file {path}", reason=f"not an .npy array: {exc}"
            ) from None
        if references.dtype.kind not in "fiu":
            raise NotASignal(what=f"reference file {path}", reason=f"of dtype {references.dtype}")
        if references.ndim < 2 or references.shape[0] != source.count:
            raise NotASignal(
                what=f"reference file {path}",
                reason=f"shape {references.shape}: want one reference per sample, "
                f"({source.count}, ...)",
            )
        self.check_shape(references.shape[1:], labels.channel_axis, f"reference file {path}")
        values = references.astype(np.float64)
        if not np.isfinite(values).all():
            raise NotASignal(what=f"reference file {path}", reason="holds a NaN or an infinity")
        return {"truth": References(values, labels.data_range, labels.channel_axis)}

    def check_shape(self, shape: tuple[int, ...], channel_axis: int | None, what: str) -> None:
        """A sample's signal shape this task scores (``NotASignal`` otherwise)."""

    @staticmethod
    @abstractmethod
    def measure(answered: Array, reference: Array, truth: References) -> dict[str, float]:
        """The task's metrics of the answers against their references."""

    def prepare(self, context: Context) -> Scorer | None:
        truth = context.samples.truth
        if not context.accuracy or not isinstance(truth, References):
            return None
        found = [str(o.name) for o in context.model.outputs if o.type == "tensor"]
        if len(found) != 1:
            raise NotASignal(
                what=f"model {context.model_ref}",
                reason=f"it declares {len(found)} outputs of type tensor; a {self.name} run "
                "scores one, the signal it answers",
            )
        count = len(context.samples)
        if context.sample_count is not None and context.sample_count < count:
            raise NotASignal(
                what=f"a {self.name} accuracy run",
                reason=f"sample_count {context.sample_count} of a dataset of {count}: every "
                "sample is scored against its reference; leave sample_count out",
            )
        return SignalScorer(self, found[0], truth, context)


class References:
    """A dataset's reference signals, ``(N, ...)`` in float64, and how they are read."""

    def __init__(self, values: Array, data_range: float | None, channel_axis: int | None):
        self.values = values
        self.data_range = data_range
        self.channel_axis = channel_axis


class SignalScorer(Scorer):
    def __init__(self, task: SignalTask, output: str, truth: References, context: Context):
        self.task = task
        self.outputs = [output]
        self.truth = truth
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """Each sample's answer has its reference's shape, and is a finite float signal."""
        got = np.asarray(answer[self.outputs[0]])
        want = (batch, *self.truth.values.shape[1:])
        if got.shape != want:
            raise NotASignal(
                what=f"output {self.outputs[0]!r}",
                reason=f"shape {got.shape} for a batch of {batch}: want {want}, each sample's "
                "reference signal's shape",
            )
        if not np.issubdtype(got.dtype, np.floating):
            raise NotASignal(what=f"output {self.outputs[0]!r}", reason=f"of dtype {got.dtype}")

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        from pinbench.tasks.shapes import every_sample, stacked

        every_sample(self.task.name, answers, len(self.context.samples))
        name = self.outputs[0]
        _, out = stacked(answers, [name])
        answered = out[name]
        if not np.issubdtype(answered.dtype, np.floating):  # every answer, not the first alone
            raise NotASignal(what=f"output {name!r}", reason=f"answers of dtype {answered.dtype}")
        if not np.isfinite(answered).all():
            raise NotASignal(what=f"output {name!r}", reason="an answer holds a NaN or infinity")
        reference = self.truth.values[: len(answered)]
        metrics = self.task.measure(answered, reference, self.truth)
        metrics["accuracy_samples_count"] = float(len(answered))
        details = {self.task.name: {"samples": len(answered), "shape": list(reference.shape[1:])}}
        return Scored(metrics, answered, name, details)


class AudioToAudio(SignalTask):
    name = "audio-to-audio"
    title = "audio to audio"
    kind = "audio"
    datasets = audio.DATASETS
    label_formats = audio.DATASETS.formats
    metrics = audio.METRICS

    def check_shape(self, shape: tuple[int, ...], channel_axis: int | None, what: str) -> None:
        if len(shape) not in (1, 2) or shape[-1] < 1:
            raise NotASignal(
                what=what, reason=f"each sample {shape}: want (T,) or (C, T), time last"
            )

    @staticmethod
    def measure(answered: Array, reference: Array, truth: References) -> dict[str, float]:
        from pinbench.tasks.signals.metrics import si_sdr, snr

        preds = answered.astype(np.float64)
        return {
            "si_sdr_db": float(si_sdr(preds, reference, answered.dtype).mean()),
            "snr_db": float(snr(preds, reference, answered.dtype).mean()),
        }


class ImageToImage(SignalTask):
    name = "image-to-image"
    title = "image to image"
    kind = "image"
    datasets = image.DATASETS
    label_formats = image.DATASETS.formats
    metrics = image.METRICS

    def check_shape(self, shape: tuple[int, ...], channel_axis: int | None, what: str) -> None:
        from pinbench.tasks.signals.metrics import WINDOW

        want = 2 if channel_axis is None else 3
        if len(shape) != want:
            layout = {None: "(H, W)", 0: "(C, H, W)", -1: "(H, W, C)"}[channel_axis]
            raise NotASignal(
                what=what,
                reason=f"each sample {shape}: want {layout} (labels.channel_axis {channel_axis})",
            )
        plane = shape[1:] if channel_axis == 0 else shape[:2]
        if min(plane) < WINDOW:
            raise NotASignal(
                what=what,
                reason=f"each image is {plane[0]} x {plane[1]}: SSIM's {WINDOW} x {WINDOW} "
                "window needs at least that",
            )

    @staticmethod
    def measure(answered: Array, reference: Array, truth: References) -> dict[str, float]:
        from pinbench.tasks.signals.metrics import psnr, ssim

        assert truth.data_range is not None  # the manifest's check: image references need it
        preds = answered.astype(np.float64)
        return {
            "psnr_db": float(psnr(preds, reference, truth.data_range).mean()),
            "ssim": float(ssim(preds, reference, truth.data_range, truth.channel_axis).mean()),
        }
