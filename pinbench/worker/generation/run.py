"""One text-generation run: prompts tokenized before anything is timed, a warm-up, LoadGen's
token scenario, then (accuracy mode) the answers' texts returned for the host to score
(``evaluator.scoring.score_texts``) and the references' perplexity computed."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.names import Kind
from pinbench.registry.output_steps import check_output_steps
from pinbench.worker.answers import as_answer
from pinbench.worker.datasets import DatasetError, load_samples
from pinbench.worker.generation.decoder import First, Generator
from pinbench.worker.generation.scenario import run_token_scenario
from pinbench.worker.job import Evidence, Job, Say, files_of, model_files, truth_withheld

if TYPE_CHECKING:
    from pinbench.registry.generation import GenerationSpec
    from pinbench.worker.generation.torch_generator import TorchGenerator

WARMUP_MIN_NS = 500_000_000
WARMUP_MAX_CALLS = 50


def generate_run(job: Job, evidence: Evidence, say: Say) -> None:
    body = job.lock.body
    spec = body.request.generation
    assert spec is not None and body.model is not None and body.dataset is not None
    model_art = files_of(job.lock, Kind.MODEL)
    data_art = files_of(job.lock, Kind.DATASET)
    if not any(o.type == "generation" for o in body.model.outputs):
        raise UserError(
            f"model {model_art.ref} declares no output of type generation: a text-generation "
            "run needs a causal language model (`outputs: [{name: logits, type: generation}]`)"
        )
    check_output_steps(body.model.outputs)  # as publish does: a manifest stored before it
    scenario = body.scenario
    accuracy = scenario.mode == "accuracy"
    withheld = truth_withheld(job.lock)  # a speech dataset's transcripts: the host scores
    samples = load_samples(body.dataset, data_art, job.data_paths, truth=not withheld)
    speech = samples.texts is None  # a speech-recognition dataset's audio files
    names = [f.path for f in samples.files or []] if speech else samples.texts
    assert names is not None
    references: list[str | None] = samples.truth or [None] * len(names)
    count = min(len(names), scenario.sample_count or len(names))
    if speech and body.batch_size != 1:
        raise UserError("speech-to-text answers one sample at a time: batch_size 1")
    if not speech and (spec.language is not None or spec.task is not None):
        raise UserError(
            "generation.language and generation.task are a Whisper model's prompt: they go "
            "with a speech-recognition dataset"
        )
    if accuracy and not speech and any(r is None for r in references[:count]):
        missing = next(i for i, r in enumerate(references[:count]) if r is None)
        raise DatasetError(  # the host refuses it too; perplexity is computed from them here
            dataset=f"{body.dataset.name}@{body.dataset.version}",
            reason=f"an accuracy run scores every answer against its reference; prompt "
            f"{missing} has none",
        )
    generator = _generator(body.environment.framework if body.environment else "")
    say(
        "loading the model and "
        + ("computing the audio's features" if speech else "tokenizing the prompts")
        + " (outside any timed region)"
    )
    try:
        if job.memory is not None:
            job.memory.model_loading()
        generator.open(model_files(job), body.threads)
        decoder_prompt: tuple[int | None, ...] = ()
        if speech:
            decoder_prompt = _speech_prompt(generator, spec)
            features = _features(generator, samples.files or [], count, job)
            answer = _speech_answers(generator, features, spec)
            prompts: list[list[int]] = [[0]] * count  # one place per sample: the features
        else:
            prompts = generator.encode_prompts(names[:count], spec, job.stop.check)
            answer = lambda index, first: generator.generate(prompts[index], spec, index, first)  # noqa: E731
        job.stop.check()
        batch = body.batch_size
        # an accuracy run's one query holds the prompts once: no batch is larger than them
        widest = min(batch, count) if accuracy else batch
        expected = _warm_up(generator, prompts, widest, spec, job, answer)
        say(
            f"running {scenario.name} ({scenario.mode}), token latencies, {count} prompts"
            + (f", {batch} at a time" if batch > 1 else "")
        )
        measurement = run_token_scenario(
            answer,
            count,
            scenario,
            spec,
            expected_latency_ns=expected,
            log_dir=job.log_dir,
            stop=job.stop,
            batch_size=batch,
            generate_batch=lambda indexes, first, done: generator.generate_batch(
                [prompts[i] for i in indexes], spec, indexes, first, done
            ),
        )
        evidence.metrics = measurement.summary()
        evidence.details["loadgen"] = measurement.loadgen
        evidence.latencies = measurement.latencies_ns
        evidence.tokens = np.stack([measurement.ttft_ns, measurement.tokens], axis=1)
        details: dict[str, Any] = {
            "tokenizer": f"tokenizers {version('tokenizers')}",
            "settings": {"max_new_tokens": spec.max_new_tokens, "sampling": spec.sampling},
        }
        if generator.applied:  # the generation config's, applied as generate applies them
            details["settings"]["generation_config"] = generator.applied
        if speech:
            details["features"] = f"WhisperFeatureExtractor, transformers {version('transformers')}"
            details["decoder_prompt"] = list(decoder_prompt)  # null: the language detected
        else:
            details["prompt_tokens_mean"] = float(np.mean([len(p) for p in prompts]))
        if measurement.batches:
            details["batches"] = measurement.batches
        if accuracy:
            job.stop.check()
            _score(
                job,
                generator,
                None if speech else prompts,
                names[:count],
                references[:count],
                measurement.answers,
                spec,
                evidence,
            )
        evidence.details.update(
            generation=details,
            batch_size=batch,
            threads=body.threads,
            scenario=scenario.name,
            mode=scenario.mode,
        )
    finally:
        generator.close()


def _generator(framework: str) -> Generator:
    """The generator of the lockfile's framework."""
    if framework == "transformers":
        from pinbench.worker.generation.torch_generator import TorchGenerator

        return TorchGenerator()
    if framework == "onnxruntime":
        from pinbench.worker.generation.ort_generator import OrtGenerator

        return OrtGenerator()
    if framework == "onnxruntime-genai":
        from pinbench.worker.generation.ort_genai_generator import OrtGenAIGenerator

        return OrtGenAIGenerator()
    if framework == "ctranslate2":
        from pinbench.worker.generation.ct2_generator import CT2Generator

        return CT2Generator()
    if framework == "openvino-genai":
        from pinbench.worker.generation.ov_generator import OpenVINOGenerator

        return OpenVINOGenerator()
    if framework == "llama-cpp-python":
        from pinbench.worker.generation.llama_cpp_generator import LlamaCppGenerator

        return LlamaCppGenerator()
    raise UserError(
        "text generation runs on transformers, onnxruntime, onnxruntime-genai, ctranslate2, "
        f"openvino-genai or llama-cpp-python; the lockfile pins {framework}"
    )


