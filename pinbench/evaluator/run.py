"""Running a lockfile: verify every pinned byte, hand it to a runner, record what came back.

A run record is written whole, in one transaction, when the run ends (succeeded, failed with
its reason, or interrupted) with the provenance of its environment; a database away then is
waited for, the record kept in the home (``records.recording``). Nothing is measured before
every byte is verified.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from pinbench.artifacts.digest import Digest
from pinbench.chains.policy import check_chain_run
from pinbench.cluster.placement import check_here
from pinbench.db.run_record import RunRecord
from pinbench.energy.price import Price, price_from_env, recorded_price
from pinbench.errors import PinbenchError, UserError
from pinbench.evaluator.blob_wait import verify_waiting, waiting_put
from pinbench.evaluator.host import host_facts
from pinbench.evaluator.policy import check_pickle
from pinbench.evaluator.records import recording
from pinbench.evaluator.records.recording import Recorded, record_run, stopped_from_now
from pinbench.evaluator.records.run_blobs import array_of as array_of
from pinbench.evaluator.records.run_blobs import latencies_of as latencies_of
from pinbench.evaluator.records.run_blobs import save_evidence, save_weights, store_graph
from pinbench.evaluator.records.run_filter import listing_columns
from pinbench.evaluator.runners import Runner, choose_runner, runner_named
from pinbench.evaluator.runners.audits import check_audit
from pinbench.evaluator.runners.consented import package_mark
from pinbench.evaluator.runners.guard import check_marked
from pinbench.evaluator.runners.sandbox import check_mode, sandbox_marks
from pinbench.evaluator.runners.test01_scoring import settle
from pinbench.evaluator.scoring import judge, load_truth
from pinbench.processing.consent import check_code, needs_code
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.locking import insert_lockfile
from pinbench.registry.model_requirements import check_runner
from pinbench.registry.scenario_notes import invalid_ahead
from pinbench.registry.verify import check_against_registry
from pinbench.specs.distributed import check_workers_here
from pinbench.trace import otel
from pinbench.trace.levels import check_level
from pinbench.trace.summary import summarise
from pinbench.worker.job import Evidence
from pinbench.worker.stop import RunStopped, Stop
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.cluster.dispatch import OnSystem
    from pinbench.evaluator.warm import WarmPool

Say = Callable[[str], None]


@dataclass
class RunOutcome:
    id: str
    status: str
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@dataclass
class _Attempt:
    """What a run has gathered so far; recorded whole when it ends, however it ends."""

    lock: Lockfile
    runner: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    status: str = "failed"
    error: str | None = None
    evidence: Evidence = field(default_factory=Evidence)
    latencies: Digest | None = None
    trace_level: str = "none"
    trace: Digest | None = None
    on: OnSystem | None = None
    """The cluster system it ran on (None: this machine)."""
    kept: set[str] = field(default_factory=set)
    """Its blobs kept in the home, the blob store away (``blob_wait``): its record waits."""


def check_trace(lock: Lockfile, trace: str) -> str:
    """``trace`` if the lockfile's framework can provide it (else a clear refusal)."""
    env = lock.body.environment
    body = lock.body
    if (body.operator or body.training or body.request.generation) and trace != "none":
        raise UserError(
            "operator benchmarks and training runs are not traced (their raw per-call or "
            "per-epoch times are recorded), nor text-generation runs (their raw per-token "
            "times are): leave --trace out"
        )
    return check_level(trace, env.framework if env is not None else "?")


