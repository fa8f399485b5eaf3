"""MLPerf's TEST01, as the host runs it after a host-timed performance test (issue 71, item 3;
decision 294): does the system under test answer otherwise while it is timed than in accuracy
mode?

MLPerf's TEST01 logs a seeded share of the performance run's responses
(``accuracy_log_probability``) and compares them with the accuracy run's (``verify_accuracy.py``:
the same bytes, else the accuracy within a threshold). Here the worker seals every answer it
gives while timed (``answer_seal``: sent with the answer, so fixed before the host asks
anything more), and after the test (and TEST04's worker: ``audited_run``) another worker,
started afresh for the same lockfile in accuracy mode (``twin``: its job says accuracy, as an
accuracy run's does), answers every sample once, sealing each the same way. Every sample the
timed tests answered (the run's and TEST04's) must carry the seal the accuracy pass gives it;
one that differs (or a sample the timed workers answered twice, differently) fails the run,
INVALID, its reason with LoadGen's, unless its answers may legitimately differ in their last
bits: as MLPerf's TEST01 does when its hashes differ, the accuracy pass is scored again with
each differing sample's timed answer in its place (each timed worker hands back every
sample's first answer, which the host checks against its seal), and every metric of the task
within 1% passes, the verdict saying it was by accuracy (``by_accuracy``). Every answer is
compared, not a share: a seal is 16 bytes. The comparison is made by the host that ran the
workers; the scoring, which needs the dataset's ground truth, where the run is recorded
(``test01_scoring.settle``): on a cluster, the server, as its agents are never handed the truth
(decision 312).

Only where each sample is answered alone (batch size 1): a batch's answers may differ in their
last bits with the batch they were in, so at a larger batch size TEST01 is not run and the run
says so (``details.audits.TEST01.passed`` null, with the reason).

What it cannot catch: a system under test that computed every answer before it said it was
ready (while loading) and answers from that table in both modes. MLPerf's rules forbid it; no
audit of answers sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile
    from pinbench.worker.job import Evidence
    from pinbench.workspace import Workspace

BATCHED = (
    "not run: the batch size is over 1, and a batch's answers may differ in their last bits "
    "with the batch they were in"
)
NO_LABELS = (
    "not run: the dataset has no labels, so no accuracy run of it exists to answer as (a "
    "worker in accuracy mode needs them)"
)
UNBOUND = (
    "what an accuracy run scores is the model's postprocess code's answers, not the model's "
    "outputs the seals are of: the seals are the worker's word, compared with each other only"
)
SHOWN = 5
"""Samples named in a failed verdict, at most."""

Seals = tuple[dict[int, bytes], set[int]]
"""A host-timed worker's answers' seals by sample (the first each sample was given), and the
samples it answered twice, differently (``HostClock.seals``, ``.unsteady``)."""


class TwinFailed(UserError):
    """The worker answering in accuracy mode for TEST01 failed: the run fails with its reason."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"TEST01: the worker answering in accuracy mode failed: {reason}")
        self.reason = reason


def wanted(lock: Lockfile) -> bool:
    """Whether a host-timed run of ``lock`` is audited by TEST01: a performance test."""
    return lock.body.scenario.mode == "performance"


def why_not(ws: Workspace, lock: Lockfile) -> str | None:
    """Why TEST01 cannot be run for ``lock`` (None: it can): a batch size over 1, or a
    dataset without labels (no accuracy run of it exists to answer as), checked where the
    ground truth is on this machine (else by ``settle``, where the run is recorded)."""
    if lock.body.batch_size != 1:
        return BATCHED
    if truth_here(ws, lock) and not has_labels(ws, lock):
        return NO_LABELS
    return None


def truth_here(ws: Workspace, lock: Lockfile) -> bool:
    """Whether every file of the dataset's ground truth is in this machine's store: not on a
    cluster's agent, which is never handed it (``cluster.agent_run.handed``)."""
    from pinbench.artifacts.digest import Digest
    from pinbench.worker.job import pinned_files, truth_paths

    withheld = truth_paths(lock)
    return all(
        ws.store.has(Digest(f.sha256))
        for f in pinned_files(lock, "dataset", truth=True)
        if f.path in withheld
    )


