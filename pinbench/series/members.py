"""Which runs form which series, read from the registry (decision 250).

A series is the succeeded, untraced model-evaluation runs that share a ``SeriesKey`` (model
name, dataset name, scenario and mode, batch size, system), ordered by when they started (then
by id). Everything else — the model's, framework's and dataset's versions, the image, the
runner, threads, limits — may differ along a series; ``moved`` names what moved at each
step, with bisect's view of a lockfile's pins (``evaluator.verdicts.bisect_chain``). A traced
run is left out: its latencies carry its profilers' overhead.

A run is compared (by the gate's window and the change-point watch) only with the runs of its
series whose ``settings_of`` equal its own: runner, framework name, threads and limits, the
settings that change a latency without being what a series tracks (the versions are). Runs with
other settings cannot shift its baseline.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pinbench.registry.lockfile import Lockfile
from pinbench.series.names import SeriesKey, parse_fields
from pinbench.series.series_errors import AmbiguousSeries, SeriesNotFound
from pinbench.workspace import Workspace

RAW_PREFIX = "framework_latency_"
"""Metrics computed from a run's raw latencies (the framework-call blob, decision 159): a
statistical threshold on one of them is judged on those raw values."""


@dataclass(frozen=True, slots=True)
class Member:
    """One run of a series."""

    run_id: str
    started_at: datetime
    runner: str
    lock: Lockfile
    latencies_sha256: str | None
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)


def invalid(member: Member) -> bool:
    """LoadGen called the run INVALID (``loadgen_valid_bool`` 0): its numbers are not a
    result, and it is no baseline unless a caller asks for it."""
    from pinbench.run_figures import loadgen_invalid

    return loadgen_invalid(member.metrics)


OTHER_SETTINGS = "other settings"
REGRESSED = "a gate found it regressed"
INVALID_RUN = "LoadGen called it INVALID"
UNSANDBOXED_RUN = "it ran UNSANDBOXED"


def unsandboxed_run(member: Member) -> bool:
    """Its system under test ran code or operations of its own outside a sandbox
    (``unsandboxed_bool`` 1): its figures are its own word, and it is no baseline unless a
    caller asks for it."""
    from pinbench.run_figures import unsandboxed

    return unsandboxed(member.metrics)


def no_result(member: Member) -> bool:
    """A run no baseline takes by default: INVALID, or UNSANDBOXED."""
    return invalid(member) or unsandboxed_run(member)


def left_out_because(
    member: Member,
    settings: str,
    rejected: Collection[str],
    *,
    include_invalid: bool = False,
    include_unsandboxed: bool = False,
) -> str:
    """Why a gate of a run with ``settings`` (``settings_of``) leaves ``member``, an earlier
    run of its series, out of its window: ``OTHER_SETTINGS``, ``REGRESSED`` (in ``rejected``,
    ``alerts.regressed_runs``), ``INVALID_RUN`` (unless ``include_invalid``) or
    ``UNSANDBOXED_RUN`` (unless ``include_unsandboxed``); empty for a run it compares with.
    The one rule ``gate.judge`` and the web UI's series page apply."""
    if settings_of(member) != settings:
        return OTHER_SETTINGS
    if member.run_id in rejected:
        return REGRESSED
    if invalid(member) and not include_invalid:
        return INVALID_RUN
    if unsandboxed_run(member) and not include_unsandboxed:
        return UNSANDBOXED_RUN
    return ""


def key_of(lock: Lockfile, system: str | None) -> SeriesKey | None:
    """The series a run of ``lock`` on ``system`` belongs to; None for an operator or training
    run, or one without a model or dataset."""
    body = lock.body
    if body.model is None or body.dataset is None or body.operator or body.training:
        return None
    scenario = body.scenario
    return SeriesKey(
        body.model.name, body.dataset.name, scenario.name, scenario.mode, body.batch_size, system
    )


