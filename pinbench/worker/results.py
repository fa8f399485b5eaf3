"""The results an isolated evaluator hands back: ``result.json`` plus ``.npy`` arrays.

The host trusts nothing in the output folder: each file has a size cap and must be a plain
file, the JSON is parsed strictly (NaN, Infinity and out-of-range numbers are refused), it must
name the lockfile that was run, metric names must be plain, and the arrays are read without
pickle and checked for dtype and shape.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np
import numpy.typing as npt

from pinbench import typed
from pinbench.artifacts.blob_keys import RUN_BLOBS, BlobKey, drop
from pinbench.errors import UserError
from pinbench.transforms.result import LEGACY_GRAPH_SHA256
from pinbench.worker.answers import ANSWERS, AnswersUnreadable, read_answers, write_answers
from pinbench.worker.answers import MAX_BYTES as MAX_ANSWERS_BYTES
from pinbench.worker.job import Evidence
from pinbench.worker.loadgen_files import LOGS, MAX_LOG_BYTES, LogUnreadable, read_log

FORMAT: Literal["pinbench-result/1"] = "pinbench-result/1"
RESULT = "result.json"
LATENCIES = "latencies.npy"
OUTPUTS = "outputs.npy"
TOKENS = "tokens.npy"
POSTPROCESS = "postprocess.npy"
TRACE = "trace.json"
WEIGHTS = "weights.bin"
GRAPH = "graph.onnx"
MAX_GRAPH_BYTES = 2 * 1024 * 1024 * 1024
"""Cap on a graph-optimization run's optimized graph (read into memory): protobuf's limit on
one ONNX file, so no graph onnxruntime saves whole is larger."""
MAX_WEIGHTS_BYTES = 1024 * 1024 * 1024
"""Cap on a training run's final weights read back from an evaluator (read into memory)."""
MAX_RESULT_BYTES = 4 * 1024 * 1024
MAX_ARRAY_BYTES = 1024 * 1024 * 1024
MAX_TRACE_BYTES = 256 * 1024 * 1024
_METRIC = re.compile(r"[a-z0-9_]{1,100}")
CAPS = {
    RESULT: MAX_RESULT_BYTES,
    LATENCIES: MAX_ARRAY_BYTES,
    OUTPUTS: MAX_ARRAY_BYTES,
    TRACE: MAX_TRACE_BYTES,
    WEIGHTS: MAX_WEIGHTS_BYTES,  # a training run's final weights
    TOKENS: MAX_ARRAY_BYTES,  # a generation run's per-answer token counts
    GRAPH: MAX_GRAPH_BYTES,  # a graph-optimization run's optimized graph
    POSTPROCESS: MAX_ARRAY_BYTES,  # a model's postprocess code's times
    ANSWERS: MAX_ANSWERS_BYTES,  # an accuracy run's answers, scored by the host
    **dict.fromkeys(LOGS.values(), MAX_LOG_BYTES),  # LoadGen's own logs
}
"""Every file an evaluator may hand back, with the most bytes it may hold (an agent's answer
is checked against it before it is unpacked: ``cluster.dispatch``)."""


class JobFile(
    msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True, omit_defaults=True
):
    """What the host hands an isolated evaluator (``job.json``). Fields at their defaults are
    left out, so an image built before a field existed still reads the jobs that do not use it.
    """

    lockfile: str
    """The lockfile's canonical text."""
    model: dict[str, str]
    dataset: dict[str, str]
    """Path in the artifact -> path to read it from, for each file."""
    validation: dict[str, str] = msgspec.field(default_factory=dict)
    """A training run's validation split, as ``dataset``."""
    cache: str | None = None
    trace: str = "none"
    allow_pickle: bool = False
    """Whoever started the run allowed unpickling a ``trusted`` torch-pickle model."""
    allow_code: bool = False
    """Whoever started the run allowed the model's processing code to run."""
    stages: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    """A chain's stages (``pinbench.chains``): stage name -> its model's files, as ``model``."""
    clock: list[int] = msgspec.field(default_factory=list)
    """The host keeps the clock (``runners.host_clock``): the pipes' descriptors the worker
    reads the host's queries from (or its wake-ups) and writes its answers to (or the host's
    wake-ups), then the rings' memory where the frames go through it (``clock_ring``); empty:
    LoadGen runs here."""
    clock_socket: str = ""
    """The host keeps the clock across a Unix socket at this path (a container, which inherits
    no descriptor: ``runners.clock_link``); empty: not."""
    ranks: dict[str, Any] | None = None
    """A training run whose ranks are spread over systems: this system's share, as
    ``training.distributed.placement.RankPlacement`` (parsed there); None: every rank here."""


