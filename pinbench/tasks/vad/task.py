"""Voice-activity detection: a model streamed in chunks (``pinbench.worker.stream``) whose
``type: binary`` output gives each chunk's speech probability, scored frame by frame against
each sample's speech spans (``truth``, ``frames``, ``metrics``)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.input_kinds import sample_rate
from pinbench.registry.ports import Input, Output
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer
from pinbench.tasks.binary import probabilities
from pinbench.tasks.file_labels import FileLabelsTask, Reader
from pinbench.tasks.vad.declared import DATASETS, METRICS
from pinbench.tasks.vad.frames import covered_seconds, past_end, speech_frames
from pinbench.tasks.vad.metrics import activity_metrics
from pinbench.tasks.vad.truth import Span, read_segments


class NotAnActivityModel(UserError):
    """A voice-activity accuracy run on a model that cannot give per-frame speech
    probabilities in seconds: says what its manifest lacks."""

    def __init__(self, *, model: str, reason: str) -> None:
        super().__init__(f"a voice-activity run cannot score model {model}: {reason}")
        self.model = model
        self.reason = reason


class BadActivityOutput(UserError):
    """An answer that is not one speech probability per frame."""

    def __init__(self, *, output: str, reason: str) -> None:
        super().__init__(f"output {output!r}: {reason}")
        self.output = output
        self.reason = reason


class SpanPastEnd(UserError):
    """A speech span ending after its sample's last frame: labels of another file, or of
    another rate."""

    def __init__(self, *, sample: str, end: float, seconds: float) -> None:
        super().__init__(
            f"the speech span of sample {sample} ending at {end} s is past its end: its frames "
            f"cover {seconds:.6g} s (are the labels this file's?)"
        )
        self.sample = sample
        self.end = end
        self.seconds = seconds


class VoiceActivity(FileLabelsTask):
    name = "voice-activity"
    title = "voice activity"
    scores_inputs = True  # each sample's frame count
    datasets = DATASETS
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    metrics = METRICS

    @staticmethod
    def reader() -> Reader:
        return read_segments

    def prepare(self, context: Context) -> Scorer | None:
        model = context.model_ref
        found = [o for o in context.model.outputs if o.type == "binary"]
        streamed = next((i for i in context.model.inputs if i.stream is not None), None)
        rate = sample_rate(streamed) if streamed is not None else None
        problem = None
        if len(found) != 1:
            problem = (
                f"it declares {len(found)} outputs of `type: binary`; want one, the speech "
                "probability of each chunk"
            )
        elif streamed is None:
            problem = (
                "no input is streamed: a frame is a chunk of a streamed input (declare "
                "`stream: {chunk: ...}` on the input the audio is cut from)"
            )
        elif rate is None:
            problem = (
                f"the streamed input {streamed.name!r} declares no sample rate, so its frames "
                "have no time: decode the audio with `decode_audio: {rate: ...}` or resample it"
            )
        if problem is not None:
            if context.accuracy:
                raise NotAnActivityModel(model=model, reason=problem)
            return None
        assert streamed is not None and rate is not None
        return ActivityScorer(found[0], streamed, rate, context)


class ActivityScorer(Scorer):
    def __init__(self, output: Output, streamed: Input, rate: int, context: Context) -> None:
        assert output.binary is not None and streamed.stream is not None
        self.output = output
        self.outputs = [str(output.name)]
        self.streamed = streamed
        self.chunk = streamed.stream.chunk
        self.rate = rate
        self.threshold = output.binary.threshold
        self.logit = output.binary.logit
        self.context = context
        self._own: Array | None = None

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """The first batch's answer holds one probability in [0, 1] per frame of each
        sample, and (accuracy) its samples' spans end within their frames."""
        counts = self._counts(arrays)
        probabilities = self._per_frame(answer, batch, int(counts.max()))
        for row, count in enumerate(counts):
            self._probabilities(probabilities[row, :count])
        if self.context.accuracy and self.context.samples.truth is not None:  # the host's
            for index, count in enumerate(counts):
                self._speech(index, int(count))

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        counts = self._counts(arrays)
        indexes = sorted(answers)
        scored, truth, kinds = [], [], []
        for index in indexes:
            count = int(counts[index])
            frames = self._per_frame(answers[index], 1, None)[0, :count]
            scored.append(self._probabilities(frames))
            truth.append(self._speech(index, count))
            kinds.append(frames.dtype)
        probability = np.concatenate(scored)
        metrics = activity_metrics(
            probability,
            np.concatenate(truth),
            self.threshold,
            dtype=np.result_type(*kinds),  # compared in the output's precision
        )
        details = {
            "voice_activity": {
                "frame_samples": self.chunk,
                "rate": self.rate,
                "threshold": self.threshold,
                "samples": len(indexes),
            }
        }
        return Scored(metrics, probability.astype(np.float32), self.outputs[0], details)

    def _counts(self, arrays: dict[str, Array]) -> Array:
        """Each sample's frame count: the host's own, from its decoding of the same files
        through the input's declared steps (issue 71: frame offsets taken from the evaluator
        scored 6,144 frames for 232); the evaluator's offsets must agree with it. A model whose
        ``preprocess`` code makes the streamed input leaves the host no steps to follow: its
        evaluator's offsets are taken."""
        from pinbench.worker.stream import frame_counts

        given = frame_counts(arrays, self.context.model.inputs)
        own = self._own_counts()
        if own is None:
            return given
        if len(given) > len(own):
            raise BadActivityOutput(
                output=str(self.streamed.name),
                reason=f"frame offsets for {len(given)} samples, of a dataset of {len(own)}",
            )
        differs = np.flatnonzero(given != own[: len(given)])
        if differs.size:
            i = int(differs[0])
            raise BadActivityOutput(
                output=str(self.streamed.name),
                reason=f"its frame offsets are not the host's: sample {i} has {int(given[i])} "
                f"frames by the evaluator, {int(own[i])} by the host's decoding of its file",
            )
        return own[: len(given)]

    def _own_counts(self) -> Array | None:
        """The frame count of every sample by the host's own decoding (made once); None for a
        model whose ``preprocess`` code makes its inputs, or a scorer handed no samples (a test
        of the scorer alone; a run's host always holds its dataset's files)."""
        from pinbench.worker.stop import Stop
        from pinbench.worker.stream import decoded_samples

        samples = self.context.samples
        if self.context.model.preprocess is not None or (
            samples.files is None and samples.data is None  # a scorer given no samples to read
        ):
            return None
        if self._own is None:
            rows = [
                a.shape[0] for _, a in decoded_samples(self.streamed, self.context.samples, Stop())
            ]
            self._own = -(-np.asarray(rows, dtype=np.int64) // self.chunk)
        return self._own

    def _per_frame(self, answer: Answer, batch: int, frames: int | None) -> Array:
        """The answer as ``(batch, frames)``: a streamed chunk's output is one value per
        sample, ``(B, 1)`` or ``(B,)``, stacked to ``(B, frames, 1)`` or ``(B, frames)``."""
        name = self.outputs[0]
        value = np.asarray(answer[name])
        shape = list(value.shape)
        if value.ndim == 3 and shape[2] == 1:
            value = value[:, :, 0]
        if value.ndim != 2 or value.shape[0] != batch or (frames and value.shape[1] < frames):
            raise BadActivityOutput(
                output=name,
                reason=f"a batch of {batch} samples streamed"
                + (f" in up to {frames} chunks" if frames else "")
                + f" gave shape {shape}: each chunk's answer must be one speech probability "
                "per sample, (N, 1) or (N,)",
            )
        return value

    def _probabilities(self, frames: Array) -> npt.NDArray[np.float64]:
        """Each frame's speech probability: the value, or its sigmoid (``form: logit``)."""
        return probabilities(frames, logit=self.logit, output=self.outputs[0])

    def _speech(self, index: int, count: int) -> npt.NDArray[np.bool_]:
        spans: list[Span] = self.context.samples.truth[index]
        for _, end in spans:
            if past_end(end, count, self.chunk, self.rate):
                files = self.context.samples.files
                sample = files[index].path if files is not None else f"#{index}"
                seconds = float(covered_seconds(count, self.chunk, self.rate))
                raise SpanPastEnd(sample=sample, end=end, seconds=seconds)
        return speech_frames(spans, count, self.chunk, self.rate)
