"""Sentence similarity: every sample embedded, Spearman's rho of the pairs' cosine
similarities against their gold scores (``pairs``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.ports import Output
from pinbench.tasks.base import Answer, Array, Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.parity import Agreement, Recorded
from pinbench.tasks.shapes import every_sample, stacked
from pinbench.tasks.similarity.declared import DATASETS, METRICS
from pinbench.tasks.similarity.pairs import SimilarityError, read_pairs, similarity_metrics


class NoEmbeddingOutput(UserError):
    def __init__(self, *, model: str, outputs: list[str]) -> None:
        super().__init__(
            f"model {model} declares {', '.join(outputs) or 'no outputs'}: a sentence-"
            "similarity run needs exactly one output of type embedding (with its pool and "
            "l2_normalize steps)"
        )
        self.model = model
        self.outputs = outputs


class SentenceSimilarity(Task):
    name = "sentence-similarity"
    title = "sentence similarity"
    scores_inputs = True  # the attention mask its pooling reads
    datasets = DATASETS
    label_formats = DATASETS.formats
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        path = source.dataset.labels.path
        assert path is not None  # check_labels
        return {"pairs": read_pairs(source.paths[path], where=path, count=source.count)}

    def prepare(self, context: Context) -> Scorer | None:
        found = [o for o in context.model.outputs if o.type == "embedding"]
        if len(found) != 1:
            raise NoEmbeddingOutput(
                model=context.model_ref,
                outputs=[f"{o.name} ({o.type})" for o in context.model.outputs],
            )
        count = context.sample_count
        if context.accuracy and count is not None and count < len(context.samples):
            raise UserError(
                f"a sentence-similarity run needs every sample embedded: sample_count {count} "
                f"< {len(context.samples)} samples (leave sample_count out)"
            )
        return EmbeddingScorer(found[0], context)

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """Each sample's two embeddings' cosine similarity, and how far Spearman's rho moved
        (``parity.embedding_parity``)."""
        from pinbench.tasks.similarity.parity import embedding_parity

        return embedding_parity(reference, other)


class EmbeddingScorer(Scorer):
    def __init__(self, output: Output, context: Context) -> None:
        self.output = output
        self.outputs = [str(output.name)]
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        """The first answer's embedding output, after its steps (over the first batch's
        inputs), is one vector per sample, ``(N, D)``."""
        from pinbench.worker.postprocess import postprocess

        name = self.outputs[0]
        raw = np.asarray(answer[name])
        first = {key: value[:batch] for key, value in arrays.items()}
        vectors = postprocess(raw, list(self.output.steps), first)
        if vectors.ndim != 2 or vectors.shape[0] != batch:
            raise SimilarityError(
                reason=f"the embedding output {name!r} of shape {list(raw.shape)} is "
                f"{list(vectors.shape)} after its steps; want one vector per sample of the "
                f"batch of {batch}, (N, D): pool token states with a `pool` step"
            )

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        """Every sample's embedding (the output's steps: pool over the mask input, normalize),
        then Spearman's rho of the pairs' cosine similarities against the gold scores."""
        from pinbench.worker.postprocess import postprocess

        samples = self.context.samples
        assert samples.pairs is not None
        every_sample("sentence-similarity", answers, len(samples))
        name = self.outputs[0]
        _, outputs = stacked(answers, [name])
        embeddings = postprocess(outputs[name], list(self.output.steps), arrays)
        metrics = similarity_metrics(embeddings.astype(np.float64), samples.pairs)
        return Scored(metrics, embeddings, name)
