"""The gate: a candidate — one run, or several runs of one lockfile — judged against its
series' past runs under the series' thresholds (``stats.compare``), with an exit code CI can
act on (decisions 252, 264).

Every current threshold of the series is judged; the gate's outcome is ``regressed`` when one
metric regressed, else ``inconclusive`` when one is inconclusive, else ``passed``. Exit codes: 0
passed, 1 regressed, 2 inconclusive (the same numbers as a user error and a usage error: the
``--json`` object, printed only when the gate judged, tells them apart). A series with no
threshold, a candidate that is not in a series or did not record a thresholded metric is
refused (a user error): a gate that judged nothing never passes.

The candidate runs (at most ``bounds.GATE_CANDIDATES``) must be runs of one lockfile, in one
series, with the same settings (runner, besides what the lockfile pins); a run that is not is
refused, named. The history is the series' runs that started before the first candidate run
with the candidate's settings (``members.alike``: runner, framework name, threads, limits),
less every run an earlier gate found regressed (``alerts.regressed_runs``): a candidate
rejected once is never the baseline of the next one (a pull request's slower model, gated
twice, would otherwise pass the second time against itself). They stay in the series, shown
and searched for change points; ``left_out`` names them. A run LoadGen called INVALID
(``loadgen_valid_bool`` 0: its numbers are not a result) is left out of the window too unless
the gate is asked to include such runs (``invalid`` names them); an INVALID candidate is
judged and named (``invalid_candidates``). So is a run that ran UNSANDBOXED (``unsandboxed_bool``
1: code or the model's own operations ran outside the sandbox, its figures its own word; issue
84, item 5): left out unless asked for (``unsandboxed_left_out``), and named where compared
(``unsandboxed``). A compared run timed while other work took the machine (``contended_bool``)
is compared and named (``contended``).
A statistical threshold on a location of the raw framework-call latencies
(``stats.POOLED_METRICS``: their median or mean) is judged on the raw latencies of the
candidate runs and of each run in its window (read once a gate call as lists of floats; a
pooled side holds at most ``significance.MAX_POOLED`` of them); any other metric, a tail
percentile included, on the runs' figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pinbench.bounds import GATE_CANDIDATES
from pinbench.errors import UserError
from pinbench.run_figures import contended, unsandboxed
from pinbench.series.errors import InvalidCandidates
from pinbench.series.members import (
    INVALID_RUN,
    OTHER_SETTINGS,
    REGRESSED,
    UNSANDBOXED_RUN,
    Member,
    invalid,
    left_out_because,
    resolve,
    series_of_run,
    settings_of,
)
from pinbench.series.names import SeriesKey
from pinbench.series.stats import POOLED_METRICS, STATISTICAL, Comparison, Observation, compare
from pinbench.series.thresholds import Versioned, thresholds
from pinbench.workspace import Workspace

EXIT_CODES = {"passed": 0, "regressed": 1, "inconclusive": 2}


@dataclass(frozen=True, slots=True)
class Judged:
    threshold: Versioned
    comparison: Comparison

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "metric": c.metric,
            "verdict": c.verdict,
            "test": c.test,
            "baseline": c.baseline,
            "candidate": c.candidate,
            "change": c.change,
            "p_value": c.p_value,
            "alpha": c.alpha,
            "runs_used": c.runs_used,
            "reruns_needed": c.reruns_needed,
            "run_p_value": c.run_p_value,
            "candidates": list(c.candidates),
            "reason": c.reason,
            "threshold": self.threshold.to_json(),
        }


@dataclass(frozen=True, slots=True)
class GateResult:
    series: str
    runs: list[str]
    """The candidate runs, in the order they started."""
    history: list[str]
    judged: list[Judged]
    left_out: list[str] = field(default_factory=list)
    """Earlier runs with the candidate's settings left out of the window: a gate found each
    regressed."""
    invalid: list[str] = field(default_factory=list)
    """Earlier runs with the candidate's settings left out of the window because LoadGen
    called them INVALID (``members.invalid``), unless the gate was asked to include them."""
    invalid_candidates: list[str] = field(default_factory=list)
    """The candidate runs LoadGen called INVALID: judged, and said."""
    include_invalid: bool = False
    """The gate was asked to compare with runs LoadGen called INVALID: it records no alert."""
    unsandboxed_left_out: list[str] = field(default_factory=list)
    """Earlier runs with the candidate's settings left out of the window because they ran
    UNSANDBOXED (``members.unsandboxed_run``), unless the gate was asked to include them."""
    include_unsandboxed: bool = False
    """The gate was asked to compare with runs that ran UNSANDBOXED: it records no alert."""
    contended: list[str] = field(default_factory=list)
    """The runs compared (window and candidates) that were timed while other work took the
    machine (``contended_bool``): compared, and said."""
    unsandboxed: list[str] = field(default_factory=list)
    """The runs compared (window and candidates) whose system under test ran code or
    operations of its own outside a sandbox (``unsandboxed_bool``): compared, and said."""
    other_settings: dict[str, int] = field(default_factory=dict)
    """Earlier runs of the series never compared with the candidate, by the runner they ran
    on, because their settings (``members.settings_of``) differ from its."""

    @property
    def run(self) -> str:
        """The newest candidate run: the one an alert names."""
        return self.runs[-1]

    @property
    def outcome(self) -> str:
        verdicts = {j.comparison.verdict for j in self.judged}
        for outcome in ("regressed", "inconclusive"):
            if outcome in verdicts:
                return outcome
        return "passed"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def to_json(self) -> dict[str, Any]:
        return {
            "series": self.series,
            "run": self.run,
            "runs": self.runs,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "history": self.history,
            "left_out": self.left_out,
            "invalid": self.invalid,
            "invalid_candidates": self.invalid_candidates,
            "contended": self.contended,
            "unsandboxed": self.unsandboxed,
            "include_invalid": self.include_invalid,
            "unsandboxed_left_out": self.unsandboxed_left_out,
            "include_unsandboxed": self.include_unsandboxed,
            "other_settings": self.other_settings,
            "comparisons": [j.to_json() for j in self.judged],
        }


def observation(
    member: Member, metric: str, raw: Callable[[str], list[float]] | None
) -> Observation:
    """One run's figure, with its raw latencies when ``raw`` reads them for this metric."""
    latencies = None
    if raw is not None and metric in POOLED_METRICS and member.latencies_sha256:
        latencies = raw(member.latencies_sha256)
    return Observation(member.metrics[metric], latencies)


