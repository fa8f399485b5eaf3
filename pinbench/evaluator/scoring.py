"""Scoring apart from the system under test (MLPerf's accuracy script; issue 63, invariant 15).

The evaluator that runs the model (and any code a user allowed beside it) is handed the
dataset's files but for its ground truth (``job.truth_paths``) and returns, for an accuracy
run, its outputs for each sample (``Evidence.answers``). The host, which never ran that code,
reads the ground truth from its own verified store (``load_truth``, before the run: a dataset
without truth is refused before anything runs), checks and scores the answers with the task's
scorer (``score_apart``), and recomputes the framework-call figures from the raw latencies.
Whatever the evaluator said of a task's metrics, or of those figures, is not recorded.

A generating run (``job.texts_scored_apart``: text generation, speech recognition; issue 64)
returns each answer's text; the host scores the texts against the references it reads, with
the task's reference library (rouge-score, jiwer: ``score_texts``). Its figures, and the
references' perplexity (from losses only the model gives: ``Metric.by_model``), are the
evaluator's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from pinbench.artifacts.scratch import scratch_directory
from pinbench.errors import UserError
from pinbench.evaluator.dropped import name_dropped
from pinbench.evaluator.runners.consented import code_digests
from pinbench.evaluator.runners.store_files import model_folder, stage_folders, store_paths
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.tasks.base import Context
from pinbench.tasks.registry import task, tasks
from pinbench.worker.answers import AnswersUnreadable, text_of
from pinbench.worker.datasets import DatasetError, Samples, load_samples
from pinbench.worker.job import Evidence, files_of, scored_apart, texts_scored_apart
from pinbench.worker.latency_metrics import loadgen_figures, series
from pinbench.worker.results import HOST_ONLY
from pinbench.worker.undefined import UndefinedMetric
from pinbench.workspace import Workspace

FRAMEWORK = "framework_latency"
"""The figures of the raw latencies the host recomputes (``latency_metrics.series``)."""
SHOWN = 100
SHOWN_CHARS = 2000
"""The most of each kept answer and reference (``details.generation.samples``): 100 answers of
up to a MiB each would be 100 MiB in a run's row; the scores count every character."""


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


"""A generating run's answers kept in its details (``details.generation.samples``)."""
TEXT_DETAILS = ("samples", "rouge_variant", "scorer", "stemmer")
"""A generating run's details (``details.generation``) the host writes as it scores."""