def settings_of(member: Member) -> str:
    """The settings a run is compared on (canonical JSON): its runner, framework name (not
    version), threads and limits."""
    import msgspec

    body = member.lock.body
    env = body.environment
    return msgspec.json.encode(
        {
            "runner": member.runner,
            "framework": env.framework if env is not None else None,
            "threads": body.threads,
            "limits": body.request.limits,
        }
    ).decode()


def alike(members: list[Member], like: Member) -> list[Member]:
    """The runs of ``members`` with ``like``'s settings (``settings_of``), in their order."""
    same = settings_of(like)
    return [m for m in members if settings_of(m) == same]


def _in(column: str, values: Sequence[str]) -> tuple[str, dict[str, str]]:
    """``column IN (:v0, :v1, ...)`` and its parameters (plain SQL: ``db.plain``)."""
    names = {f"v{i}": v for i, v in enumerate(values)}
    return f"{column} IN ({', '.join(':' + n for n in names)})", names


def collect(ws: Workspace, *, model: str | None = None) -> dict[SeriesKey, list[Member]]:
    """Every series (of ``model`` only, when given) and its runs, oldest first: read with plain
    SQL (``Workspace.reads``), so that ``series show`` imports no ORM (issue 75, item 3)."""
    from pinbench.db.chunks import chunked
    from pinbench.db.plain import when

    where = "status = 'succeeded' AND trace_level = 'none' AND model IS NOT NULL"
    params: dict[str, Any] = {}
    if model is not None:
        where += " AND model = :model"
        params["model"] = model
    with ws.reads() as read:
        rows = read(
            "SELECT id, started_at, runner, system, lockfile_digest, latencies_sha256 FROM runs "
            f"WHERE {where} ORDER BY started_at, id",
            params,
        )
        locks: dict[str, Lockfile] = {}
        for chunk in chunked(sorted({str(r[4]) for r in rows})):
            clause, names = _in("digest", chunk)
            for digest, body in read(f"SELECT digest, body FROM lockfiles WHERE {clause}", names):
                locks[str(digest)] = Lockfile.from_bytes(str(body).encode())
        series: dict[SeriesKey, list[Member]] = {}
        members: dict[str, Member] = {}
        for run_id, started_at, runner, system, digest, latencies in rows:
            lock = locks[str(digest)]
            key = key_of(lock, system)
            if key is None:
                continue
            member = Member(str(run_id), when(started_at), str(runner), lock, latencies)
            series.setdefault(key, []).append(member)
            members[member.run_id] = member
        for chunk in chunked(list(members)):
            clause, names = _in("run_id", chunk)
            for run_id, metric, value, unit in read(
                f"SELECT run_id, metric, value, unit FROM results WHERE {clause} ORDER BY id",
                names,
            ):
                members[str(run_id)].metrics[str(metric)] = float(value)
                members[str(run_id)].units[str(metric)] = str(unit)
    return series


def resolve(ws: Workspace, name: str) -> tuple[SeriesKey, list[Member]]:
    """The one series ``name`` (whole, or its leading fields) names, and its runs."""
    fields = parse_fields(name)
    found = collect(ws, model=fields[0])
    matches = sorted((key for key in found if key.starts_with(fields)), key=str)
    if not matches:
        raise SeriesNotFound(name=name)
    if len(matches) > 1:
        raise AmbiguousSeries(name=name, matches=[str(k) for k in matches])
    return matches[0], found[matches[0]]


def series_of_run(ws: Workspace, run_id: str) -> tuple[SeriesKey, list[Member]]:
    """The series a recorded run belongs to (its runs up to and including it)."""
    key = key_of_run(ws, run_id)
    return key, collect(ws, model=key.model).get(key, [])