def judge(
    key: SeriesKey,
    members: list[Member],
    candidates: str | list[str],
    current: list[Versioned],
    raw: Callable[[str], list[float]],
    rejected: frozenset[str] | set[str] = frozenset(),
    *,
    include_invalid: bool = False,
    include_unsandboxed: bool = False,
) -> GateResult:
    """Pure over what it is given: ``members`` (the series, oldest first, holding every
    candidate run), the current thresholds, ``raw`` (a latency blob's values by digest) and
    the runs earlier gates found regressed (``rejected``: never in the window). A run LoadGen
    called INVALID is not in the window unless ``include_invalid``, nor one that ran
    UNSANDBOXED unless ``include_unsandboxed``."""
    if not current:
        raise UserError(
            f"series {key} has no thresholds: set one with `pinbench series threshold set "
            f"{key} METRIC --test ...`; a gate that judged nothing would pass anything"
        )
    ids = [candidates] if isinstance(candidates, str) else candidates
    at = {m.run_id: i for i, m in enumerate(members)}
    cands = [members[i] for i in sorted(at[r] for r in ids)]
    first = cands[0]
    _one_candidate(cands)
    earlier = members[: at[first.run_id]]
    compared_on = settings_of(first)
    why = {
        m.run_id: left_out_because(
            m,
            compared_on,
            rejected,
            include_invalid=include_invalid,
            include_unsandboxed=include_unsandboxed,
        )
        for m in earlier
    }
    past = [m for m in earlier if not why[m.run_id]]
    left_out = [m.run_id for m in earlier if why[m.run_id] == REGRESSED]
    unread = [m.run_id for m in earlier if why[m.run_id] == INVALID_RUN]
    others: dict[str, int] = {}
    for m in earlier:
        if why[m.run_id] == OTHER_SETTINGS:
            others[m.runner] = others.get(m.runner, 0) + 1
    judged = []
    for versioned in current:
        t = versioned.threshold
        for cand in cands:
            if t.metric not in cand.metrics:
                raise UserError(
                    f"run {cand.run_id[:8]} recorded no {t.metric!r}, which series {key}'s "
                    f"threshold v{versioned.version} judges"
                )
        having = [m for m in past if t.metric in m.metrics][-t.window :]
        reader = raw if t.test in STATISTICAL else None
        history = [observation(m, t.metric, reader) for m in having]
        runs = [observation(c, t.metric, reader) for c in cands]
        judged.append(Judged(versioned, compare(t, history, runs)))
    return GateResult(
        str(key),
        [c.run_id for c in cands],
        [m.run_id for m in past],
        judged,
        left_out=left_out,
        other_settings=others,
        invalid=unread,
        invalid_candidates=[c.run_id for c in cands if invalid(c)],
        contended=[m.run_id for m in [*past, *cands] if contended(m.metrics)],
        unsandboxed=[m.run_id for m in [*past, *cands] if unsandboxed(m.metrics)],
        include_invalid=include_invalid,
        unsandboxed_left_out=[m.run_id for m in earlier if why[m.run_id] == UNSANDBOXED_RUN],
        include_unsandboxed=include_unsandboxed,
    )


