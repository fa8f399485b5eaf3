"""One evaluation of a chain (``measure`` hands a lockfile with a ``chain`` here): the first
stage's inputs prepared from the samples before anything is timed, as any model's; every
stage opened and its code loaded (with the run's consent); the first prediction checked stage
by stage; then the scenario, each query the whole chain: LoadGen's ``latency_*`` and
``chain_latency_*_ns`` (the ``predict`` call, code between stages included) are the chain's
end to end, ``framework_latency_*_ns`` each query's framework calls summed over the stages
(the framework call alone, as for one model: its raw series is the run's latencies),
``stage_<name>_latency_*_ns`` each stage's framework call (a fan-out's calls summed). A
chain with code between its stages is timed by the host (``runners.host_clock``): its figures
are the host's, and the worker's own times are its account in ``details.chain.worker_clock``,
never figures. The dataset's task scores the last stage's outputs. A chain wired
``sample.bytes`` reads every sample file's bytes here too, before timing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pinbench.chains.predict import ChainPredictor, Stage
from pinbench.processing.consent import CodeRefused
from pinbench.processing.loading import load, python_version
from pinbench.registry.chain_spec import (
    SAMPLE_BYTES,
    ChainRefused,
    LockedChain,
    LockedStage,
)
from pinbench.registry.input_kinds import from_samples
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.registry.output_steps import check_output_steps
from pinbench.tasks.base import Context
from pinbench.tasks.registry import task
from pinbench.worker.datasets import DatasetError, Samples, load_samples
from pinbench.worker.feed import prepare
from pinbench.worker.job import Evidence, Job, Say, files_of, truth_withheld
from pinbench.worker.latency_metrics import series
from pinbench.worker.named import NamedInputs
from pinbench.worker.output_axes import batch_axes, perms, reorder
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.ragged import Ragged
from pinbench.worker.scenarios import run_scenario
from pinbench.worker.views import wrap

if TYPE_CHECKING:
    from pinbench.worker.predictors.base import Predictor


def evaluate_chain(job: Job, cls: type[Predictor], evidence: Evidence, say: Say) -> None:
    body = job.lock.body
    chain = body.chain
    assert chain is not None and body.model is not None and body.dataset is not None
    check_output_steps(body.model.outputs)
    scenario = body.scenario
    accuracy = scenario.mode == "accuracy"
    withheld = truth_withheld(job.lock)  # the host reads it and scores (``scoring``)
    data = files_of(job.lock, Kind.DATASET)
    samples = load_samples(body.dataset, data, job.data_paths, truth=not withheld)
    if accuracy and not withheld and not samples.has_truth:
        raise DatasetError(
            dataset=f"{body.dataset.name}@{body.dataset.version}",
            reason="an accuracy run needs labels and this dataset has none",
        )
    source, last = chain.stages[0], chain.stages[-1]
    scorer = task(body.dataset.task).prepare(
        Context(
            body.model,
            job.lock.stage_artifact(last).ref,
            job.stage_paths[last.name],
            body.dataset,
            samples,
            accuracy,
            scenario.sample_count,
        )
    )
    codes = _load_codes(job, chain, say)
    say("preprocessing the first stage's inputs (outside any timed region)")
    pinned = {f.path: f.sha256 for f in job.lock.stage_artifact(source).files}
    feed = prepare(
        list(source.inputs),
        samples,
        cache=job.cache,
        dataset_digest=body.dataset.manifest_digest,
        model_files=job.stage_paths[source.name],
        model_sha256=pinned,
        say=say,
        stop=job.stop,
        seal=job.seal,
    )
    from pinbench.worker.evaluation_steps import (
        check_first,
        feed_details,
        keep_answers,
        warm_up,
    )

    details = feed_details(feed, body, scenario)
    evidence.details.update(details, chain=_record(job.lock, chain, codes))
    inputs, only = _with_sample(chain, feed.inputs, samples, body.dataset.name, say)
    options = PredictorOptions(batch_size=body.batch_size, threads=body.threads)
    stages: list[Stage] = []
    chained = ChainPredictor(stages, only)
    if job.memory is not None:
        job.memory.model_loading()  # every stage's model: what the chain's loading added
    try:
        for stage in chain.stages:
            predictor = wrap(
                cls(), stage.inputs, feed.windows if stage is source else None, stage.outputs
            )
            code, join = codes.get(stage.name, (None, None))
            stages.append(Stage(stage, predictor, code, job.stage_paths[stage.name], join))
            say(f"opening stage {stage.name}: {stage.model}@{stage.version}")
            predictor.open(_files(job, stage), options)
        job.stop.check()
        first = inputs[:1]
        stages[0].predictor.check_input(feed.inputs[:1])
        transposed = perms(body.model.outputs)
        answer = reorder(chained.predict(first), transposed)  # every stage's feed checked
        check_first(scorer, answer, feed.arrays, 1, body.model.outputs, accuracy)

        expected, _, _ = warm_up(chained.predict, first, options.warmup, job.stop)
        if job.remote is not None:  # the host keeps the clock: answers sealed as handed back
            job.remote.answers_as(lambda out: reorder(out, transposed))
        chained.timing = True
        say(f"running {scenario.name} ({scenario.mode}) on a chain of {len(stages)} stages")
        measurement = run_scenario(
            chained.predict,
            inputs,
            scenario,
            batch_size=1,
            expected_latency_ns=expected,
            log_dir=job.log_dir,
            stop=job.stop,
            batch_axes=batch_axes(body.model.outputs),
            remote=job.remote,
        )
    finally:
        chained.close()
    calls = chained.framework_ns()
    if calls.shape != measurement.latencies_ns.shape:
        raise RuntimeError(
            f"the chain's stages were timed {calls.shape} times for "
            f"{measurement.latencies_ns.size} queries"
        )
    whole = series(measurement.latencies_ns, "chain_latency")
    framework = series(calls, "framework_latency")
    summary = {k: v for k, v in measurement.summary().items() if k not in framework}
    if job.remote is None:
        evidence.metrics = {**summary, **whole, **framework, **chained.metrics()}
    else:  # the host keeps the clock: the worker's times are its account, never the figures
        evidence.details["chain"]["worker_clock"] = {**whole, **chained.metrics()}
    for entry, opened in zip(evidence.details["chain"]["stages"], stages, strict=True):
        if opened.join is not None:  # not ``calls``: those are the run's latencies
            fanned = np.array(opened.calls, dtype=np.float64)
            entry["calls_per_query"] = {
                "min": float(fanned.min()), "mean": float(fanned.mean()), "max": float(fanned.max())
            }  # fmt: skip
    evidence.details.update(measurement.details())  # LoadGen's log, the machine's readings
    evidence.latencies = calls  # the raw series of framework_latency_* (gate, rerun verdict)
    if accuracy:  # scored by the host, which holds the ground truth (``scoring``)
        keep_answers(evidence, body.dataset.task, measurement.outputs, transposed, feed.arrays)


def _files(job: Job, stage: LockedStage) -> ModelFiles:
    return ModelFiles(
        job.stage_paths[stage.name],
        stage.format,
        stage.architecture,
        stage.trusted and job.allow_pickle,
        tuple(stage.inputs),
        tuple(stage.outputs),
    )


def _load_codes(job: Job, chain: LockedChain, say: Say) -> dict[str, tuple[Any, Any]]:
    """Each stage's code and join loaded (their import-time code runs now, inside the
    runner); refused unless the run was allowed to run code (the runner checks again what the
    caller did)."""
    with_code = [s for s in chain.stages if s.code is not None]
    if not with_code:
        return {}
    if not job.allow_code:
        model = job.lock.body.model
        assert model is not None
        raise CodeRefused(
            model=f"{model.name}@{model.version}'s chain",
            roles=["between-stage"],
            reason="This evaluation was not allowed to run it (pinbench run --allow-code)",
        )
    say(f"loading the chain's code of stage(s) {[s.name for s in with_code]} (--allow-code)")
    out = {}
    for stage in with_code:
        assert stage.code is not None
        pinned = {f.path: f.sha256 for f in job.lock.stage_artifact(stage).files}
        role, joins = f"chain stage {stage.name}", f"chain stage {stage.name} join"
        roles = {role: stage.code, **({joins: stage.join} if stage.join is not None else {})}
        loaded = load(roles, job.stage_paths[stage.name], pinned)
        out[stage.name] = (loaded[role], loaded.get(joins))
    return out


def _with_sample(
    chain: LockedChain, inputs: Any, samples: Samples, dataset: str, say: Say
) -> tuple[Any, str | None]:
    """What the scenario slices: the first stage's inputs, with each sample file's bytes
    beside them (``NamedInputs``, under ``sample.bytes``) where a stage is wired them; and
    the name of the first stage's one input (None: it is fed ``NamedInputs``)."""
    readers = [s.name for s in chain.stages if SAMPLE_BYTES in s.wires.values()]
    if not readers:
        return inputs, None
    if samples.files is None:
        raise ChainRefused(
            stage=readers[0],
            reason=f"it is wired {SAMPLE_BYTES!r}, the query's sample file, but dataset "
            f"{dataset} holds no sample files (its samples are arrays or texts): wire an "
            "earlier stage's output instead",
        )
    say(f"reading {len(samples.files)} sample files' bytes for stage(s) {readers}")
    read = [np.frombuffer(f.local.read_bytes(), dtype=np.uint8) for f in samples.files]
    names = [f.path for f in samples.files]
    data: Any
    if len({r.size for r in read}) <= 1:
        data = np.stack(read) if read else np.zeros((0, 0), np.uint8)
    else:
        shapes = np.array([[r.size] for r in read], dtype=np.int64)
        data = Ragged(np.concatenate(read), shapes, input=SAMPLE_BYTES, names=names)
    if isinstance(inputs, NamedInputs):
        return NamedInputs({**inputs.arrays, SAMPLE_BYTES: data}), None
    only = str(next(i.name for i in chain.stages[0].inputs if from_samples(i)))
    return NamedInputs({only: inputs, SAMPLE_BYTES: data}), only


def _record(lock: Lockfile, chain: LockedChain, codes: dict[str, Any]) -> dict[str, Any]:
    """``details.chain``: each stage's model, version, files' sha256 (the lockfile's: each
    stage keeps its own artifact's digests) and code, in the order they ran."""
    stages = []
    for stage in chain.stages:
        art = lock.stage_artifact(stage)
        entry: dict[str, Any] = {
            "name": stage.name,
            "model": f"{stage.model}@{stage.version}",
            "manifest_digest": art.manifest_digest,
            "files": {f.path: f.sha256 for f in art.files},
            "wires": dict(stage.wires),
        }
        code, join = codes.get(stage.name, (None, None))
        if code is not None:
            entry["code"] = code.record()
        if join is not None:
            entry["join"] = join.record()
        stages.append(entry)
    return {"stages": stages, "python": python_version(), "end_to_end": "latency_*"}
