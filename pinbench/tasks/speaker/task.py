"""Speaker verification: every sample file embedded by the model's one ``type: embedding``
output (after its steps: one vector per file), each trial scored by the cosine similarity of
its two files' embeddings, and the scores judged by ``metrics``."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.registry.ports import Output
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer
from pinbench.tasks.file_labels import FileLabelsTask, Reader
from pinbench.tasks.shapes import every_sample, stacked
from pinbench.tasks.speaker.declared import DATASETS, METRICS
from pinbench.tasks.speaker.metrics import DCF, verification_metrics
from pinbench.tasks.speaker.trials import Trials, read_trials


class NotASpeakerModel(UserError):
    """A speaker-verification run on a model without one embedding output."""

    def __init__(self, *, model: str, outputs: list[str]) -> None:
        super().__init__(
            f"model {model} declares {', '.join(outputs) or 'no outputs'}: a speaker-"
            "verification run needs exactly one output of type embedding (one vector per file "
            "after its steps)"
        )
        self.model = model
        self.outputs = outputs


class BadEmbeddings(UserError):
    """Embeddings a trial's cosine similarity cannot be computed from."""

    def __init__(self, *, output: str, reason: str) -> None:
        super().__init__(f"speaker verification, output {output!r}: {reason}")
        self.output = output
        self.reason = reason


class SpeakerVerification(FileLabelsTask):
    name = "speaker-verification"
    title = "speaker verification"
    datasets = DATASETS
    label_formats = DATASETS.formats
    by_file_name = DATASETS.by_file_name
    scores_inputs = True  # an embedding's pool step reads its mask input
    metrics = METRICS

    @staticmethod
    def reader() -> Reader:
        return read_trials

    def prepare(self, context: Context) -> Scorer | None:
        found = [o for o in context.model.outputs if o.type == "embedding"]
        if len(found) != 1:
            if not context.accuracy:
                return None
            raise NotASpeakerModel(
                model=context.model_ref,
                outputs=[f"{o.name} ({o.type})" for o in context.model.outputs],
            )
        count = context.sample_count
        if context.accuracy and count is not None and count < len(context.samples):
            raise UserError(
                f"a speaker-verification run needs every file embedded: sample_count {count} "
                f"< {len(context.samples)} samples (leave sample_count out)"
            )
        return SpeakerScorer(found[0], context)


class SpeakerScorer(Scorer):
    def __init__(self, output: Output, context: Context) -> None:
        self.output = output
        self.outputs = [str(output.name)]
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """The first answer is one vector per file after the output's steps."""
        first = {key: value[:batch] for key, value in arrays.items()}
        self._vectors(np.asarray(answer[self.outputs[0]]), first, batch)

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        trials: Trials = self.context.samples.truth
        every_sample("speaker-verification", answers, len(self.context.samples))
        name = self.outputs[0]
        _, outputs = stacked(answers, [name])
        vectors = self._vectors(outputs[name], arrays, len(self.context.samples))
        scores = cosine(vectors, trials, output=name)
        metrics = verification_metrics(scores, trials.target)
        details = {
            "speaker_verification": {
                "score": "cosine similarity of the two files' embeddings",
                "eer": "interpolated at fnr = fpr",
                "min_dcf": {"p_target": DCF.p_target, "c_miss": DCF.c_miss, "c_fa": DCF.c_fa},
            }
        }
        return Scored(metrics, vectors.astype(np.float32), name, details)

    def _vectors(self, raw: Array, arrays: dict[str, Array], batch: int) -> Array:
        from pinbench.worker.postprocess import postprocess

        vectors = postprocess(raw, list(self.output.steps), arrays)
        if vectors.ndim != 2 or vectors.shape[0] != batch:
            raise BadEmbeddings(
                output=self.outputs[0],
                reason=f"shape {list(raw.shape)} is {list(vectors.shape)} after its steps; "
                f"want one vector per file of the batch of {batch}, (N, D): pool frame states "
                "with a `pool` step",
            )
        return vectors


def cosine(vectors: Array, trials: Trials, *, output: str) -> npt.NDArray[np.float64]:
    """Each trial's cosine similarity of its files' embeddings (float64); a non-finite or
    all-zero embedding of a file in a trial is refused (its cosine is no number)."""
    x = np.asarray(vectors, dtype=np.float64)
    used = np.concatenate([trials.enrolment, trials.test])
    bad = used[~np.isfinite(x[used]).all(axis=1)]
    if bad.size:
        raise BadEmbeddings(
            output=output, reason=f"sample {int(bad[0])}'s embedding holds a non-finite value"
        )
    norms = np.linalg.norm(x, axis=1)
    zero = used[norms[used] == 0]
    if zero.size:
        raise BadEmbeddings(
            output=output,
            reason=f"sample {int(zero[0])}'s embedding is all zeros: its trials' cosine "
            "similarity is undefined",
        )
    unit = x / np.where(norms == 0, 1.0, norms)[:, None]
    found: npt.NDArray[np.float64] = np.sum(unit[trials.enrolment] * unit[trials.test], axis=1)
    return found