def key_of_run(ws: Workspace, run_id: str) -> SeriesKey:
    """The series a recorded run belongs to, its runs not read; refused for a run that is in
    none (not a model evaluation, failed or traced)."""
    from pinbench.errors import UserError
    from pinbench.evaluator.records.run_view import locate

    with ws.reads() as rows:
        found = locate(rows, run_id, "id, status, trace_level, system, lockfile_digest")
        full_id, status, trace = str(found[0]), str(found[1]), str(found[2])
        system = None if found[3] is None else str(found[3])
        ((body,),) = rows("SELECT body FROM lockfiles WHERE digest = :d", {"d": found[4]})
    key = key_of(Lockfile.from_bytes(str(body).encode()), system)
    if key is None:
        raise UserError(f"run {full_id[:8]} is not a model evaluation: it belongs to no series")
    if status != "succeeded" or trace != "none":
        raise UserError(
            f"run {full_id[:8]} {status} at trace level {trace!r}: a series holds succeeded, "
            "untraced runs"
        )
    return key


def moved(before: Member, after: Member) -> list[str]:
    """What moved from one run of a series to the next: each pin as ``PIN OLD -> NEW``; a pin
    that holds settings (the scenario) by the settings that moved
    (``scenario.min_duration_ms 8000 -> 100``)."""
    import msgspec

    from pinbench.evaluator.verdicts.bisect_chain import artifact_pins, setting_pins, show_value

    out = []
    if before.runner != after.runner:
        out.append(f"runner {before.runner} -> {after.runner}")
    for pins in (setting_pins, artifact_pins):
        old, new = pins(before.lock), pins(after.lock)
        for pin in old:
            if old[pin] == new[pin]:
                continue
            was, now = msgspec.to_builtins(old[pin]), msgspec.to_builtins(new[pin])
            if isinstance(was, dict) and isinstance(now, dict):
                for k in sorted(set(was) | set(now)):
                    if was.get(k) != now.get(k):
                        said = f"{show_value(was.get(k))} -> {show_value(now.get(k))}"
                        out.append(f"{pin}.{k} {said}")
            else:
                out.append(f"{pin} {show_value(old[pin])} -> {show_value(new[pin])}")
    if not out and before.lock.digest != after.lock.digest:
        out.append(f"lockfile {before.lock.digest.hex[:12]} -> {after.lock.digest.hex[:12]}")
    return out


def summary(key: SeriesKey, members: list[Member]) -> dict[str, Any]:
    """A series as ``series list`` shows it."""
    metrics = sorted({m for member in members for m in member.metrics})
    return {
        "name": str(key),
        "model": key.model,
        "dataset": key.dataset,
        "scenario": key.scenario,
        "mode": key.mode,
        "batch_size": key.batch_size,
        "system": key.system,
        "runs": len(members),
        "first": members[0].started_at.isoformat(),
        "last": members[-1].started_at.isoformat(),
        "last_run": members[-1].run_id,
        "metrics": metrics,
    }


def detail(key: SeriesKey, members: list[Member]) -> dict[str, Any]:
    """A series as ``series show`` shows it: every run's metrics and what moved before it,
    whether LoadGen called it INVALID, and how long its scenario ran at least."""
    points = []
    for i, member in enumerate(members):
        body = member.lock.body
        env = body.environment
        assert body.model is not None and body.dataset is not None
        points.append(
            {
                "run": member.run_id,
                "started_at": member.started_at.isoformat(),
                "lockfile": member.lock.digest.hex,
                "model": f"{body.model.name}@{body.model.version}",
                "dataset": f"{body.dataset.name}@{body.dataset.version}",
                "framework": f"{env.framework}@{env.version}" if env else None,
                "runner": member.runner,
                "moved": moved(members[i - 1], member) if i else [],
                "invalid": invalid(member),
                "min_duration_ms": body.scenario.min_duration_ms,
                "metrics": dict(sorted(member.metrics.items())),
            }
        )
    units: dict[str, str] = {}
    for member in members:
        units.update(member.units)
    return {**summary(key, members), "units": dict(sorted(units.items())), "points": points}


def list_series(ws: Workspace) -> list[dict[str, Any]]:
    """Every series, by name."""
    return [
        summary(key, members)
        for key, members in sorted(collect(ws).items(), key=lambda kv: str(kv[0]))
    ]


def show_series(ws: Workspace, name: str) -> dict[str, Any]:
    key, members = resolve(ws, name)
    return detail(key, members)
