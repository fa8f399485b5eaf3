"""An accuracy run's answers as the host reads them (``worker.answers``, issue 63): what
``write_answers`` writes comes back as it was, ragged or not; anything else a worker (or a
container, or an agent) hands over is refused naming why, never a traceback and never a
number. The cases are an attacker's review's: each escaped as a Python error or was accepted
before it was held here."""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from pinbench.worker.answers import ANSWERS, write_answers
from pinbench.worker.results import FORMAT, InvalidResults, WorkerResult, read_results

LOCK = "a" * 64


def _result(out: Path, names: list[str], inputs: list[str]) -> None:
    np.save(out / "latencies.npy", np.ones(3, dtype=np.int64))
    result = WorkerResult(
        format=FORMAT,
        lockfile=LOCK,
        status="succeeded",
        error=None,
        metrics={},
        details={},
        frameworks={},
        environment={},
        latencies=True,
        outputs=False,
        answers=names,
        scored_inputs=inputs,
    )
    (out / "result.json").write_bytes(msgspec.json.encode(result))


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _members() -> dict[str, bytes]:
    return {
        "index.npy": _npy(np.arange(2, dtype=np.int64)),
        "v0.npy": _npy(np.zeros(20, dtype=np.float32)),
        "s0.npy": _npy(np.array([[1, 10], [1, 10]], dtype=np.int64)),
    }


def _zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", method) as packed:
        for name, data in members.items():
            packed.writestr(name, data)


def _flip(path: Path, after: bytes, count: int) -> None:
    raw = bytearray(path.read_bytes())
    at = raw.find(after) + len(after) + 60
    for i in range(at, at + count):
        raw[i] ^= 0x55
    path.write_bytes(bytes(raw))


def _bad_crc(path: Path) -> None:
    _zip(path, _members())
    _flip(path, b"index.npy", 1)


