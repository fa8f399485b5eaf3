"""A host-timed run and its audits, in order, the same for every runner (the local runner's
child, the venv runner, a container): the run's own test on a worker that has seen no audit;
then, after a performance test, TEST04's unique test on a new worker (``audits``), then TEST01's
accuracy pass on another (``test01``). TEST04's worker's job is the run's, byte for byte; it
can still tell which test it is in from the queries (LoadGen's seed is the lockfile's, and the
unique test repeats no sample), so nothing it may do there is excused: failing fails TEST04,
and its answers are held to the accuracy pass as the run's are. No worker's inputs cache is
adopted before the last has started (one could leave the next a sign)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pinbench.evaluator.runners.test01 import Answers, Seals
    from pinbench.registry.lockfile import Lockfile
    from pinbench.worker.job import Evidence, Say
    from pinbench.workspace import Workspace


@dataclass(frozen=True)
class Turn:
    """Which host-timed worker a runner starts: ``unique``, TEST04's unique test, not the
    run's own; ``followed``, another worker follows it (its inputs cache is not adopted)."""

    followed: bool = False
    unique: bool = False


TimedRun = Callable[["Lockfile", "Evidence", Turn], "Seals | None"]
"""One host-timed worker for a lockfile into its evidence, on its ``Turn``; its answers'
seals."""


Timed = tuple[str, "Seals", "Answers | None"]
"""A timed worker's name, its answers' seals and the answers it handed back."""


def run_and_audit(
    ws: Workspace,
    lock: Lockfile,
    evidence: Evidence,
    say: Say,
    timed_run: TimedRun,
    answered: Callable[[], int],
) -> None:
    """A host-timed run of ``lock`` (``timed_run``) then, after a performance test, TEST04's
    unique test on a new worker and TEST01's accuracy pass on another, their verdicts in
    ``evidence``. TEST04's worker that fails, before or after it answered, fails TEST04 (it
    was given the job the run's worker ran); its answers are held to the accuracy pass as the
    run's are. ``answered``: the samples the last worker answered (TEST01's worker that
    answered, then failed, fails the run; one that refused first leaves TEST01 not run,
    saying why)."""
    from pinbench.evaluator.runners import test01
    from pinbench.worker.job import Evidence

    performance = test01.wanted(lock)
    why = test01.why_not(ws, lock) if performance else "not wanted"
    seals = timed_run(lock, evidence, Turn(followed=performance))
    if seals is None or not performance:
        return  # an accuracy run's answers are the host's to score
    timed: list[Timed] = [("the run's test", seals, _taken(evidence))]
    fresh = Evidence()
    unique = _test04(lock, evidence, fresh, say, timed_run, followed=why is None)
    if unique is not None:
        timed.append(("TEST04's unique test", unique, _taken(fresh)))
    if why is not None:
        test01.audited(test01.not_run(why), evidence)
        return
    _test01(ws, lock, evidence, say, timed_run, answered, timed)


def _taken(evidence: Evidence) -> Answers | None:
    """The answers a host-timed worker handed back, taken out of its evidence."""
    answers = evidence.answers
    evidence.answers = evidence.scored_inputs = None
    return answers


def _test04(
    lock: Lockfile,
    evidence: Evidence,
    fresh: Evidence,
    say: Say,
    timed_run: TimedRun,
    followed: bool,
) -> Seals | None:
    """TEST04's unique test on a new worker (into ``fresh``), its verdict in ``evidence``; the
    seals of that worker's answers (None where it failed: TEST04 failed, the run INVALID)."""
    from pinbench.errors import PinbenchError
    from pinbench.evaluator.runners import audits
    from pinbench.worker.stop import RunStopped

    say("TEST04: a new worker answers every sample once, timed")
    try:
        again = timed_run(lock, fresh, Turn(followed=followed, unique=True))
    except RunStopped:
        raise
    except PinbenchError as exc:  # the job the run's worker ran: no honest reason to fail it
        failed = {
            "passed": False,
            "reason": f"the worker answering every sample once failed: {exc}",
        }
        audits.audited(failed, _summary(evidence), evidence)
        return None
    assert again is not None
    scenario, body = lock.body.scenario, lock.body
    count = body.dataset.samples if body.dataset is not None else None
    verdict = audits.verdict(
        scenario.name,
        scenario.percentile / 100.0,
        audits.Test.of(fresh),
        audits.Test.of(evidence),
        min(count, scenario.sample_count or count) if count is not None else None,
    )
    audits.audited(verdict, _summary(evidence), evidence)
    return again


def _summary(evidence: Evidence) -> dict[str, object]:
    summary = evidence.details.get("loadgen")
    return summary if isinstance(summary, dict) else {}


def _test01(
    ws: Workspace,
    lock: Lockfile,
    evidence: Evidence,
    say: Say,
    timed_run: TimedRun,
    answered: Callable[[], int],
    timed: list[Timed],
) -> None:
    """TEST01: a new worker for ``lock`` in accuracy mode (``test01.twin``) answers every
    sample, and the seals of each timed worker's answers (``timed``: the run's, TEST04's) are
    compared with its seals, where they differ the timed answers held to the accuracy pass's
    (``test01.prepared``); the verdicts in ``evidence.unscored``, finished where the run is
    recorded and its ground truth is (``test01_scoring.settle``: the run's worker's with TEST04's
    beside it, either failing fails it). A twin that answered, then failed, fails the run; one
    that refused first leaves TEST01 not run, saying why."""
    from pinbench.errors import PinbenchError
    from pinbench.evaluator.runners import test01
    from pinbench.worker.job import Evidence

    say("TEST01: a new worker answers every sample in accuracy mode")
    handed = Evidence()
    try:
        again = timed_run(test01.twin(lock), handed, Turn())
    except PinbenchError as exc:
        if answered():  # it answered, then failed: the run fails, saying so
            raise test01.TwinFailed(reason=str(exc)) from None
        test01.audited(test01.not_run(test01.refused(str(exc))), evidence)
        return
    assert again is not None and lock.body.model is not None
    bound = handed.answers if lock.body.model.postprocess is None else None
    twin = test01.twin(lock)
    found: list[dict[str, Any]] = []
    differing: list[Answers | None] = []
    for _, seals, answers in timed:
        one = test01.verdict(seals[0], seals[1], again[0], bound)
        verdict, left = test01.prepared(twin, one, seals, again[0], answers, handed)
        found.append(verdict)
        differing.append(left)
    scoring = any(d is not None for d in differing)
    evidence.unscored = test01.Unscored(
        found=found,
        differing=differing,
        accuracy=handed.answers if scoring else None,
        inputs=handed.scored_inputs if scoring else None,
        labels_checked=test01.truth_here(ws, lock),
    )  # finished where the run is recorded, with the truth (``test01_scoring.settle``)
