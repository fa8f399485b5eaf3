"""A host-timed run and its audits, in order, the same for every runner (the local runner's
child, the venv runner, a container): the run's own test on a worker that has seen no audit;
then, after a performance test, TEST04's unique test on a new worker (``audits``), then TEST01's
accuracy pass on another (``test01``). Each worker's job is written as the run's (the unique
test's byte for byte), so a worker cannot read from its job which test it is in; no worker's
inputs cache is adopted before the last has started (one could leave the next a sign)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pinbench.errors import UserError

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


class AuditWorkerFailed(UserError):
    """A worker started for an audit answered, then failed: the run fails with its reason."""

    def __init__(self, *, audit: str, doing: str, reason: str) -> None:
        super().__init__(f"{audit}: the worker {doing} failed: {reason}")
        self.audit, self.doing, self.reason = audit, doing, reason


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
    ``evidence``. ``answered``: the samples the last worker answered (an audit's worker that
    answered, then failed, fails the run; one that refused first leaves its audit not run,
    saying why)."""
    from pinbench.evaluator.runners import test01
    from pinbench.worker.job import Evidence

    performance = test01.wanted(lock)
    why = test01.why_not(ws, lock) if performance else "not wanted"
    seals = timed_run(lock, evidence, Turn(followed=performance))
    if seals is None or not performance:
        return  # an accuracy run's answers are the host's to score
    answers = _taken(evidence)  # each sample's first timed answer, never recorded
    fresh = Evidence()
    seals = _test04(lock, evidence, fresh, say, timed_run, answered, seals, followed=why is None)
    later = _taken(fresh)
    if answers is not None and later is not None:
        answers = {**later, **answers}
    if why is not None:
        test01.audited(test01.not_run(why), evidence)
        return
    _test01(ws, lock, evidence, say, timed_run, answered, seals, answers)


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
    answered: Callable[[], int],
    seals: Seals,
    followed: bool,
) -> Seals:
    """TEST04's unique test on a new worker (into ``fresh``), its verdict in ``evidence``; the
    seals of every answer timed so far (a sample the two workers answered differently is
    unsteady)."""
    from pinbench.errors import PinbenchError
    from pinbench.evaluator.runners import audits
    from pinbench.evaluator.runners.test01 import not_run, refused

    say("TEST04: a new worker answers every sample once, timed")
    try:
        again = timed_run(lock, fresh, Turn(followed=followed, unique=True))
    except PinbenchError as exc:
        if answered():
            raise AuditWorkerFailed(
                audit="TEST04", doing="answering every sample once", reason=str(exc)
            ) from None
        audits.audited(not_run(refused(str(exc))), _summary(evidence), evidence)
        return seals
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
    timed, unsteady = dict(seals[0]), set(seals[1]) | again[1]
    for index, sealed in again[0].items():
        if timed.setdefault(index, sealed) != sealed:
            unsteady.add(index)
    return timed, unsteady


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
    seals: Seals,
    answers: Answers | None,
) -> None:
    """TEST01: a new worker for ``lock`` in accuracy mode (``test01.twin``) answers every
    sample, and its seals are compared with those of every answer timed (``seals``), the
    verdict in ``evidence``; where they differ, the timed ``answers`` are scored in the
    accuracy pass's place (``test01.by_accuracy``). A twin that answered, then failed, fails
    the run; one that refused first leaves TEST01 not run, saying why."""
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
    found = test01.verdict(seals[0], seals[1], again[0], bound)
    twin = test01.twin(lock)
    found = test01.by_accuracy(ws, twin, found, seals, again[0], answers, handed)
    test01.audited(found, evidence)
