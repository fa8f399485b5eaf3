"""An agent is the host of its run (decision 312): it keeps the clock and runs MLPerf's audits,
and its word on them crosses to the server apart from its worker's results
(``cluster.host_word``), which drop whatever only a host writes. TEST01's timed answers that
differ from the accuracy pass's are scored on the server, with the ground truth the agent is
never handed (``test01_scoring.settle``). The word is checked as it arrives: anything an agent
does not write is refused naming it, and the run's evidence is left as it was."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.cluster.host_word import Refused, adopt, pack
from pinbench.evaluator.runners import test01
from pinbench.evaluator.runners.test01_scoring import settle
from pinbench.evaluator.scoring import load_truth
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.worker.answer_seal import seal
from pinbench.worker.answers import write_answers
from pinbench.worker.job import Evidence
from pinbench.workspace import Workspace
from tests.helpers import DIGITS

Answers = dict[int, dict[str, Any]]


def _one_hot(labels: np.ndarray, margin: float = 1.0) -> Answers:
    """Every sample's logits: ``margin`` over zero at its label."""
    out: Answers = {}
    for i, label in enumerate(labels.tolist()):
        row = np.zeros((1, 10), dtype=np.float32)
        row[0, label] = margin
        out[i] = {"logits": row}
    return out


def _crossed(evidence: Evidence, tmp_path: Path) -> Evidence:
    """``evidence``'s host word as the server takes it from an agent."""
    got = Evidence()
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    adopt(got, pack(evidence), scratch)
    assert not any(scratch.iterdir())  # its answers files read and gone
    return got


def _unscored(lock: Lockfile, accuracy: Answers, timed: Answers) -> Evidence:
    """A host's evidence after TEST01's workers: the accuracy pass answered ``accuracy``, the
    run's timed worker ``timed`` (its seals compared, differing answers prepared)."""
    handed = Evidence(answers=accuracy)
    accuracy_seals = {i: seal(a) for i, a in accuracy.items()}
    seals = ({i: seal(a) for i, a in timed.items()}, set[int]())
    found = test01.verdict(seals[0], seals[1], accuracy_seals, accuracy)
    verdict, differing = test01.prepared(
        test01.twin(lock), found, seals, accuracy_seals, timed, handed
    )
    evidence = Evidence(
        details={"audits": {"TEST04": {"passed": True}}, "clock": "host", "loadgen": {}},
        metrics={"audit_test04_passed_bool": 1.0, "loadgen_valid_bool": 1.0},
    )
    evidence.unscored = test01.Unscored(
        found=[verdict],
        differing=[differing],
        accuracy=accuracy if differing is not None else None,
        inputs=None,
        labels_checked=False,  # as on an agent, which has not the labels
    )
    return evidence


@pytest.fixture
def setting(digits: Workspace) -> tuple[Workspace, Lockfile, np.ndarray]:
    lock = service.lock(digits, parse_request(DIGITS))[0]
    truth = load_truth(digits, test01.twin(lock))
    assert truth is not None and truth.labels is not None
    return digits, lock, np.asarray(truth.labels)


def test_timed_answers_within_their_last_bits_are_scored_on_the_server_and_pass(
    setting: tuple[Workspace, Lockfile, np.ndarray], tmp_path: Path
) -> None:
    ws, lock, labels = setting
    accuracy = _one_hot(labels)
    timed = {i: {"logits": a["logits"] + np.float32(1e-6)} for i, a in accuracy.items() if i < 40}
    timed.update({i: accuracy[i] for i in range(40, 80)})
    sent = _unscored(lock, accuracy, timed)
    got = _crossed(sent, tmp_path)
    assert got.details == {"audits": {"TEST04": {"passed": True}}, "clock": "host"}
    assert got.metrics == {"audit_test04_passed_bool": 1.0}  # loadgen's are the worker's
    assert got.unscored is not None and got.unscored.differing[0] is not None
    assert sorted(got.unscored.differing[0]) == list(range(40))
    got.details["loadgen"] = {"result_validity": "VALID"}
    settle(ws, lock, got)
    verdict = got.details["audits"]["TEST01"]
    assert verdict["passed"] is True and verdict["by"] == "accuracy", verdict
    assert verdict["differ"] == 40 and verdict["compared"] == 80
    assert verdict["accuracy"]["top1"] == [1.0, 1.0]
    assert got.metrics["audit_test01_passed_bool"] == 1.0 and got.unscored is None