def _warm_up(
    generator: Generator,
    prompts: list[list[int]],
    batch: int,
    spec: Any,
    job: Job,
    answer: Callable[[int, First], list[int]],
) -> int:
    """Untimed answers to the first prompt, or the first batch of them (at least two and half
    a second); the fastest one's whole time is LoadGen's expected latency (of a batch).
    The fastest, not the median: a generation's calls are few in half a second, and a
    SingleStream test of the tiny LLaMA was planned from a median about ten times its
    queries' time (64 queries planned, done before the minimum duration: INVALID, on a busy
    machine, 2026-12-01; whether its first calls were cold or the machine busy through them
    was not found). A test planned for a faster model only plans queries LoadGen never
    issues (an Offline one runs longer); one planned for a slower model ends too soon."""
    rows = [prompts[i % len(prompts)] for i in range(batch)]
    times: list[int] = []
    start = time.perf_counter_ns()
    while not job.stop.is_set() and (
        len(times) < 2
        or (time.perf_counter_ns() - start < WARMUP_MIN_NS and len(times) < WARMUP_MAX_CALLS)
    ):
        t0 = time.perf_counter_ns()
        if batch == 1:
            answer(0, _nothing)
        else:
            generator.generate_batch(rows, spec, list(range(batch)), _nothing, _nothing)
        times.append(time.perf_counter_ns() - t0)
    job.stop.check()
    return min(times)


def _nothing(*_: object) -> None:
    pass


def _speech_generator(generator: Generator) -> TorchGenerator:
    from pinbench.worker.generation.torch_generator import TorchGenerator

    if not isinstance(generator, TorchGenerator):
        raise UserError(
            "a speech-recognition dataset is answered by a Whisper folder on transformers; the "
            "lockfile's framework generates from text prompts alone"
        )
    folder = generator.folder
    if not folder.speech or folder.processor is None:
        raise UserError(
            f"a speech-recognition dataset is answered by a speech encoder-decoder (Whisper's "
            f"*ForConditionalGeneration); {folder.architecture} reads text"
        )
    return generator


def _speech_prompt(generator: Generator, spec: GenerationSpec) -> tuple[int | None, ...]:
    """Whisper's decoder prompt for the request's language and task (decision 260)."""
    return _speech_generator(generator).speech_prompt(spec)


def _features(generator: Generator, files: list[Any], count: int, job: Job) -> list[Any]:
    """The audio samples' log-mel features (``speech``), before anything is timed."""
    from pinbench.worker.generation.speech import audio_features, extractor_of

    speech = _speech_generator(generator)
    folder = speech.folder
    assert folder.processor is not None
    extractor = extractor_of(speech.files[folder.processor], folder.processor)
    return audio_features(files[:count], extractor, job.stop.check)


def _speech_answers(
    generator: Generator, features: list[Any], spec: Any
) -> Callable[[int, First], list[int]]:
    from pinbench.worker.generation.torch_generator import TorchGenerator

    assert isinstance(generator, TorchGenerator)
    return lambda index, first: generator.generate_features(features[index], spec, index, first)


def _score(
    job: Job,
    generator: Generator,
    prompts: list[list[int]] | None,
    prompt_texts: list[str],
    references: list[str | None],
    answers: dict[int, list[int]],
    spec: Any,
    evidence: Evidence,
) -> None:
    """An accuracy run's answers as the host scores them (their texts: ``Evidence.answers``)
    and recorded (their token ids, one row each, -1 past an answer's end), and the references'
    perplexity given their prompts: the losses only the model gives (speech scores none)."""
    from pinbench.tasks.generation.scores import model_metrics

    order = sorted(answers)
    if order != list(range(len(prompt_texts))):
        raise UserError(
            f"an accuracy run answers every prompt once: {len(order)} of {len(prompt_texts)} "
            "answered"
        )
    evidence.answers = {i: as_answer(generator.answer_text(answers[i], spec)) for i in order}
    if prompts is not None:
        refs = [r for r in references if r is not None]
        pairs = generator.reference_ids(prompt_texts, refs, spec, job.stop.check)
        evidence.metrics.update(model_metrics([generator.reference_loss(*p) for p in pairs]))
    width = max(len(answers[i]) for i in order)
    ids = np.full((len(order), width), -1, dtype=np.int64)
    for row, i in enumerate(order):
        ids[row, : len(answers[i])] = answers[i]
    evidence.outputs = ids
    evidence.details["outputs_name"] = "token_ids"