def queue_run(
    ws: Workspace,
    lock: Lockfile,
    *,
    runner: str,
    run_id: str,
    trace: str = "none",
    instance: str | None = None,
    submitted_by: str | None = None,
    system: str | None = None,
    retry_of: str | None = None,
) -> None:
    """Record a run that will start later (a server's queue) as ``queued``; ``runner`` (a
    runner's name: ``auto`` resolved), the trace level and the lockfile checked now;
    ``run_lockfile(run_id=...)`` fills it in. ``instance``: the server that owns it (while its
    lease is renewed no other marks it interrupted); ``submitted_by``: who may cancel it
    (besides admins); ``system``: the cluster system it will run on, else this machine."""
    if runner != "auto" or system is None:  # an agent decides ``auto`` on its machine
        runner_named(runner)
    check_trace(lock, trace)
    if system is None:
        check_here(lock.body.system)
        check_workers_here(lock.body.request.distributed)
    check_chain_run(lock, runner=runner, trace=trace, on_cluster=system is not None)
    check_against_registry(ws, lock)
    row = {
        "id": run_id,
        "lockfile_digest": lock.digest.hex,
        "status": "queued",
        "runner": runner,
        "started_at": datetime.now(UTC),
        "host": "{}",  # JSON
        "trace_level": trace,
        "instance_id": instance,
        "submitted_by": submitted_by,
        "system": system,
        "retry_of": retry_of,
        **listing_columns(lock),
    }
    with ws.writes() as rows:
        insert_lockfile(rows, lock)
        rows(
            f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})",
            row,
        )


def abandon_unfinished(
    ws: Workspace, reason: str, *, only: list[str] | None = None, status: str = "interrupted"
) -> int:
    """Mark queued and running runs (all, or those in ``only``) interrupted: a server stopped
    with work in hand (or ``failed``: a run that ended before it could record itself)."""
    sql = (  # a finished run stays so
        "UPDATE runs SET status = :status, error = :reason, finished_at = :now "
        "WHERE status IN ('queued', 'running')"
    )
    params: dict[str, Any] = {"status": status, "reason": reason, "now": datetime.now(UTC)}
    if only is not None:
        if not only:
            return 0
        names = [f"id{i}" for i in range(len(only))]
        sql += f" AND id IN ({', '.join(':' + n for n in names)})"
        params.update(zip(names, only, strict=True))
    with ws.writes() as rows:
        return len(rows(sql + " RETURNING id", params))