def _bad_deflate(path: Path) -> None:
    _zip(path, _members(), zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    at = raw.find(b"index.npy") + len("index.npy")
    for i in range(at, at + 30):
        raw[i] ^= 0x55
    path.write_bytes(bytes(raw))


def _encrypted(path: Path) -> None:
    _zip(path, _members())
    raw = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = 0
        while (at := raw.find(signature, at)) != -1:
            raw[at + offset] |= 1
            at += 4
    path.write_bytes(bytes(raw))


def _header(shape: int) -> bytes:
    text = b"{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % shape
    text += b" " * (118 - len(text)) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text


def _with(**changed: bytes) -> Callable[[Path], None]:
    """The good members with ``changed`` put in; none at all: a file that is no zip."""

    def build(path: Path) -> None:
        if changed:
            _zip(path, {**_members(), **changed})
        else:
            path.write_bytes(b"not a zip")

    return build


# (why, the file, what the refusal says)
MALFORMED: list[tuple[str, Callable[[Path], None], str]] = [
    ("a member whose bytes fail their CRC", _bad_crc, "unreadable"),
    ("deflated bytes that do not inflate", _bad_deflate, "unreadable"),
    ("an encrypted member", _encrypted, "encrypted or compressed otherwise"),
    ("a bzip2 member, which NumPy never writes", lambda p: _zip(p, _members(), 12), "otherwise"),
    ("a header claiming 32 EiB of values", _with(**{"v0.npy": _header(2**62)}), "unreadable"),
    (
        "shapes whose product wraps to the values' count in int64",
        _with(
            **{
                "v0.npy": _npy(np.zeros(4, dtype=np.float32)),
                "s0.npy": _npy(np.array([[3, 6148914691236517206]] * 2, dtype=np.int64)),
            }
        ),
        "do not add up",
    ),
    (
        "a sample of 70 axes",
        _with(**{"s0.npy": _npy(np.array([[1] * 68 + [1, 10]] * 2, dtype=np.int64))}),
        "70 axes, over 32",
    ),
    (
        "a shape NumPy cannot make, though its product is the values' count",
        _with(
            **{
                "v0.npy": _npy(np.zeros(0, dtype=np.float32)),
                "s0.npy": _npy(np.array([[0, 2**62, 2**62]] * 2, dtype=np.int64)),
            }
        ),
        "sample 0: ",
    ),
    ("a member result.json does not name", _with(**{"x.npy": _npy(np.zeros(1))}), "names"),
    (
        "the same sample twice",
        _with(**{"index.npy": _npy(np.array([0, 0], dtype=np.int64))}),
        "distinct",
    ),
    ("no zip at all", _with(), "not a NumPy .npz"),
]


@pytest.mark.parametrize(("build", "says"), [pytest.param(b, s, id=why) for why, b, s in MALFORMED])
def test_malformed_answers_are_refused_naming_why(
    tmp_path: Path, build: Callable[[Path], None], says: str
) -> None:
    build(tmp_path / ANSWERS)
    _result(tmp_path, ["y"], [])
    with pytest.raises(InvalidResults, match=f"{ANSWERS}: .*{says}"):
        read_results(tmp_path, LOCK)


def test_answers_come_back_as_written_ragged_or_not(tmp_path: Path) -> None:
    f32 = np.float32
    answers: dict[int, dict[str, np.ndarray[Any, Any]]] = {
        0: {"boxes": np.zeros((1, 3, 4), f32), "scores": np.ones((1, 3), f32)},
        1: {"boxes": np.ones((1, 0, 4), f32), "scores": np.ones((1, 0), f32)},
        2: {"boxes": np.arange(8, dtype=f32).reshape(1, 2, 4), "scores": np.ones((1, 2), f32)},
    }
    mask = np.ones((3, 5), np.int64)
    names, inputs = write_answers(tmp_path / ANSWERS, answers, {"attention_mask": mask})
    _result(tmp_path, names, inputs)
    _, evidence = read_results(tmp_path, LOCK)
    assert evidence.answers is not None and evidence.scored_inputs is not None
    assert sorted(evidence.answers) == [0, 1, 2]
    for i, answer in answers.items():
        for name, value in answer.items():
            got = evidence.answers[i][name]
            assert got.dtype == value.dtype and np.array_equal(got, value)
    assert np.array_equal(evidence.scored_inputs["attention_mask"], mask)


def test_inputs_of_sizes_of_their_own_cross_as_each_samples_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scored input whose samples keep their own lengths (an x-vector's mask) crosses as
    its values and each sample's shape; the host takes such an input only where the model
    can make one (``row_rules.may_differ``), and bounds how many rows it unpacks."""
    from pinbench.evaluator.scoring import AnswersRefused, _check
    from pinbench.worker import answers as module

    answers = {i: {"y": np.ones((1, 2), np.float32)} for i in range(2)}
    mask = np.empty(2, dtype=object)
    mask[0], mask[1] = np.ones(3, np.int32), np.ones(5, np.int32)
    names, inputs = write_answers(tmp_path / ANSWERS, answers, {"attention_mask": mask})
    _result(tmp_path, names, inputs)
    _, evidence = read_results(tmp_path, LOCK)
    assert evidence.answers is not None and evidence.scored_inputs is not None
    got = evidence.scored_inputs["attention_mask"]
    assert got.dtype == object and [a.tolist() for a in got] == [[1] * 3, [1] * 5]
    _check(evidence.answers, evidence.scored_inputs, 2, 2, True, frozenset({"attention_mask"}))
    with pytest.raises(AnswersRefused, match="input 'attention_mask' is not a numeric array"):
        _check(evidence.answers, evidence.scored_inputs, 2, 2, True, frozenset())
    three = np.empty(3, dtype=object)  # the dataset's rows: more than the bound below
    three[0], three[1], three[2] = np.ones(1), np.ones(0), np.ones(0)
    write_answers(tmp_path / ANSWERS, answers, {"attention_mask": three})
    monkeypatch.setattr(module, "MAX_ROWS", 2)
    with pytest.raises(InvalidResults, match="has shapes for more than 2 samples"):
        read_results(tmp_path, LOCK)


def test_a_generated_answer_crosses_as_its_text_and_anything_else_is_refused(
    tmp_path: Path,
) -> None:
    """A generating run's answers are texts (issue 64): each comes back as written, empty or
    not ASCII; an answer with another output, another dtype or shape, more bytes than an answer
    may hold, or bytes that are not UTF-8, is refused naming why."""
    from pinbench.worker.answers import (
        MAX_TEXT_BYTES,
        TEXT,
        AnswersUnreadable,
        as_answer,
        text_of,
    )

    texts = ["", " Grüße, 世界 🎙", "a\nb\tc"]
    names, inputs = write_answers(tmp_path / ANSWERS, dict(enumerate(map(as_answer, texts))), None)
    _result(tmp_path, names, inputs)
    _, evidence = read_results(tmp_path, LOCK)
    assert evidence.answers is not None
    assert [text_of(evidence.answers[i]) for i in range(3)] == texts
    u8 = np.uint8
    refused = [
        ({TEXT: np.frombuffer(b"\xff\xfe", u8).reshape(1, -1)}, "not UTF-8"),
        ({TEXT: np.frombuffer(b"\xed\xa0\x80", u8).reshape(1, -1)}, "not UTF-8"),  # a surrogate
        ({**as_answer("a"), "logits": np.zeros((1, 2), np.float32)}, "not one text"),
        ({TEXT: np.zeros((1, 3), np.int32)}, "not one text"),
        ({TEXT: np.zeros((2, 3), u8)}, "2 rows"),
        ({TEXT: np.full((1, MAX_TEXT_BYTES + 1), 97, u8)}, f"at most {MAX_TEXT_BYTES}"),
    ]
    for answer, says in refused:
        with pytest.raises(AnswersUnreadable, match=says):
            text_of(answer)