def latencies(ws: Workspace, digest: str) -> list[float]:
    """A run's raw latencies (an int64 ``.npy`` blob), verified, then read without NumPy."""
    from pinbench.artifacts.digest import Digest
    from pinbench.artifacts.npy_plain import numbers_of

    path = ws.store.verify(Digest(digest), label=f"latencies {digest[:12]}")
    try:
        return numbers_of(path)
    except ValueError as exc:
        raise UserError(f"the latencies blob {digest[:12]} is not a 1-D array: {exc}") from None


def _one_candidate(cands: list[Member]) -> None:
    """Refuse candidate runs that are not runs of one lockfile with one runner: each is
    named with what differs from the first."""
    first = cands[0]
    for c in cands[1:]:
        if c.lock.digest != first.lock.digest:
            raise UserError(
                f"run {c.run_id[:8]} ran lockfile {c.lock.digest.hex[:12]}, not "
                f"{first.lock.digest.hex[:12]} as run {first.run_id[:8]}: the runs a gate "
                "judges together are runs of one lockfile"
            )
        if settings_of(c) != settings_of(first):
            raise UserError(
                f"run {c.run_id[:8]} ran on runner {c.runner}, not {first.runner} as run "
                f"{first.run_id[:8]}: the runs a gate judges together share their settings"
            )


def gate(
    ws: Workspace,
    run_ids: str | Sequence[str],
    *,
    series: str | None = None,
    alert: bool = True,
    alert_past: Callable[[str], bool] | None = None,
    include_invalid: bool = False,
    include_unsandboxed: bool = False,
) -> GateResult:
    """Judge recorded runs — one, or several runs of one lockfile (``bounds.GATE_CANDIDATES``)
    — against their series; a regression is recorded as an alert per regressed metric, on the
    newest candidate run (``alert``), when the candidate runs are the newest runs of their
    series (none other after the first of them), or when ``alert_past(model)`` says the caller
    may alert on the model's past runs (a server: its namespace's publishers). Otherwise the
    gate answers without recording: gating old runs again would let anyone who may run fill a
    team's alerts, and take a team's earlier runs out of every later window (the runs an alert
    names are never a baseline again). ``include_invalid``: runs LoadGen called INVALID
    are in the window too (by default they are left out, ``GateResult.invalid``), and the
    gate answers without recording an alert: a baseline of runs that are no result must not
    take a candidate out of every later window. ``include_unsandboxed``: the same for runs that
    ran UNSANDBOXED (their figures are their own word)."""
    from pinbench.series.alert_rows import regressed_runs

    given = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    if not GATE_CANDIDATES.holds(len(given)):
        raise InvalidCandidates(count=len(given), field="runs")
    full = _full_ids(ws, given)
    key, members = series_of_run(ws, full[0])
    if series is not None:
        named, _ = resolve(ws, series)
        if named != key:
            raise UserError(f"run {full[0][:8]} belongs to series {key}, not {named}")
    _in_series(ws, key, members, full)

    loaded: dict[str, list[float]] = {}

    def raw(digest: str) -> list[float]:  # each blob read once a gate call
        if digest not in loaded:
            loaded[digest] = latencies(ws, digest)
        return loaded[digest]

    rejected = regressed_runs(ws, str(key))
    current = thresholds(ws, key)
    result = judge(
        key,
        members,
        full,
        current,
        raw,
        rejected,
        include_invalid=include_invalid,
        include_unsandboxed=include_unsandboxed,
    )
    newest = {m.run_id for m in members[-len(result.runs) :]} == set(result.runs)
    # a window of runs that are no result raises none
    alert = alert and not include_invalid and not include_unsandboxed
    if alert and (newest or (alert_past is not None and alert_past(key.model))):
        from pinbench.series.alert_rows import raise_alert

        for j in result.judged:
            if j.comparison.verdict == "regressed":
                raise_alert(
                    ws,
                    series=result.series,
                    metric=j.comparison.metric,
                    kind="regression",
                    run_id=result.run,
                    detail={**j.to_json(), "runs": result.runs},
                )
    return result


def _full_ids(ws: Workspace, given: list[str]) -> list[str]:
    """Each run's full id (a prefix resolved); a run given twice is refused."""
    from pinbench.evaluator.records.run_view import locate

    with ws.reads() as rows:
        full = [str(locate(rows, r)[0]) for r in given]
    for i, run_id in enumerate(full):
        if run_id in full[:i]:
            raise UserError(f"run {run_id[:8]} is given twice: each candidate run counts once")
    return full


def _in_series(ws: Workspace, key: SeriesKey, members: list[Member], full: list[str]) -> None:
    """Refuse a candidate run that is not in the first one's series, naming it and its own."""
    held = {m.run_id for m in members}
    for run_id in full[1:]:
        if run_id not in held:
            other, _ = series_of_run(ws, run_id)  # refuses a failed or traced run by itself
            raise UserError(
                f"run {run_id[:8]} belongs to series {other}, not {key} as run {full[0][:8]}: "
                "the runs a gate judges together are runs of one series"
            )
