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
one that differs (or a sample the timed workers answered twice, differently) fails the run, INVALID, its reason with LoadGen's. Every answer is compared, not a
share: a seal is 16 bytes.

Only where each sample is answered alone (batch size 1): a batch's answers may differ in their
last bits with the batch they were in, so at a larger batch size TEST01 is not run and the run
says so (``details.audits.TEST01.passed`` null, with the reason).

What it cannot catch: a system under test that computed every answer before it said it was
ready (while loading) and answers from that table in both modes. MLPerf's rules forbid it; no
audit of answers sees it.
"""

from __future__ import annotations

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
    dataset without labels (no accuracy run of it exists to answer as)."""
    from pinbench.evaluator.runners.store_files import store_paths
    from pinbench.registry.names import Kind
    from pinbench.worker.datasets import load_samples
    from pinbench.worker.job import files_of

    body = lock.body
    if body.batch_size != 1:
        return BATCHED
    assert body.dataset is not None
    paths = store_paths(ws, lock, Kind.DATASET, truth=True)
    if not load_samples(body.dataset, files_of(lock, Kind.DATASET), paths).has_truth:
        return NO_LABELS
    return None


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