def test_timed_answers_that_move_the_accuracy_fail_on_the_server(
    setting: tuple[Workspace, Lockfile, np.ndarray], tmp_path: Path
) -> None:
    """Within their last bits, but each flipping its sample's top class: scored with the truth,
    top-1 moves past 1% and the run is INVALID."""
    ws, lock, labels = setting
    accuracy = _one_hot(labels, margin=1e-5)
    timed: Answers = {}
    for i in range(30):
        row = np.zeros((1, 10), dtype=np.float32)
        row[0, (int(labels[i]) + 1) % 10] = np.float32(2e-5)  # another class, by 2e-5
        timed[i] = {"logits": row}
    got = _crossed(_unscored(lock, accuracy, timed), tmp_path)
    got.details["loadgen"] = {"result_validity": "VALID"}
    settle(ws, lock, got)
    verdict = got.details["audits"]["TEST01"]
    assert verdict["passed"] is False and "moved top1 from 1 to 0.93" in verdict["reason"], verdict
    assert got.metrics["audit_test01_passed_bool"] == 0.0 and got.metrics["loadgen_valid_bool"] == 0
    assert got.details["loadgen"]["result_validity"] == "INVALID"


def test_equal_seals_need_no_answers_and_cross_as_a_verdict(
    setting: tuple[Workspace, Lockfile, np.ndarray], tmp_path: Path
) -> None:
    ws, lock, labels = setting
    accuracy = _one_hot(labels)
    sent = _unscored(lock, accuracy, {i: accuracy[i] for i in range(5)})
    assert "files" in pack(sent)["unscored"] and not pack(sent)["unscored"]["files"]
    got = _crossed(sent, tmp_path)
    settle(ws, lock, got)
    assert got.details["audits"]["TEST01"]["passed"] is True
    assert "by" not in got.details["audits"]["TEST01"]


