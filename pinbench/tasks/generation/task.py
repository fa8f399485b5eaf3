"""Text generation (``task: text-generation``): a ``prompts-jsonl`` dataset, answers generated
token by token (``pinbench.worker.generation``), timed per token through LoadGen's token
API, scored against each prompt's reference by the host (``scores``; perplexity beside the
model, from the losses only it gives)."""

from __future__ import annotations

from typing import Any

from pinbench.errors import UserError
from pinbench.tasks.base import Context, Scored, Scorer, Task, TruthSource
from pinbench.tasks.generation.declared import DATASETS, METRICS
from pinbench.tasks.parity import Agreement, Recorded


class TextGeneration(Task):
    name = "text-generation"
    title = "text generation"
    datasets = DATASETS
    generates = DATASETS.generates
    label_formats = DATASETS.formats
    metrics = METRICS

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        from pinbench.worker.lines import LabelProblem
        from pinbench.worker.prompts import read_prompts

        data = source.dataset.data
        if data is None or data.format != "prompts-jsonl":
            raise LabelProblem(
                path="data",
                reason="a text-generation dataset's samples are a prompts file "
                "(data.format prompts-jsonl)",
            )
        prompts = read_prompts(source.paths[data.path], where=data.path)
        references = [p.reference for p in prompts]
        if all(r is None for r in references):
            return {}
        return {"truth": references}

    def score_answers(self, answers: list[str], references: list[str]) -> Scored:
        from pinbench.tasks.generation.scores import rouge_and_exact

        scored = rouge_and_exact(answers, references)
        scored.metrics["references_count"] = float(len(references))
        return scored

    def parity(self, reference: Recorded, other: Recorded) -> Agreement:
        """The answers' token ids, one answer per row (-1 past its end): they agree only
        when every answer is the same token for token (greedy decoding in two frameworks)."""
        import numpy as np

        from pinbench.tasks.parity import Figure, Incomparable, same_samples

        ours, theirs = reference.outputs, other.outputs
        same_samples(ours, theirs, run=other.run)
        if ours.ndim != 2 or theirs.ndim != 2:
            raise Incomparable(run=other.run, reason="its outputs are not token ids per answer")
        width = max(ours.shape[1], theirs.shape[1])
        a = np.pad(ours, ((0, 0), (0, width - ours.shape[1])), constant_values=-1)
        b = np.pad(theirs, ((0, 0), (0, width - theirs.shape[1])), constant_values=-1)
        differ = a != b
        answers = int(differ.any(axis=1).sum())
        figures = [
            Figure("answers_differing", "answers differing", float(answers), "count"),
            Figure("tokens_differing", "tokens differing", float(differ.sum()), "count"),
            Figure("samples", "samples", float(len(a)), "count"),
        ]
        if len(a):  # a quantised engine's difference, as the field states it
            agreeing = 1.0 - answers / len(a)
            figures.append(Figure("answers_agreeing", "answers agreeing", agreeing, "fraction"))
        theirs_ppl = getattr(other, "metrics", {}).get("perplexity")
        ours_ppl = getattr(reference, "metrics", {}).get("perplexity")
        if isinstance(theirs_ppl, float) and isinstance(ours_ppl, float):
            figures.append(Figure("perplexity", "perplexity", theirs_ppl, "value"))
            figures.append(Figure("reference_perplexity", "reference's perplexity", ours_ppl))
            change = theirs_ppl / ours_ppl - 1.0 if ours_ppl > 0 else float("nan")
            figures.append(Figure("perplexity_change", "perplexity change", change, "fraction"))
        return Agreement(tuple(figures), answers == 0, "every answer the same token ids")

    def prepare(self, context: Context) -> Scorer | None:
        raise UserError(
            "a text-generation dataset is answered by generating (pinbench.worker."
            "generation), not by one prediction per sample"
        )