def run_lockfile(
    ws: Workspace,
    lock: Lockfile,
    *,
    runner: str = "local",
    say: Say = print,
    run_id: str | None = None,
    trace: str = "none",
    fetch: bool = True,
    allow_pickle: bool = False,
    stop: Stop | None = None,
    on: OnSystem | None = None,
    warm: WarmPool | None = None,
    allow_code: bool = False,
    sandbox: str = "bwrap",
    audit: bool = False,
) -> RunOutcome:
    """Run ``lock`` with ``runner`` (or ``auto``) at trace level ``trace`` and record the run,
    whatever its outcome; raise if it did not succeed. ``run_id`` fills in a run recorded by
    ``queue_run``. A lockfile this registry would not make is refused before anything is
    recorded. ``fetch``: a missing blob may be fetched from its pinned source (never on a
    server). ``allow_pickle``: the caller's decision (``pinbench.evaluator.policy``); as is
    ``allow_code`` (``pinbench.processing.consent``), checked before anything is recorded.
    ``stop``: a request to stop early (a signal, a cancel), recorded so. ``on``: run it on that
    cluster system (``cluster.dispatch``). ``warm``: a pool of warm evaluators it may use.
    ``sandbox``: ``bwrap`` (every worker confined, ``runners.sandbox``) or ``none``; a run whose
    system under test ran code or operations of its own outside a sandbox is recorded
    ``unsandboxed_bool`` 1 (``sandbox_marks``). ``audit``: the host keeps the clock and runs
    MLPerf's TEST04 and TEST01 (``runners.host_clock``, ``runners.test01``), as for every run
    whose model carries code (``check_audit``)."""
    check_trace(lock, trace)
    check_mode(sandbox)
    if on is None:
        check_here(lock.body.system)
        check_workers_here(lock.body.request.distributed)
    check_against_registry(ws, lock)
    check_pickle(lock, allow=allow_pickle)
    check_code(lock, allow=allow_code)
    check_marked(package_mark(ws))  # pinbench itself as an earlier run's code left it
    price = price_from_env() if on is None else None  # a bad price is refused before the run
    if on is None:
        runner = choose_runner(runner, lock)
        check_runner(lock.body.model, runner)  # a model's own requirements: the venv runner's
        execute: Runner = runner_named(runner)
    else:
        on.runner, execute = runner, on  # the agent decides ``auto`` on its own machine
    if audit:
        check_audit(lock, on_cluster=on is not None)
    check_chain_run(lock, runner=runner, trace=trace, on_cluster=on is not None)
    with ws.writes() as rows:
        insert_lockfile(rows, lock)
    attempt = _Attempt(lock, runner, trace_level=trace, on=on)
    if run_id is not None:
        attempt.id = run_id
    evidence = attempt.evidence
    stop = stop or Stop()
    trace_data: dict[str, Any] | None = None
    try:
        for note in invalid_ahead(lock.body.scenario):  # told before it runs
            say(f"note: {note}")
        say("verifying every pinned byte")
        with ws.store.held(Digest(f.sha256) for a in lock.body.artifacts for f in a.files):
            verify_waiting(ws, lock, fetch, attempt.id, say, stop)
            truth = load_truth(ws, lock)  # the host's, withheld from the evaluator (scoring)
            stop.check()
            execute(
                ws,
                lock,
                evidence,
                say,
                trace,
                allow_pickle=allow_pickle,
                allow_code=allow_code,
                stop=stop,
                warm=warm,
                sandbox=sandbox,
                audit=audit,
            )
            stop.check()
            settle(ws, lock, evidence)  # TEST01 finished here, with the truth, before judge
            judge(ws, lock, evidence, truth, code_ran=allow_code and needs_code(lock))
            sandbox_marks(lock, evidence, allow_code=allow_code, here=on is None)
        put = waiting_put(ws, attempt.id, say, give_up=stopped_from_now(stop), kept=attempt.kept)
        attempt.latencies, attempt.trace = save_evidence(put, evidence, lock)
        if evidence.trace is not None:
            trace_data = msgspec.json.decode(evidence.trace)
            evidence.details["trace"] = summarise(trace_data)
        attempt.status = "succeeded"
    except KeyboardInterrupt:
        attempt.status, attempt.error = "interrupted", "interrupted (SIGINT)"
        raise
    except RunStopped as exc:
        attempt.status, attempt.error = exc.status, str(exc)
        raise
    except PinbenchError as exc:
        attempt.error = str(exc)
        put = waiting_put(ws, attempt.id, say, give_up=stopped_from_now(stop), kept=attempt.kept)
        save_weights(put, evidence, lock)  # a training run short of its target keeps its weights
        store_graph(put, evidence)  # an invalid graph optimization keeps its graph, to be opened
        raise
    except BaseException as exc:
        attempt.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if on is not None:
            attempt.runner = on.runner
        _keep_cost(evidence.details, price, on is not None)
        recorded = _record(ws, attempt, say, stop)
    recording.still_waiting(ws, recorded, attempt.id, attempt.status)
    url = otel.endpoint()
    if trace_data is not None and url:
        _export_trace(trace_data, attempt, url, say)
    return RunOutcome(attempt.id, attempt.status, evidence.metrics)


def record_left(ws: Workspace) -> int:
    """Write (and attest) the run records that dead processes left waiting for the database
    (``evaluator.records.recording.record_left``); how many."""
    return recording.record_left(ws, attest_recorded)


def attest_recorded(ws: Workspace, run_id: str, say: Say) -> None:
    """Sign the run's provenance as it is recorded (``pinbench.provenance``)."""
    from pinbench.provenance.attest import attest_recorded as attest

    attest(ws, run_id, say)


