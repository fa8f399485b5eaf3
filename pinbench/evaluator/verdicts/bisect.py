"""Which pin moved the number: bisect the pins between a good run and a bad run.

Two recorded runs' lockfiles differ in some pins: the model, framework, dataset or image
version, or a setting (scenario, batch size, threads, system, limits). ``pins`` lists them;
``chain`` orders the states between the two runs so that each state changes one pin one step
from the state before (a pin whose artifact has published, non-yanked versions in between goes
through each of them), GOOD's pins first, BAD's last. ``search`` binary-searches that chain for
the first state whose metric has left GOOD's. Both are pure: ``bisect`` gives them the
registry (each state's request is locked by this registry, never written by hand), the runs
(recorded ones of the same lockfile are reused) and the judge (``rerun``'s statistics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import recorded_lockfile, show_run
from pinbench.evaluator.run import Say, run_lockfile
from pinbench.evaluator.runners import choose_runner
from pinbench.evaluator.verdicts.bisect_chain import (
    ACCURACY,
    LATENCY_METRICS,
    METRICS,
    REPEAT,
    ROUNDS,
    SETTING_PINS,
    Pin,
    Side,
    artifact_pins,
    chain,
    request_for,
    search,
    setting_pins,
    show_value,
    versions_between,
)
from pinbench.evaluator.verdicts.bisect_judge import Endpoint, Evidence, Judge
from pinbench.evaluator.verdicts.verdict import (
    BAND,
    MIN_EFFECT,
)
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace

# ---- the bisect ----------------------------------------------------------------------------


@dataclass
class Bisection:
    """What ``bisect`` found: ``outcome`` is ``found``, ``nothing to bisect`` (no pin differs),
    ``no difference`` (the metric does not differ between GOOD and BAD) or ``inconclusive``."""

    good: str
    bad: str
    metric: str
    outcome: str
    message: str
    pins: list[str] = field(default_factory=list)
    states: int = 0
    evidence: list[Evidence] = field(default_factory=list)
    first: str | None = None
    new_runs: int = 0
    reused_runs: int = 0

    @property
    def exit_code(self) -> int:
        return 4 if self.outcome == "inconclusive" else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "good": self.good,
            "bad": self.bad,
            "metric": self.metric,
            "outcome": self.outcome,
            "message": self.message,
            "pins": self.pins,
            "states": self.states,
            "first_change": self.first,
            "new_runs": self.new_runs,
            "reused_runs": self.reused_runs,
            "evidence": [e.to_json() for e in self.evidence],
        }


def endpoint(ws: Workspace, run_id: str, role: str) -> Endpoint:
    run_id, lock = recorded_lockfile(ws, run_id)
    run = show_run(ws, run_id)
    if run["status"] != "succeeded":
        raise UserError(
            f"{role} run {run_id[:8]} {run['status']}: bisect compares succeeded runs "
            "(see `pinbench runs show`)"
        )
    if run.get("system"):
        raise UserError(
            f"{role} run {run_id[:8]} ran on cluster system {run['system']}: bisect runs on "
            "this machine and would compare other hardware"
        )
    return Endpoint(run, lock)


def _kind(lock: Lockfile) -> str:
    body = lock.body
    return "operator" if body.operator else "training" if body.training else "model"


def task_of(end: Endpoint) -> str | None:
    dataset = end.lock.body.dataset
    return dataset.task if dataset is not None else None


def recorded_key(end: Endpoint, metric: str) -> str | None:
    """The recorded metric ``--metric`` reads in ``end``'s run: a latency figure (p50 and
    throughput: the framework calls', whose raw latencies the judge compares; an operator
    run's own), or the
    headline metric of its task (None where it recorded none)."""
    from pinbench.tasks.registry import headline

    if metric == "p50" and "framework_latency_p50_ns" in end.run:
        return "framework_latency_p50_ns"  # what the raw latencies it judges are (decision 159)
    if metric == "throughput" and "framework_throughput_sps" in end.run:
        return "framework_throughput_sps"  # the framework calls' span, as p50's (decision 275)
    if metric != ACCURACY:
        return LATENCY_METRICS[metric]
    found = headline(end.run, task_of(end))
    return found[1].name if found is not None else None


def check_pair(good: Endpoint, bad: Endpoint, metric: str) -> str:
    """Refuse what bisect cannot compare, before anything is locked or run."""
    kinds = _kind(good.lock), _kind(bad.lock)
    if kinds[0] != kinds[1]:
        raise UserError(
            f"GOOD is a {kinds[0]} run and BAD a {kinds[1]} run: bisect compares two runs of "
            "the same kind"
        )
    if kinds[0] != "model":
        raise UserError(f"bisect compares model evaluation runs, not {kinds[0]} runs")
    if metric not in METRICS:
        raise UserError(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if good.run["runner"] != bad.run["runner"]:
        raise UserError(
            f"GOOD ran with the {good.run['runner']} runner and BAD with {bad.run['runner']}: "
            "the runner is not a pin of the lockfile, so bisect cannot find it; rerun one with "
            "the other's runner (`pinbench rerun RUN --runner R`) and bisect those runs"
        )
    key = recorded_key(good, metric)
    mode = "accuracy" if metric == ACCURACY else "performance"
    for role, end in (("GOOD", good), ("BAD", bad)):
        recorded = key is not None and end.run.get(key) is not None
        if end.run["mode"] != mode or not recorded:
            what = key if recorded else f"no {key or 'headline metric of its task'}"
            raise UserError(
                f"{role} run {end.run['id'][:8]} is a {end.run['mode']}-mode run that recorded "
                f"{what}: --metric {metric} compares {mode}-mode runs"
            )
        if metric != ACCURACY and not end.run.get("latencies_sha256"):
            raise UserError(f"{role} run {end.run['id'][:8]} recorded no raw latencies")
    if good.run["trace"] != bad.run["trace"] and metric != ACCURACY:
        raise UserError(
            f"GOOD ran at trace level {good.run['trace']!r} and BAD at {bad.run['trace']!r}: "
            "a traced run's latencies carry its profilers' overhead"
        )
    assert key is not None  # refused above otherwise
    return key


def differing_pins(ws: Workspace, good: Lockfile, bad: Lockfile) -> list[Pin]:
    """The pins that differ, settings first (each one step), then artifacts (through the
    registry's published versions in between when GOOD and BAD pin the same name)."""
    pins = []
    g_set, b_set = setting_pins(good), setting_pins(bad)
    for name in SETTING_PINS:
        if g_set[name] != b_set[name]:
            pins.append(Pin(name, (g_set[name], b_set[name])))
    g_art, b_art = artifact_pins(good), artifact_pins(bad)
    for kind in ("image", "framework", "dataset", "model"):
        g, b = g_art[kind], b_art[kind]
        if g == b:
            continue
        if g is None or b is None or g.rpartition("@")[0] != b.rpartition("@")[0]:
            pins.append(Pin(kind, (g, b)))
            continue
        name = g.rpartition("@")[0]
        with ws.reads() as read:
            rows = read(
                "SELECT version, yanked FROM artifacts WHERE kind = :kind AND name = :name",
                {"kind": kind, "name": name},
            )
        versions = versions_between(
            [(str(v), bool(y)) for v, y in rows], g.rpartition("@")[2], b.rpartition("@")[2]
        )
        pins.append(Pin(kind, tuple(f"{name}@{v}" for v in versions)))
    return pins


def recorded_runs(ws: Workspace, digest: str, *, runner: str, trace: str, limit: int) -> list[str]:
    """Succeeded runs of this lockfile on this machine with this runner and trace level,
    oldest first (so a bisect done again judges the same runs), at most ``limit``."""
    with ws.reads() as rows:
        found = rows(
            "SELECT id FROM runs WHERE lockfile_digest = :digest AND status = 'succeeded'"
            " AND runner = :runner AND trace_level = :trace AND system IS NULL"
            " AND latencies_sha256 IS NOT NULL ORDER BY started_at, id LIMIT :limit",
            {"digest": digest, "runner": runner, "trace": trace, "limit": limit},
        )
    return [str(r[0]) for r in found]


def bisect(
    ws: Workspace,
    good_run: str,
    bad_run: str,
    *,
    metric: str = "p50",
    repeat: int = REPEAT,
    runner: str | None = None,
    say: Say = print,
    stop: Stop | None = None,
    band: float = BAND,
    min_effect: float = MIN_EFFECT,
) -> Bisection:
    """Bisect the pins between two recorded runs for the first that changes ``metric``; each
    state evaluated is locked by this registry and measured ``repeat`` times (an accuracy run
    once), reusing recorded succeeded runs of the same lockfile first. ``min_effect``: the
    least relative change of a latency median counted as a change (default 5 %)."""
    if repeat < 1:
        raise UserError(f"repeat must be >= 1, got {repeat}")
    if not 0 < min_effect < 10:  # a NaN is refused too: nothing would ever count as a change
        raise UserError(f"min_effect must be between 0 and 10, got {min_effect}")
    if metric not in METRICS:
        raise UserError(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    good, bad = endpoint(ws, good_run, "GOOD"), endpoint(ws, bad_run, "BAD")
    key = check_pair(good, bad, metric)
    g_id, b_id = good.run["id"], bad.run["id"]
    result = Bisection(g_id, b_id, metric, "nothing to bisect", "")
    pins = differing_pins(ws, good.lock, bad.lock)
    result.pins = [p.field for p in pins]
    if not pins:
        result.message = (
            f"runs {g_id[:8]} and {b_id[:8]} pin the same inputs (lockfiles "
            f"{good.lock.digest.hex[:12]} and {bad.lock.digest.hex[:12]}): nothing to bisect, "
            "nothing evaluated"
        )
        return result
    judge = Judge(ws, metric, key, good.run, bad.run, band, task_of(good), min_effect)
    outcome, why = judge.compare(good.run, [bad.run])
    ends = [
        Evidence("good", "-", good.lock.digest.hex, [g_id], 1, judge.value([good.run]), "good"),
        Evidence("bad", "-", bad.lock.digest.hex, [b_id], 1, judge.value([bad.run]), "bad", [why]),
    ]
    result.evidence = ends
    if outcome != "changed":
        result.outcome = "no difference" if outcome == "reproduced" else "inconclusive"
        result.message = (
            f"{judge.shown} does not differ between GOOD and BAD ({why}): nothing to bisect, "
            "nothing evaluated"
            if outcome == "reproduced"
            else f"GOOD and BAD cannot be told apart on {judge.shown} ({why}); nothing evaluated"
        )
        return result
    states = chain(pins)
    result.states = len(states)
    run_with = runner or good.run["runner"]
    trace = good.run["trace"]
    count = 1 if judge.accuracy else repeat
    rows: dict[int, Evidence] = {}
    base = {**artifact_pins(good.lock), **setting_pins(good.lock)}
    new_ids: set[str] = set()

    def evaluate(i: int) -> Side:
        state = states[i]
        wanted = {**base, **state.values}
        lock, _ = service.lock(ws, request_for(good.lock.body.request, wanted))
        _check_pinned(lock, state.index, wanted)
        name = choose_runner(run_with, lock)
        rounds = 1 if judge.accuracy else ROUNDS
        for round_ in range(1, rounds + 1):
            want = count * round_
            ids = recorded_runs(ws, lock.digest.hex, runner=name, trace=trace, limit=want)
            reused = [r for r in ids if r not in new_ids]
            if reused and round_ == 1:
                say(
                    f"step {i} ({state.change()}): reusing {len(reused)} recorded run(s) of "
                    f"lockfile {lock.digest.hex[:12]}"
                )
            while len(ids) < want:
                say(f"step {i} ({state.change()}): run {len(ids) + 1} of {want}")
                outcome = run_lockfile(ws, lock, runner=name, say=say, trace=trace, stop=stop)
                ids.append(outcome.id)
                new_ids.add(outcome.id)
            runs = [show_run(ws, r) for r in ids]
            side, detail = judge.side(runs)
            if side != "inconclusive":
                break
            if round_ < rounds:
                say(f"step {i}: inconclusive after {len(ids)} runs; {count} more")
        result.reused_runs += len(reused)
        rows[i] = Evidence(
            str(i),
            state.change(),
            lock.digest.hex,
            ids,
            len(reused),
            judge.value(runs),
            side,
            detail,
        )
        return side

    found = search(len(states), evaluate)
    result.new_runs = len(new_ids)
    result.evidence = [ends[0], *(rows[i] for i in sorted(rows)), ends[1]]
    first = states[found.bad]
    if found.undecided is None:
        result.outcome = "found"
        result.first = first.change()
        result.message = f"{judge.shown} first changes at step {found.bad}: {first.change()}"
    else:
        result.outcome = "inconclusive"
        low, high = states[found.good + 1], states[found.bad]
        result.message = (
            f"inconclusive: step {found.undecided} ({states[found.undecided].change()}) could "
            f"not be judged; the change lies between step {low.index} ({low.change()}) and "
            f"step {high.index} ({high.change()}). More runs (--repeat) or a longer "
            "min_duration_ms may settle it"
        )
    return result


def _check_pinned(lock: Lockfile, index: int, wanted: dict[str, Any]) -> None:
    """The registry locked what the state asked for (re-derived, not trusted): every
    artifact, and no other change than the state's."""
    pinned = {**artifact_pins(lock), **setting_pins(lock)}
    for name, value in pinned.items():
        if value != wanted[name]:
            raise UserError(
                f"step {index}: the registry locked {name} {show_value(value)} where the "
                f"step asks for {show_value(wanted[name])}"
            )