def has_labels(ws: Workspace, lock: Lockfile) -> bool:
    """Whether the dataset gives ground truth an accuracy run scores against (read from the
    store, where it is: ``truth_here``)."""
    from pinbench.evaluator.runners.store_files import store_paths
    from pinbench.registry.names import Kind
    from pinbench.worker.datasets import load_samples
    from pinbench.worker.job import files_of

    dataset = lock.body.dataset
    assert dataset is not None
    paths = store_paths(ws, lock, Kind.DATASET, truth=True)
    return load_samples(dataset, files_of(lock, Kind.DATASET), paths).has_truth


def refused(reason: str) -> str:
    """Why TEST01 was not run where the worker in accuracy mode refused the lockfile before it
    answered a sample (a model no accuracy run of this dataset can score)."""
    return f"not run: a worker in accuracy mode refused this lockfile before it answered: {reason}"


def twin(lock: Lockfile) -> Lockfile:
    """``lock`` in accuracy mode: the same model, inputs, environment and batch size."""
    import msgspec

    from pinbench.registry.lockfile import Lockfile

    body = lock.body
    scenario = msgspec.structs.replace(body.scenario, mode="accuracy")
    request = msgspec.structs.replace(body.request, scenario=scenario)
    return Lockfile(msgspec.structs.replace(body, scenario=scenario, request=request))


def not_run(reason: str) -> dict[str, Any]:
    return {"passed": None, "reason": reason}