class AnswersRefused(UserError):
    """The answers an evaluator returned for an accuracy run cannot be scored."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"the evaluator's answers were refused: {reason}")
        self.reason = reason


def load_truth(ws: Workspace, lock: Lockfile) -> Samples | None:
    """The dataset's samples with their ground truth, read by the host from the verified
    store, for an accuracy run scored apart, or whose texts are (none for another run);
    refused when the dataset has no truth to score against."""
    body = lock.body
    if not (scored_apart(lock) or texts_scored_apart(lock)) or body.scenario.mode != "accuracy":
        return None
    assert body.dataset is not None
    paths = store_paths(ws, lock, Kind.DATASET, truth=True)
    samples = load_samples(body.dataset, files_of(lock, Kind.DATASET), paths)
    if not samples.has_truth:
        raise DatasetError(
            dataset=f"{body.dataset.name}@{body.dataset.version}",
            reason="an accuracy run needs labels and this dataset has none",
        )
    return samples


def judge(
    ws: Workspace, lock: Lockfile, evidence: Evidence, truth: Samples | None, *, code_ran: bool
) -> None:
    """What the host does with what an evaluator returned, before it is recorded: it names the
    code that ran beside the model from the lockfile (``details.code_sha256``), recomputes the
    framework figures, and scores an accuracy run's answers (or answer texts) against
    ``truth`` (``load_truth``); the answers themselves are never recorded."""
    evidence.details.pop("code_sha256", None)
    if code_ran:
        evidence.details["code_sha256"] = code_digests(lock)
    recompute(lock, evidence)
    _unlogged(lock, evidence)
    if texts_scored_apart(lock):
        score_texts(lock, evidence, truth)
    elif truth is not None:
        score_apart(ws, lock, evidence, truth)
    evidence.answers = evidence.scored_inputs = None


def _unlogged(lock: Lockfile, evidence: Evidence) -> None:
    """A performance run's LoadGen throughputs that its log gave no number of, each named
    undefined with its reason (``latency_metrics.unlogged``; decision 165's details key)."""
    from pinbench.worker.latency_metrics import unlogged
    from pinbench.worker.undefined import DETAILS_KEY

    body, loadgen = lock.body, evidence.details.get("loadgen")
    if body.scenario.mode != "performance" or not isinstance(loadgen, dict):
        return
    tokens = body.request.generation is not None
    found = unlogged(loadgen, body.scenario.name, tokens=tokens)
    for name in found:
        evidence.metrics.pop(name, None)
    if found:
        kept = evidence.details.get(DETAILS_KEY)
        evidence.details[DETAILS_KEY] = {**(kept if isinstance(kept, dict) else {}), **found}


EVALUATOR_SAYS = (
    "framework_",
    "chain_latency_",
    "stage_",
    "postprocess_latency_",
    "transform_",
)
EVALUATOR_NAMES = frozenset(
    {
        "machine_others_cpu_ratio",
        "machine_steal_ratio",
        "energy_j",
        "energy_per_inference_j",
        "contended_bool",
        "peak_rss_bytes",
        "peak_gpu_bytes",
        "model_added_rss_bytes",
        "samples_count",
        "tokens_count",
        "tokens_per_sample_mean_count",
    }
)
"""What the host records of an evaluator's own metrics for a run it scores: its measurements
of itself (timings of its calls, memory, the machine, energy) by these prefixes and names.
Everything else is the host's (a task's metrics) or re-derived by it (LoadGen's figures from
the kept log, the framework figures from the raw latencies); any other key is dropped, so an
evaluator cannot add a figure under a name a reader takes for the field's, and is named in
the run's ``details.dropped_metrics`` (``machine_top1`` was kept by a ``machine_`` prefix)."""


def recompute(lock: Lockfile, evidence: Evidence) -> None:
    """For a run the host scores (``scored_apart``, ``texts_scored_apart``): only the
    evaluator's own measurements (``EVALUATOR_SAYS``; a generating run's figures only its
    model gives are kept by ``score_texts``), LoadGen's figures re-derived from the LoadGen log
    the run keeps (``details.loadgen``; none when it kept none), and the framework figures and
    their count from the raw latencies the host keeps."""
    if not (scored_apart(lock) or texts_scored_apart(lock)):
        return
    body = lock.body
    assert body.dataset is not None
    kind = task(body.dataset.task)
    deleted = []
    for key in list(evidence.metrics):
        own = key in EVALUATOR_NAMES or key.startswith((*EVALUATOR_SAYS, *HOST_ONLY))
        metric = kind.metric(key)
        model_only = metric is not None and metric.by_model and texts_scored_apart(lock)
        if not (own and metric is None) and not model_only:
            del evidence.metrics[key]  # the host scores, re-derives, or does not record
            deleted.append(key)
    try:
        _rederive(lock, evidence)
        if not _samples_counted(lock, evidence):
            del evidence.metrics[SAMPLES]
            deleted.append(SAMPLES)
    finally:
        name_dropped(
            evidence.details, [k for k in deleted if k not in evidence.metrics and not derived(k)]
        )


SAMPLES = "samples_count"


def _samples_counted(lock: Lockfile, evidence: Evidence) -> bool:
    """Whether the samples the evaluator says it answered are as many as its calls could have
    answered (issue 71: ``samples_count`` 99,999 was recorded as given): at least one per call,
    at most a batch per call. A chain's stages call as their wiring says: not checked."""
    count = evidence.metrics.get(SAMPLES)
    if count is None or evidence.latencies is None or lock.body.chain is not None:
        return True
    calls = int(evidence.latencies.size)
    return calls <= count <= calls * max(1, lock.body.batch_size)


LOADGEN_PREFIXES = ("latency_", "throughput_", "queries_", "ttft_", "tpot_", "target_", "loadgen_")
"""The names of LoadGen's figures, which the host re-derives from the kept log."""


def derived(name: str) -> bool:
    """A figure the host re-derives from LoadGen's log (``latency_metrics.loadgen_figures``):
    not news when an evaluator sent it too."""
    return name.startswith(LOADGEN_PREFIXES)


def _rederive(lock: Lockfile, evidence: Evidence) -> None:
    body = lock.body
    loadgen = evidence.details.get("loadgen")
    if isinstance(loadgen, dict):  # the figures as the kept log says, not as the metrics say
        scenario = body.scenario
        evidence.metrics.update(
            loadgen_figures(loadgen, scenario.name, scenario.percentile / 100.0)
        )
    if evidence.latencies is None:
        return
    for key in [k for k in evidence.metrics if k.startswith(FRAMEWORK + "_")]:
        del evidence.metrics[key]
    evidence.metrics.update(series(evidence.latencies, FRAMEWORK))
    evidence.metrics["framework_calls_count"] = float(evidence.latencies.size)


def score_apart(ws: Workspace, lock: Lockfile, evidence: Evidence, samples: Samples) -> None:
    """Score an accuracy run's answers (``Evidence.answers``) against ``samples``' ground
    truth (``load_truth``), as the task's scorer does: the first answer checked as a run
    checks it before timing, then every one scored; the task's metrics, the recorded outputs
    and the task's details are the host's."""
    body = lock.body
    assert body.model is not None and body.dataset is not None
    kind = task(body.dataset.task)
    evidence.outputs = None
    evidence.details.pop("outputs_name", None)
    answers, arrays = evidence.answers, evidence.scored_inputs or {}
    evidence.answers = evidence.scored_inputs = None
    if answers is None:
        raise AnswersRefused(reason="an accuracy run must return its outputs for each sample")
    with scratch_directory(ws.store.tmp, "run") as scratch:
        ref, paths = _scored_model(ws, lock, scratch)
        scorer = kind.prepare(
            Context(body.model, ref, paths, body.dataset, samples, True, body.scenario.sample_count)
        )
        rows = scorer.rows() if scorer is not None else None
        rows = len(samples) if rows is None else rows  # a row per sample, unless the task says
        count = min(rows, body.scenario.sample_count or rows)
        from pinbench.registry.row_rules import may_differ

        ragged = frozenset(str(i.name) for i in body.model.inputs if may_differ(i))
        _check(answers, arrays, count, rows, kind.scores_inputs, ragged)
        if scorer is None:
            return
        missing = sorted({o for o in scorer.outputs for a in answers.values() if o not in a})
        if missing:
            raise AnswersRefused(
                reason=f"output {missing[0]!r}, which the task scores, is not in every answer"
            )
        first = min(answers)
        scorer.check(answers[first], {k: v[first : first + 1] for k, v in arrays.items()}, 1)
        scored = scorer.score(answers, arrays)
    undefined = sorted(k for k, v in scored.metrics.items() if not math.isfinite(v))
    if undefined:
        raise UndefinedMetric(metric=", ".join(undefined), reason="it came out NaN or infinite")
    evidence.metrics.update(scored.metrics)
    evidence.outputs = scored.outputs
    if scored.outputs_name is not None:
        evidence.details["outputs_name"] = scored.outputs_name
    evidence.details.update(scored.details)


def score_texts(lock: Lockfile, evidence: Evidence, samples: Samples | None) -> None:
    """A generating run (``texts_scored_apart``) as the host records it: no metric of any task
    the evaluator gave but its own task's that only the model gives (``Metric.by_model``, in an
    accuracy run), and in an accuracy run (``samples``: ``load_truth``'s) its answer texts
    scored against the references by the task (``Task.score_answers``), the first answers kept
    beside their prompt (or audio file) and reference, all three the host's."""
    body = lock.body
    assert body.dataset is not None
    kind = task(body.dataset.task)
    every = tasks()
    for key in list(evidence.metrics):
        ours = kind.metric(key)
        if ours is not None and ours.by_model and samples is not None:
            continue
        if any(other.metric(key) is not None for other in every):
            del evidence.metrics[key]
    generation = evidence.details.get("generation")
    if not isinstance(generation, dict):
        generation = evidence.details["generation"] = {}
    for key in TEXT_DETAILS:
        generation.pop(key, None)
    answers = evidence.answers
    evidence.answers = evidence.scored_inputs = None
    if samples is None:
        return
    if answers is None:
        raise AnswersRefused(
            reason="an accuracy run must return its answer's text for each sample (an image's "
            "evaluator from before the host scored texts returns none: `pinbench images build`)"
        )
    count = min(len(samples), body.scenario.sample_count or len(samples))
    _check(answers, {}, count, 0, False)
    texts: list[str] = []
    for i in range(count):
        try:
            texts.append(text_of(answers[i]))
        except AnswersUnreadable as exc:
            raise AnswersRefused(reason=f"sample {i}'s answer: {exc}") from None
    references = list(samples.truth[:count])
    if None in references:
        raise DatasetError(
            dataset=f"{body.dataset.name}@{body.dataset.version}",
            reason=f"an accuracy run scores every answer against its reference; sample "
            f"{references.index(None)} has none",
        )
    scored = kind.score_answers(texts, references)
    evidence.metrics.update(scored.metrics)
    generation.update(scored.details)
    speech = samples.texts is None
    names = [f.path for f in samples.files or []] if speech else samples.texts
    assert names is not None
    generation["samples"] = [
        {
            ("audio" if speech else "prompt"): names[i],
            "answer": _shown(texts[i]),
            "reference": _shown(ref),
        }
        for i, ref in enumerate(references[:SHOWN])
    ]


def _check(
    answers: dict[int, Any],
    arrays: dict[str, Any],
    count: int,
    rows: int,
    inputs: bool,
    ragged: frozenset[str] = frozenset(),
) -> None:
    """An answer for each of the ``count`` samples the scenario runs (0 to ``count - 1``:
    LoadGen's accuracy mode answers every one; the evaluator does not choose which are
    scored), each a dict of numeric arrays with a batch axis of one; the inputs a task scores
    with, numeric, one row for each of the dataset's ``rows`` samples (each its own array only
    for an input of ``ragged``: one whose samples keep sizes of their own)."""
    if set(answers) != set(range(count)):
        absent = sorted(set(range(count)) - set(answers))
        extra = sorted(set(answers) - set(range(count)))
        said = f"sample {absent[0]} is not answered" if absent else f"sample {extra[0]} is not run"
        raise AnswersRefused(
            reason=f"{said}: an accuracy run answers each of its {count} samples, no other"
        )
    for i, answer in answers.items():
        for name, value in answer.items():
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
                raise AnswersRefused(reason=f"sample {i}'s output {name!r} is not numeric")
            if value.ndim == 0 or value.shape[0] != 1:
                raise AnswersRefused(
                    reason=f"sample {i}'s output {name!r} has shape {list(value.shape)}: "
                    "its first axis must be the sample's"
                )
    for name, value in arrays.items() if inputs else ():
        apart = isinstance(value, np.ndarray) and value.dtype == object and name in ragged
        rows_of = value if apart else [value]
        if not all(
            isinstance(v, np.ndarray) and v.dtype.kind in "biuf" and v.ndim > 0 for v in rows_of
        ):  # one array of samples, or samples of sizes of their own (``answers``)
            raise AnswersRefused(reason=f"input {name!r} is not a numeric array of samples")
        if len(value) != rows:
            raise AnswersRefused(reason=f"input {name!r} has {len(value)} rows for {rows} samples")


def _scored_model(ws: Workspace, lock: Lockfile, scratch: Path) -> tuple[str, dict[str, Path]]:
    """The scored model's reference and its files placed in ``scratch`` (read, never run: a
    task may read class names from them): the model's, or a chain's last stage's."""
    chain = lock.body.chain
    if chain is None:
        return files_of(lock, Kind.MODEL).ref, model_folder(ws, lock, scratch / "model")
    last = chain.stages[-1]
    return lock.stage_artifact(last).ref, stage_folders(ws, lock, scratch / "stages")[last.name]
