"""One evaluation, wherever it runs: open the model, preprocess, warm up, run the scenario.

Needs no database and no blob store, only the lockfile and the paths of its (already verified)
files, so the same code runs in this interpreter, in a hash-pinned virtual environment and in a
container (``pinbench.worker.main``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

from pinbench.energy.meter import EnergyMeter
from pinbench.energy.meter import record as record_energy
from pinbench.errors import UserError
from pinbench.processing.runs import open_processing
from pinbench.registry.input_kinds import from_samples
from pinbench.registry.names import Kind
from pinbench.registry.output_steps import check_output_steps
from pinbench.tasks.base import Context
from pinbench.tasks.registry import task
from pinbench.trace.recorder import Recorder
from pinbench.worker.datasets import DatasetError, load_samples
from pinbench.worker.evaluation_steps import check_first, feed_details, keep_answers, warm_up
from pinbench.worker.feed import prepare
from pinbench.worker.job import Evidence, Job, Say, files_of, model_files, truth_withheld
from pinbench.worker.output_axes import batch_axes, perms, reorder
from pinbench.worker.predictors import predictor_class
from pinbench.worker.predictors.base import Predictor
from pinbench.worker.predictors.config import PredictorOptions
from pinbench.worker.scenarios import run_scenario
from pinbench.worker.undefined import UndefinedMetric
from pinbench.worker.views import wrap


class FrameworkMismatch(UserError):
    def __init__(self, *, framework: str, pinned: str, seen: str) -> None:
        super().__init__(
            f"this environment has {framework} {seen}, the lockfile pins {framework} {pinned}: "
            f"install exactly {framework}=={pinned} here, or use a runner that provides it "
            "(--runner venv | docker)"
        )
        self.framework = framework
        self.pinned = pinned
        self.seen = seen


def measure(job: Job, evidence: Evidence, say: Say) -> None:
    """Evaluate ``job`` and fill ``evidence`` (frameworks first, so a mismatch is recorded)."""
    body = job.lock.body
    env = body.environment
    if env is None:
        raise UserError("the lockfile pins no framework environment for its platform")
    cls = predictor_class(env.framework)
    seen = cls.framework_version()
    evidence.frameworks[env.framework] = seen
    if public_version(seen) != public_version(env.version):  # semver build metadata too
        raise FrameworkMismatch(framework=env.framework, pinned=env.version, seen=seen)
    from pinbench.worker.memory import PeakGpuMemory, PeakMemory

    memory, gpu = PeakMemory(), PeakGpuMemory()
    job.memory = memory
    try:
        _measure(job, cls, seen, evidence, say)
    except BaseException:  # a run that did not finish records no metric: the peak is a detail
        gpu_bytes = gpu.finish()
        evidence.details["memory"] = {
            "peak_rss": memory.source,
            "bytes": memory.peak_bytes(),
            "gpu": gpu.source,
            "gpu_bytes": gpu_bytes,
        }
        raise
    gpu_peak = gpu.finish()
    if job.remote is None:  # a host-timed run's memory and logs are the host's
        from pinbench.worker.loadgen_files import read_logs

        evidence.logs = read_logs(job.log_dir) or None
        evidence.metrics["peak_rss_bytes"] = float(memory.peak_bytes())
        added = memory.model_added_bytes()
        if added is not None:
            evidence.metrics["model_added_rss_bytes"] = float(added)
        if gpu_peak is not None:
            evidence.metrics["peak_gpu_bytes"] = float(gpu_peak)
    evidence.details["memory"] = {
        "peak_rss": memory.source,
        "model_added_rss": memory.model_source,
        "gpu": gpu.source,
    }


def _measure(job: Job, cls: type[Predictor], seen: str, evidence: Evidence, say: Say) -> None:
    body = job.lock.body
    env = body.environment
    assert env is not None
    if job.remote is not None:
        from pinbench.worker.clock_wire import fits

        if not fits(body):
            raise UserError("the host keeps the clock of one model's or chain's LoadGen test only")
    if body.operator is not None:
        from pinbench.worker.operate import operate

        operate(job, evidence, say)
        return
    if body.training is not None:
        from pinbench.worker.trainrun import train_run

        train_run(job, evidence, say)
        return
    if body.request.generation is not None:
        from pinbench.worker.generation.run import generate_run

        generate_run(job, evidence, say)
        _no_undefined(evidence)
        return

    if body.chain is not None:  # a chain of models (``pinbench.chains``)
        from pinbench.chains.evaluate import evaluate_chain

        evaluate_chain(job, cls, evidence, say)
        _no_undefined(evidence)
        return
    recorder = Recorder(job.trace, env.framework, seen)
    recorder.start()
    try:
        _evaluate(job, cls, recorder, evidence, say)
    finally:
        recorder.stop()
    evidence.trace = recorder.finish()
    _no_undefined(evidence)


def _no_undefined(evidence: Evidence) -> None:
    """A metric is a number or the run failed: NaN is neither recorded nor lost."""
    undefined = sorted(k for k, v in evidence.metrics.items() if not math.isfinite(v))
    if undefined:
        raise UndefinedMetric(metric=", ".join(undefined), reason="it came out NaN or infinite")


def _evaluate(
    job: Job, cls: type[Predictor], recorder: Recorder, evidence: Evidence, say: Say
) -> None:
    body = job.lock.body
    assert body.model is not None and body.dataset is not None  # not an operator run
    model_art = files_of(job.lock, Kind.MODEL)
    data_art = files_of(job.lock, Kind.DATASET)
    if not body.model.inputs:
        raise UserError(f"model {model_art.ref} declares no inputs")
    check_output_steps(body.model.outputs)  # as publish does: a manifest stored before it
    scenario = body.scenario
    accuracy = scenario.mode == "accuracy"
    withheld = truth_withheld(job.lock)  # the host reads it and scores (``scoring``)
    samples = load_samples(body.dataset, data_art, job.data_paths, truth=not withheld)
    if accuracy and not withheld and not samples.has_truth:
        raise DatasetError(
            dataset=f"{body.dataset.name}@{body.dataset.version}",
            reason="an accuracy run needs labels and this dataset has none",
        )
    scorer = task(body.dataset.task).prepare(
        Context(
            body.model,
            str(model_art.ref),
            job.model_paths,
            body.dataset,
            samples,
            accuracy,
            scenario.sample_count,
        )
    )
    job.stop.check()
    model_sha256 = {f.path: f.sha256 for f in model_art.files}
    code = open_processing(body.model, job.model_paths, model_sha256, allow=job.allow_code, say=say)
    if code is not None:
        evidence.details["processing"] = code.record()
    say("preprocessing (outside any timed region)")
    with recorder.phase("preprocess"):
        by_code = None
        if code is not None:
            fed = [s for s in body.model.inputs if from_samples(s)]
            digest = body.dataset.manifest_digest
            by_code = code.prepare(
                fed, samples, cache=job.cache, dataset_digest=digest, say=say, stop=job.stop
            )
        feed = by_code or prepare(
            list(body.model.inputs),
            samples,
            cache=job.cache,
            dataset_digest=body.dataset.manifest_digest,
            model_files=job.model_paths,
            model_sha256=model_sha256,
            say=say,
            stop=job.stop,
            seal=job.seal,
        )
    inputs = feed.inputs
    if feed.decoder is not None:
        evidence.details["decoder"] = feed.decoder
    evidence.details.update(feed_details(feed, body, scenario))
    transform = body.request.transform
    # constants, states, a stream; views
    predictor = wrap(cls(), body.model.inputs, feed.windows, body.model.outputs)
    options = PredictorOptions(
        batch_size=body.batch_size,
        threads=body.threads,
        graph_optimization=transform.graph_optimization if transform else None,
    )
    profiling = recorder.wants("framework")
    if profiling:
        say(f"tracing at level {job.trace}: {cls.TITLE}'s profiler is on")
        predictor.start_profiling(job.scratch / "profile")
    try:
        if job.memory is not None:
            job.memory.model_loading()
        with recorder.phase("load model", role="load"):
            predictor.open(
                model_files(job),
                options,
            )
        job.stop.check()
        first = inputs[: body.batch_size]
        predictor.check_input(first)
        with recorder.phase("first predict (cold)", role="cold"):
            answer = predictor.first_predict(first)
        if code is not None:  # the code's outputs are the declared ones: checked before timing
            answer = code.first(answer, len(first))
        transposed = perms(body.model.outputs)
        answer = reorder(answer, transposed)  # a transpose step's, refused here if it can't
        check_first(scorer, answer, feed.arrays, len(first), body.model.outputs, accuracy)
        predict: Callable[[Any], Any] = predictor.predict
        if transform is not None:  # validated before anything is timed; measured transformed
            from pinbench.worker.transformrun import validate_inference

            predict = validate_inference(job, inputs, predictor.predict, evidence, say)
        with recorder.phase("warm-up"):
            expected, warm_starts, warm_times = warm_up(predict, first, options.warmup, job.stop)
        job.stop.check()
        recorder.warm_up(warm_starts, warm_times)
        if job.remote is not None and (code is None or code.post is None):  # as handed back
            job.remote.answers_as(lambda out: reorder(out, transposed))
        say(f"running {scenario.name} ({scenario.mode}) with {cls.NAME} {cls.framework_version()}")
        with (
            EnergyMeter.open(job.sysfs) as meter,  # counters found before the region
            recorder.phase("scenario", scenario=scenario.name, mode=scenario.mode),
        ):
            meter.start()
            measurement = run_scenario(
                predict,
                inputs,
                scenario,
                batch_size=body.batch_size,
                expected_latency_ns=expected,
                log_dir=job.log_dir,
                stop=job.stop,
                on_caller=profiling and cls.PROFILES_ONE_THREAD,
                keep_outputs=code is not None and code.post is not None,
                batch_axes=batch_axes(body.model.outputs),
                remote=job.remote,
            )
            energy = meter.stop()
        recorder.scenario(measurement.starts_ns, measurement.latencies_ns)
        if profiling:
            profiling = False
            recorder.framework(predictor.stop_profiling())
    finally:
        if profiling:  # the run failed: stop the profiler, its events are not wanted
            with contextlib.suppress(Exception):
                predictor.stop_profiling()
        predictor.close()
    evidence.metrics = {**measurement.summary(), **evidence.metrics}  # transform_* kept
    evidence.details.update(measurement.details())  # LoadGen's log, the machine's readings
    if job.remote is None:  # else the host measures it around its own test
        record_energy(energy, measurement.samples, evidence.metrics, evidence.details)
    evidence.latencies = measurement.latencies_ns  # a host-timed run's are the host's
    if code is not None:  # timed apart, outside the framework's timed region
        with recorder.phase("postprocess (code)"):
            measurement.outputs = code.every(measurement.outputs, job.stop, evidence, say)
    # scored by the host, which holds the ground truth (``scoring``); a host-timed test's
    # first answers, where they are what its seals are of, for TEST01 to score (``test01``)
    timed_bound = job.remote is not None and (code is None or code.post is None)
    if accuracy or timed_bound:
        keep_answers(evidence, body.dataset.task, measurement.outputs, transposed, feed.arrays)


def public_version(version: str) -> str:
    """``2.13.0+cpu`` -> ``2.13.0``: a PEP 440 local label (like semver build metadata, in a
    framework artifact's version ``1.31.0+venv1``) names a build, not a release."""
    return version.split("+", 1)[0]