class ChromeTrace(msgspec.Struct, frozen=True):
    """The shape the host checks a returned trace for before storing it."""

    traceEvents: list[dict[str, Any]]
    pinbench: dict[str, Any]


class WorkerResult(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    format: Literal["pinbench-result/1"]
    lockfile: str
    status: Literal["succeeded", "failed"]
    error: str | None
    metrics: dict[str, float]
    details: dict[str, Any]
    frameworks: dict[str, str]
    environment: dict[str, str]
    """What the evaluator saw of its own environment: python, platform, evaluator digest."""
    latencies: bool
    outputs: bool
    trace: bool = False
    weights: bool = False
    tokens: bool = False
    graph: bool = False
    postprocess: bool = False
    answers: list[str] | None = None
    """An accuracy run's answers (``answers.ANSWERS``): the output names, in the file's order."""
    scored_inputs: list[str] = msgspec.field(default_factory=list)
    """The model inputs in the same file, for a task that scores with them."""
    logs: list[str] = msgspec.field(default_factory=list)
    """LoadGen's logs handed back beside, by ``loadgen_files.LOGS``' names."""


class InvalidResults(UserError):
    def __init__(self, *, reason: str) -> None:
        super().__init__(f"the evaluator's results were refused: {reason}")
        self.reason = reason


def write_results(
    out: Path, lock_digest: str, evidence: Evidence, error: str | None, environment: dict[str, str]
) -> None:
    """Worker side: arrays first, then ``result.json`` (its presence means the rest is there)."""
    if evidence.latencies is not None:
        np.save(out / LATENCIES, evidence.latencies, allow_pickle=False)
    if evidence.outputs is not None:
        np.save(out / OUTPUTS, evidence.outputs, allow_pickle=False)
    if evidence.trace is not None:
        (out / TRACE).write_bytes(evidence.trace)
    if evidence.weights is not None:
        (out / WEIGHTS).write_bytes(evidence.weights)
    if evidence.tokens is not None:
        np.save(out / TOKENS, evidence.tokens, allow_pickle=False)
    if evidence.graph is not None:
        (out / GRAPH).write_bytes(evidence.graph)
    if evidence.postprocess is not None:
        np.save(out / POSTPROCESS, evidence.postprocess, allow_pickle=False)
    for kind, data in (evidence.logs or {}).items():
        (out / LOGS[kind]).write_bytes(data)
    answers: tuple[list[str], list[str]] | None = None
    if evidence.answers is not None and not error:
        try:
            answers = write_answers(out / ANSWERS, evidence.answers, evidence.scored_inputs)
        except AnswersUnreadable as exc:
            error = f"the model's answers cannot be handed to the host: {exc}"
    result = WorkerResult(
        format=FORMAT,
        lockfile=lock_digest,
        status="failed" if error else "succeeded",
        error=error,
        metrics=evidence.metrics,
        details=evidence.details,
        frameworks=evidence.frameworks,
        environment=environment,
        latencies=evidence.latencies is not None,
        outputs=evidence.outputs is not None,
        trace=evidence.trace is not None,
        weights=evidence.weights is not None,
        tokens=evidence.tokens is not None,
        graph=evidence.graph is not None,
        postprocess=evidence.postprocess is not None,
        answers=answers[0] if answers is not None else None,
        scored_inputs=answers[1] if answers is not None else [],
        logs=sorted(evidence.logs or {}),
    )
    tmp = out / f".{RESULT}.tmp"
    tmp.write_bytes(msgspec.json.encode(result))
    tmp.replace(out / RESULT)


CLAIMED: tuple[BlobKey, ...] = (*RUN_BLOBS, ("transform", LEGACY_GRAPH_SHA256))
"""The details' keys a worker may not write: the blobs the host stores for a run
(``artifacts.blob_keys.RUN_BLOBS``) and the graph digest an evaluator from before decision 180
wrote."""


HOST_DETAILS = ("dropped_metrics", "loadgen_logs", "audits", "clock")
"""Details only the host writes: the figures it dropped (``dropped.DROPPED``), LoadGen's logs
it stored (``run_blobs.save_logs``), its audits' verdicts (``runners.audits``, ``test01``),
whose clock timed the run (``runners.host_clock``)."""

HOST_ONLY = ("audit_",)
"""Metric names only the host writes (``runners.audits``): a worker's are dropped and named."""


def _drop_claimed_digests(details: dict[str, Any]) -> None:
    """Digests of outputs the host stores itself (accuracy outputs, final weights, token
    times, an optimized graph, post-processing times: ``CLAIMED``) are the host's to record,
    from the bytes it read: whatever the worker wrote for them goes; so does what only the host
    writes (``HOST_DETAILS``)."""
    drop(details, CLAIMED)
    for key in HOST_DETAILS:
        details.pop(key, None)


def read_results(out: Path, lock_digest: str) -> tuple[WorkerResult, Evidence]:
    """Host side: validate the output folder and turn it into evidence."""
    path = out / RESULT
    if not path.exists():
        raise InvalidResults(reason=f"no {RESULT} was written")
    raw = _read_capped(path, MAX_RESULT_BYTES)
    try:
        result = typed.decode_json(raw, WorkerResult)
    except msgspec.ValidationError as exc:
        raise InvalidResults(reason=f"{RESULT}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise InvalidResults(reason=f"{RESULT} is not JSON: {exc}") from None
    if result.lockfile != lock_digest:
        raise InvalidResults(
            reason=f"{RESULT} is for lockfile {result.lockfile[:12]}, not {lock_digest[:12]}"
        )
    for name in result.metrics:
        if not _METRIC.fullmatch(name):
            raise InvalidResults(reason=f"metric name {name!r} is not [a-z0-9_]")
    evidence = Evidence(
        frameworks=dict(result.frameworks),
        details=dict(result.details),
        metrics=dict(result.metrics),
    )
    _drop_claimed_digests(evidence.details)
    audits = sorted(k for k in evidence.metrics if k.startswith(HOST_ONLY))
    for name in audits:  # the host's verdicts on the worker: never the worker's word
        del evidence.metrics[name]
    if audits:
        evidence.details["dropped_metrics"] = audits
    if result.latencies:
        latencies = _array(out / LATENCIES)
        if latencies.dtype != np.int64 or latencies.ndim != 1 or latencies.size == 0:
            raise InvalidResults(reason=f"{LATENCIES} must be a non-empty 1-D int64 array")
        if int(latencies.min()) < 0:
            raise InvalidResults(reason=f"{LATENCIES} holds negative latencies")
        evidence.latencies = latencies
    elif result.status == "succeeded":
        raise InvalidResults(reason="a succeeded evaluation must return its latencies")
    if result.outputs:
        outputs = _array(out / OUTPUTS)
        if outputs.dtype.kind not in "biuf":
            raise InvalidResults(reason=f"{OUTPUTS} has dtype {outputs.dtype}, not numeric")
        evidence.outputs = outputs
    if result.trace:
        raw_trace = _read_capped(out / TRACE, MAX_TRACE_BYTES)
        try:
            typed.decode_json(raw_trace, ChromeTrace)
        except msgspec.DecodeError as exc:  # ValidationError is one
            raise InvalidResults(reason=f"{TRACE} is not a Chrome trace: {exc}") from None
        evidence.trace = raw_trace
    if result.weights:
        evidence.weights = _read_capped(out / WEIGHTS, MAX_WEIGHTS_BYTES)
    if result.tokens:
        evidence.tokens = _tokens(_array(out / TOKENS), evidence.latencies)
    if result.graph:
        evidence.graph = _read_capped(out / GRAPH, MAX_GRAPH_BYTES)
    if result.postprocess:
        times = _array(out / POSTPROCESS)
        if times.dtype != np.int64 or times.ndim != 1 or (times < 0).any():
            raise InvalidResults(reason=f"{POSTPROCESS} must be a 1-D int64 array of times")
        evidence.postprocess = times
    if result.logs:
        evidence.logs = _logs(out, result.logs)
    if result.answers is not None:
        _check_file(out / ANSWERS, MAX_ANSWERS_BYTES)
        try:
            evidence.answers, evidence.scored_inputs = read_answers(
                out / ANSWERS, result.answers, result.scored_inputs
            )
        except AnswersUnreadable as exc:
            raise InvalidResults(reason=f"{ANSWERS}: {exc}") from None
    return result, evidence


def adopt(evidence: Evidence, got: Evidence) -> None:
    """Take what ``read_results`` read (``got``) into a run's ``evidence``: the one way an
    isolated evaluator's or an agent's results become a run's (its environment apart): every
    field of ``Evidence``, so that one added there is never lost here."""
    import dataclasses

    evidence.frameworks.update(got.frameworks)
    evidence.details.update(got.details)
    for field in dataclasses.fields(Evidence):
        if field.name not in ("frameworks", "details", "environment"):
            setattr(evidence, field.name, getattr(got, field.name))


def _tokens(tokens: npt.NDArray[Any], latencies: npt.NDArray[Any] | None) -> npt.NDArray[Any]:
    """A generation run's (TTFT, token count) rows: one per latency, a first token no later
    than its answer's end, at least one token each."""
    if latencies is None or tokens.dtype != np.int64 or tokens.shape != (latencies.size, 2):
        raise InvalidResults(reason=f"{TOKENS} must be int64 (queries, 2) beside the latencies")
    if (tokens[:, 0] < 0).any() or (tokens[:, 0] > latencies).any() or (tokens[:, 1] < 1).any():
        raise InvalidResults(
            reason=f"{TOKENS}: a first token after its answer's end, or an answer of no token"
        )
    return tokens


def _check_file(path: Path, cap: int) -> None:
    """A plain file (not a link a container could aim at a host file) of at most ``cap`` bytes."""
    if path.is_symlink() or not path.is_file():
        raise InvalidResults(reason=f"{path.name} is missing or not a plain file")
    size = path.stat().st_size
    if size > cap:
        raise InvalidResults(reason=f"{path.name} is {size} bytes, over the {cap}-byte cap")


def _logs(out: Path, kinds: list[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for kind in kinds:
        if kind not in LOGS or kind in found:
            raise InvalidResults(
                reason=f"{RESULT} names LoadGen's log {kind!r} (twice, or unknown)"
            )
        try:
            found[kind] = read_log(out / LOGS[kind])
        except LogUnreadable as exc:
            raise InvalidResults(reason=exc.reason) from None
    return found


def _read_capped(path: Path, cap: int) -> bytes:
    _check_file(path, cap)
    return path.read_bytes()


def _array(path: Path) -> npt.NDArray[Any]:
    _check_file(path, MAX_ARRAY_BYTES)
    try:
        array: npt.NDArray[Any] = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InvalidResults(reason=f"{path.name} is not a readable .npy array: {exc}") from None
    return array