def _export_trace(trace: dict[str, Any], attempt: _Attempt, url: str, say: Say) -> None:
    """Send the trace out through OpenTelemetry; a failure is said, the run stands."""
    try:
        sent = otel.export(
            trace,
            run_id=attempt.id,
            lockfile=attempt.lock.digest.hex,
            url=url,
        )
    except ImportError:
        say(
            f"{otel.ENDPOINT_ENV} is set but OpenTelemetry is not installed: "
            "pip install 'pinbench[otel]'; the trace is in the blob store"
        )
    except Exception as exc:  # the exporter's own failures: reported, never fatal
        say(f"OpenTelemetry export to {url} failed: {exc}; the trace is in the blob store")
    else:
        say(f"exported {sent} spans to {url}")


def _keep_cost(details: dict[str, Any], price: Price | None, on_agent: bool) -> None:
    """The price a run records (``pinbench.energy.price``): this process's own for a run
    here; an agent's declared price, checked, for a run on a cluster system. An isolated
    evaluator's results never set it."""
    claimed = recorded_price(details.pop("cost", None))
    kept = claimed if on_agent else price
    if kept is not None:
        details["cost"] = kept.to_json()


UNITS = {
    "_ns": "ns",
    "_sps": "samples/s",
    "_count": "count",
    "_bool": "bool",
    "_flop_per_s": "FLOP/s",
    "_byte_per_s": "B/s",
    "_tps": "tokens/s",
    "_bytes": "B",
    "_flop_per_byte": "FLOP/B",
    "_j": "J",
    "_s": "s",
}
"""Units by metric-name suffix, the first that matches (``_s`` after the rates ending in it)."""


def unit_of(metric: str) -> str:
    for suffix, unit in UNITS.items():
        if metric.endswith(suffix):
            return unit
    return "ratio"


def _record(ws: Workspace, attempt: _Attempt, say: Say, stop: Stop) -> Recorded:
    """Write the run's record whole, through a database outage (``evaluator.records.recording``),
    and attest it. A record is written once: a row finished meanwhile (a server thought dead
    had its run marked ``interrupted``) is not turned into a success afterwards. Waiting for
    the database ends when the process is asked to stop (a server stopping, a signal) after
    the wait began: the record then waits in the home for the next server."""
    from pinbench.provenance.attest import attestation_of_record

    give_up = stopped_from_now(stop)
    record = _record_of(attempt)
    put = waiting_put(ws, attempt.id, say, give_up=give_up, keep=False)  # else attested later
    attestation = attestation_of_record(ws, record, attempt.lock, say, put)  # committed with it
    recorded = record_run(ws, record, say, give_up=give_up, prepare=attestation, kept=attempt.kept)
    if recorded is Recorded.DROPPED:
        say(f"run {attempt.id} was recorded finished meanwhile: its {attempt.status} is dropped")
    return recorded


def _record_of(attempt: _Attempt) -> RunRecord:
    """The run's record as it is when it ends."""
    evidence = attempt.evidence
    details = dict(evidence.details)
    if evidence.environment:
        details["environment"] = evidence.environment
    on = attempt.on
    columns = {
        "lockfile_digest": attempt.lock.digest.hex,
        "status": attempt.status,
        "runner": attempt.runner,
        "started_at": attempt.started,
        "finished_at": datetime.now(UTC),
        "host": on.host if on and on.host else host_facts(evidence.frameworks),
        "system": on.system if on else None,
        "error": attempt.error,
        "details": details,
        "environment_digest": evidence.environment.get("digest"),
        "latencies_sha256": attempt.latencies.hex if attempt.latencies else None,
        "trace_level": attempt.trace_level,
        "trace_sha256": attempt.trace.hex if attempt.trace else None,
        **listing_columns(attempt.lock),
    }
    results = tuple((k, v, unit_of(k)) for k, v in sorted(evidence.metrics.items()))
    return RunRecord(attempt.id, columns, results)