def verdict(
    timed: dict[int, bytes],
    unsteady: set[int],
    accuracy: dict[int, bytes],
    handed: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """TEST01's verdict from the seals of the timed tests' answers (``timed``, sample index to
    seal; ``unsteady``: samples answered twice, differently) and of the accuracy pass's, each
    of those checked against the answer the accuracy worker handed back to be scored
    (``handed``); None where what is scored is not what was sealed (a model's postprocess
    code's answers): the seals are then the worker's word (``bound`` false)."""
    from pinbench.worker.answer_seal import seal

    differ = sorted(i for i, s in timed.items() if accuracy.get(i) != s)
    out: dict[str, Any] = {
        "compared": len(timed),
        "differ": len(differ),
        "unsteady": len(unsteady),
        "bound": handed is not None,
        "passed": not differ and not unsteady and bool(timed),
    }
    false = (
        sorted(i for i, s in accuracy.items() if i not in handed or seal(handed[i]) != s)
        if handed is not None
        else []
    )
    if handed is None:
        out["unbound"] = UNBOUND
    if not timed:
        out["reason"] = "the timed tests answered no sample"
    elif false:
        out["passed"] = False
        out["false"] = len(false)
        out["reason"] = (
            f"the accuracy worker's seals of {len(false)} samples are not of the answers it "
            f"handed back to be scored (samples {', '.join(map(str, false[:SHOWN]))})"
        )
    elif differ or unsteady:
        named = sorted(set(differ) | unsteady)[:SHOWN]
        out["samples"] = named
        what = []
        if differ:
            what.append(
                f"{len(differ)} of {len(timed)} samples answered otherwise than in accuracy mode"
            )
        if unsteady:
            what.append(f"{len(unsteady)} answered twice, differently, while timed")
        out["reason"] = "; ".join(what) + f" (samples {', '.join(map(str, named))})"
    return out


def audited(test01: dict[str, Any], evidence: Evidence) -> None:
    """TEST01's verdict in the run (``audits.recorded``)."""
    from pinbench.evaluator.runners.audits import recorded

    summary = evidence.details.get("loadgen")
    loadgen = summary if isinstance(summary, dict) else None
    recorded("TEST01", test01, evidence, loadgen, str(test01.get("reason", "")))


ACCURACY_DELTA = 0.01
"""How far each of the task's metrics may move, as a share of the accuracy pass's value, when
the timed answers stand in for the accuracy pass's where their seals differ: MLPerf's TEST01
allows 1% for its 99% accuracy targets."""
LAST_BITS = 1e-4
"""How far a timed answer may be from the accuracy pass's, each number, relative to the
largest of that output's (its floor 1), and still differ only in its last bits: a reduction
summed in another order moves a float32 by about 1e-6 of the whole; an approximation of the
model moves it by far more, and would pass the metrics' 1% where few samples take it."""

Answers = dict[int, dict[str, Any]]
"""Each sample's answer as the scorer reads it (``Evidence.answers``)."""


@dataclass
class Unscored:
    """TEST01's verdicts as the host that ran its workers found them, before any timed answer
    is scored in the accuracy pass's place: that needs the dataset's ground truth, which stays
    where the run is recorded (a cluster's server; an agent is never handed it: decision 312).
    ``settle`` finishes them there."""

    found: list[dict[str, Any]]
    """Each timed worker's verdict (``verdict``, ``prepared``): the run's, then TEST04's."""
    differing: list[Answers | None]
    """Beside each verdict: the timed answers of the samples whose seals differ, each within
    its last bits of the accuracy pass's, to be scored in its place; None where the verdict
    needs no scoring."""
    accuracy: Answers | None
    """The accuracy pass's answers, handed back to be scored (None where no verdict is
    scored)."""
    inputs: dict[str, Any] | None
    """The inputs the task scores with, beside ``accuracy``."""
    labels_checked: bool
    """Whether the dataset's labels were found where the workers ran (``why_not``); if not
    (the truth is not there), ``settle`` checks them where it is."""


def prepared(
    lock: Lockfile,
    found: dict[str, Any],
    seals: Seals,
    accuracy_seals: dict[int, bytes],
    timed_answers: Answers | None,
    handed: Evidence,
) -> tuple[dict[str, Any], Answers | None]:
    """TEST01's verdict where seals differ (``found``, of ``verdict``) and the answers may
    legitimately differ in their last bits (nondeterministic kernels), as far as it goes
    without the ground truth: each differing sample's timed answer (the first the timed worker
    gave, ``timed_answers``, bound to its seal in ``seals``) must be within ``LAST_BITS`` of
    the accuracy pass's (``handed``, in accuracy mode). Failed, with the reason, where a
    differing sample's timed answer was not handed back, is not what its seal is of, or is
    further than its last bits; else those answers, to be scored in the accuracy pass's place
    (``scored``), beside the verdict as it stands (None: nothing to score, it is final)."""
    from pinbench.worker.answer_seal import seal
    from pinbench.worker.job import scored_apart

    if found["passed"] is not False or not found.get("compared") or found.get("false"):
        return found, None
    if not found["bound"] or handed.answers is None or not scored_apart(lock):
        return found, None
    timed, unsteady = seals
    differing = sorted({i for i, s in timed.items() if accuracy_seals.get(i) != s} | unsteady)
    if timed_answers is None:
        return {**found, "by_accuracy": "the timed worker handed back no answers to score"}, None
    unbound = [i for i in differing if i not in timed_answers or seal(timed_answers[i]) != timed[i]]
    if unbound:
        return {
            **found,
            "by_accuracy": f"the timed worker's answers of {len(unbound)} samples were not "
            f"handed back or are not what their seals are of (samples {_named(unbound)})",
        }, None
    far = [i for i in differing if not _last_bits(timed_answers[i], handed.answers.get(i))]
    if far:
        return {
            **found,
            "reason": f"{found['reason']}; {len(far)} of them further from the accuracy "
            f"pass's answers than their last bits ({LAST_BITS:g} of each output's largest "
            f"value; samples {_named(far)})",
        }, None
    return found, {i: timed_answers[i] for i in differing}


def _named(samples: list[int]) -> str:
    return ", ".join(map(str, samples[:SHOWN]))


def _last_bits(timed: dict[str, Any], accuracy: dict[str, Any] | None) -> bool:
    """Whether a timed answer is the accuracy pass's but for its last bits: the same outputs,
    dtypes and shapes; numbers of a floating dtype within ``LAST_BITS`` of each output's largest
    magnitude (its floor 1), any other equal."""
    import numpy as np

    if accuracy is None or set(timed) != set(accuracy):
        return False
    for name, value in timed.items():
        a, b = np.asarray(value), np.asarray(accuracy[name])
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if not np.issubdtype(a.dtype, np.floating):
            if not np.array_equal(a, b):
                return False
            continue
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            return False
        scale = max(1.0, float(np.abs(b).max(initial=0.0)))
        if float(np.abs(a - b).max(initial=0.0)) > LAST_BITS * scale:
            return False
    return True


def joined(run: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
    """TEST01's verdict over the run's timed worker (``run``) and TEST04's (``others``, kept
    under ``unique_worker``): any failing fails it, its reason named."""
    if not others:
        return run
    (unique,) = others
    out = {**run, "unique_worker": unique}
    if unique["passed"] is False:
        out["passed"] = False
        why = f"TEST04's worker: {unique.get('reason', 'its answers differ')}"
        out["reason"] = f"{run['reason']}; {why}" if run["passed"] is False else why
    return out