def _npz() -> bytes:
    """One answer as an answers file holds it."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "a.npz"
        write_answers(path, {0: {"logits": np.zeros((1, 10), np.float32)}}, None)
        return path.read_bytes()


def _deep(levels: int) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for _ in range(levels):
        nested = {"a": nested}
    return nested


def _many(count: int) -> dict[str, float]:
    return {f"audit_m{i}": 1.0 for i in range(count)}


def _word() -> dict[str, Any]:
    return {
        "details": {"audits": {"TEST04": {"passed": True}}},
        "metrics": {"audit_test04_passed_bool": 1.0},
        "unscored": None,
    }


def _with(**changes: Any) -> dict[str, Any]:
    return {**_word(), **changes}


def _unscored_word(**changes: Any) -> dict[str, Any]:
    data = {"found": [{"passed": True}], "labels_checked": True, "names": {}, "files": {}}
    return _with(unscored={**data, **changes})


REFUSED = [
    ("not a mapping", ["details"], "not the details, metrics and unscored"),
    ("a key too many", {**_word(), "more": 1}, "not the details, metrics and unscored"),
    ("LoadGen's summary", _with(details={"loadgen": {}}), "details other than audits, clock"),
    ("another metric", _with(metrics={"top1": 1.0}), "a metric not named audit_"),
    ("a NaN", _with(metrics={"audit_x": float("nan")}), "not a finite number"),
    ("a string figure", _with(metrics={"audit_x": "1"}), "not a finite number"),
    ("not JSON", _with(details={"audits": {"x": b"1"}}), "not plain JSON"),
    ("too large", _with(details={"clock": "x" * (1 << 20)}), "over 1048576 B"),
    ("nested past recursion", _with(details={"audits": _deep(100_000)}), "not plain JSON"),
    ("too many figures", _with(metrics=_many(60_000)), "over 1048576 B"),
    ("three verdicts", _unscored_word(found=[{"passed": True}] * 3), "not one to 2"),
    ("a failure unsaid", _unscored_word(found=[{"passed": False}]), "without its reason"),
    ("a verdict unsaid", _unscored_word(found=[{"passed": None}]), "says not whether"),
    ("another file", _unscored_word(names={"x": [[], []]}, files={"x": b""}), "other than"),
    (
        "a broken file",
        _unscored_word(names={"accuracy": [["logits"], []]}, files={"accuracy": b"PK"}),
        "answers file 'accuracy': not a NumPy .npz file",
    ),
    (
        "answers beside a pass",
        _unscored_word(names={"timed-0": [["logits"], []]}, files={"timed-0": _npz()}),
        "beside a verdict that passed",
    ),
    (
        "no accuracy pass",
        _unscored_word(
            found=[{"passed": False, "reason": "1 of 2 samples answered otherwise"}],
            names={"timed-0": [["logits"], []]},
            files={"timed-0": _npz()},
        ),
        "timed answers to score without the accuracy pass's",
    ),
]


@pytest.mark.parametrize(("word", "reason"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_a_word_an_agent_does_not_write_is_refused_and_changes_nothing(
    word: Any, reason: str, tmp_path: Path
) -> None:
    evidence = Evidence(details={"loadgen": {"result_validity": "VALID"}}, metrics={"top1": 0.5})
    with pytest.raises(Refused) as refused:
        adopt(evidence, word, tmp_path)
    assert reason in str(refused.value), refused.value
    assert evidence == Evidence(
        details={"loadgen": {"result_validity": "VALID"}}, metrics={"top1": 0.5}
    )
    assert not any(tmp_path.iterdir())


def test_the_server_checks_again_that_the_answers_to_score_differ_only_in_their_last_bits(
    setting: tuple[Workspace, Lockfile, np.ndarray], tmp_path: Path
) -> None:
    """An agent that hands over answers far from the accuracy pass's as if they differed in
    their last bits: the server, where the run is recorded, finds it and fails TEST01."""
    ws, lock, labels = setting
    accuracy = _one_hot(labels)
    far = {0: {"logits": accuracy[0]["logits"] + np.float32(0.5)}}
    sent = Evidence(details={"loadgen": {}})
    sent.unscored = test01.Unscored(
        found=[{"passed": False, "compared": 1, "differ": 1, "reason": "1 of 1 samples differ"}],
        differing=[far],
        accuracy=accuracy,
        inputs=None,
        labels_checked=True,
    )
    got = _crossed(sent, tmp_path)
    got.details["loadgen"] = {"result_validity": "VALID"}
    settle(ws, lock, got)
    verdict = got.details["audits"]["TEST01"]
    assert verdict["passed"] is False and "but for their last bits (samples 0)" in verdict["reason"]
    assert got.details["loadgen"]["result_validity"] == "INVALID"


@pytest.mark.parametrize("what", ["environment", "host"])
def test_an_agents_facts_nested_past_recursion_are_refused_not_a_traceback(what: str) -> None:
    """The same check as the word's, on the facts an agent packs beside it (``OnSystem._take``)."""
    from pinbench.cluster.dispatch import AgentAnswerRefused, OnSystem

    packed = {"files": {}, "environment": {}, "host": {}, "runner": "local", what: _deep(100_000)}
    on = OnSystem("10.0.0.1:6379", "lab-a", "http://10.0.0.1:8000", "t")
    with pytest.raises(AgentAnswerRefused, match=f"{what} is not plain JSON"):
        on._take(None, None, Evidence(), packed)  # type: ignore[arg-type]
