"""An accuracy run's answers as they cross from the evaluator to the host (``answers.npz``).

Each output's values for every sample answered, flattened into one array, with each sample's
shape beside them and the sample indexes in order: one array per output however ragged its
samples (a detector's boxes). The host reads the file with NumPy, never unpickling, after
checking that what it unpacks fits ``MAX_BYTES``; names are given in ``result.json``. A
generating run's answer to a sample is its text (``as_answer``, ``text_of``).
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ANSWERS = "answers.npz"
MAX_BYTES = 2 * 1024 * 1024 * 1024
"""Cap on what the file unpacks to (read into memory): every sample's outputs and inputs."""

MAX_ROWS = 10_000_000
"""The most samples the file may hold answers or scored inputs for (``bounds.SAMPLE_COUNT``:
what LoadGen holds): each becomes a Python object on the host, so their count is bounded
before any is made."""

MAX_AXES = 32
"""The most axes a sample's output may have (NumPy's own limit is 64)."""

STORED_OR_DEFLATED = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
"""The members NumPy's ``savez`` and ``savez_compressed`` write; any other is refused."""

TEXT = "text"
"""The output a generating run's answer is given under (``worker.generation``)."""
MAX_TEXT_BYTES = 1024 * 1024
"""The longest answer text the host reads, in UTF-8 bytes: as a prompt's line
(``lines.MAX_LINE_BYTES``), some 250,000 tokens, four times the most ``max_new_tokens``
allows."""

Array = npt.NDArray[Any]
Answers = dict[int, dict[str, Array]]


class AnswersUnreadable(ValueError):
    """The answers file is not one this module writes; its message says why."""


def as_answer(text: str) -> dict[str, Array]:
    """A generated answer as it crosses to the host: its text's UTF-8 bytes, one row, under
    ``TEXT``."""
    return {TEXT: np.frombuffer(text.encode("utf-8"), dtype=np.uint8).reshape(1, -1)}


def text_of(answer: dict[str, Array]) -> str:
    """The text of an answer ``as_answer`` made; ``AnswersUnreadable`` for anything else: other
    outputs, another dtype or shape, more than ``MAX_TEXT_BYTES``, bytes that are not UTF-8."""
    value = answer.get(TEXT)
    if set(answer) != {TEXT} or value is None or value.dtype != np.uint8 or value.ndim != 2:
        raise AnswersUnreadable(f"it is not one text (UTF-8 bytes under {TEXT!r}, one row)")
    if value.shape[0] != 1 or value.size > MAX_TEXT_BYTES:
        raise AnswersUnreadable(
            f"it holds {value.size} bytes in {value.shape[0]} rows: one text of at most "
            f"{MAX_TEXT_BYTES} bytes"
        )
    try:
        return value.tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AnswersUnreadable(f"it is not UTF-8 ({exc.reason} at byte {exc.start})") from None


def write_answers(
    path: Path, answers: Answers, inputs: dict[str, Array] | None
) -> tuple[list[str], list[str]]:
    """Write ``answers`` (and the scored ``inputs``) to ``path``; return the output and input
    names, in the order the file numbers them. An output whose samples differ in dtype or in
    their number of axes is refused (``AnswersUnreadable``)."""
    order = sorted(answers)
    names = sorted({name for answer in answers.values() for name in answer})
    arrays: dict[str, Array] = {"index": np.asarray(order, dtype=np.int64)}
    for k, name in enumerate(names):
        values = [np.asarray(answers[i][name]) for i in order if name in answers[i]]
        if len(values) != len(order):
            raise AnswersUnreadable(f"output {name!r} is missing for some samples")
        if len({(v.dtype, v.ndim) for v in values}) > 1:
            raise AnswersUnreadable(f"output {name!r} differs in dtype or axes between samples")
        arrays[f"v{k}"] = np.concatenate([v.ravel() for v in values])
        arrays[f"s{k}"] = np.asarray([v.shape for v in values], dtype=np.int64)
    given = sorted(inputs or {})
    for k, name in enumerate(given):
        assert inputs is not None
        array = np.asarray(inputs[name])
        if array.dtype == object:  # samples of sizes of their own (``ragged``): values, shapes
            arrays[f"i{k}"] = np.concatenate([np.ravel(v) for v in array])
            arrays[f"j{k}"] = np.asarray([np.shape(v) for v in array], dtype=np.int64)
        else:
            arrays[f"i{k}"] = array
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return names, given


def read_answers(
    path: Path, names: list[str], inputs: list[str]
) -> tuple[Answers, dict[str, Array]]:
    """The answers and scored inputs written by ``write_answers`` under ``names`` and
    ``inputs``; ``AnswersUnreadable`` for anything else."""
    try:
        with zipfile.ZipFile(path) as packed:
            infos = packed.infolist()
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise AnswersUnreadable(f"not a NumPy .npz file: {exc}") from None
    unpacked = sum(info.file_size for info in infos)
    members = {info.filename for info in infos}
    odd = [
        i.filename for i in infos if i.compress_type not in STORED_OR_DEFLATED or i.flag_bits & 1
    ]
    if odd:
        raise AnswersUnreadable(f"member {odd[0]!r} is encrypted or compressed otherwise")
    if unpacked > MAX_BYTES:
        raise AnswersUnreadable(f"it unpacks to {unpacked} bytes, over the {MAX_BYTES} cap")
    wanted = {"index", *(f"{p}{k}" for k in range(len(names)) for p in "vs")}
    wanted |= {f"i{k}" for k in range(len(inputs))}
    wanted |= {f"j{k}" for k in range(len(inputs)) if f"j{k}.npy" in members}  # ragged
    if members != {f"{m}.npy" for m in wanted}:
        raise AnswersUnreadable("its arrays are not the outputs and inputs result.json names")
    try:  # within the declared sizes above; whatever a member holds, it is not a traceback
        with np.load(path, allow_pickle=False) as npz:
            found = {m: npz[m] for m in wanted}
    except Exception as exc:  # zipfile's, zlib's, NumPy's (a header past memory) errors
        raise AnswersUnreadable(f"unreadable: {type(exc).__name__}: {exc}") from None
    index = found["index"]
    if index.dtype != np.int64 or index.ndim != 1 or index.size > MAX_ROWS:
        raise AnswersUnreadable(f"its sample indexes are not at most {MAX_ROWS} int64 values")
    if len(set(index.tolist())) != index.size:
        raise AnswersUnreadable("its sample indexes are not distinct int64 values")
    answers: Answers = {int(i): {} for i in index}
    for k, name in enumerate(names):
        each = _unpacked(found[f"v{k}"], found[f"s{k}"], index.size, f"output {name!r}")
        for i, value in zip(index.tolist(), each, strict=True):
            answers[i][name] = value
    scored: dict[str, Array] = {}
    for k, name in enumerate(inputs):
        if f"j{k}" not in found:
            scored[name] = found[f"i{k}"]
            continue
        shapes = found[f"j{k}"]
        if shapes.ndim != 2 or shapes.shape[0] > MAX_ROWS:
            raise AnswersUnreadable(f"input {name!r} has shapes for more than {MAX_ROWS} samples")
        rows = _unpacked(found[f"i{k}"], shapes, shapes.shape[0], f"input {name!r}")
        scored[name] = np.empty(len(rows), dtype=object)
        for i, row in enumerate(rows):
            scored[name][i] = row
    return answers, scored


def _unpacked(values: Array, shapes: Array, count: int, what: str) -> list[Array]:
    """``count`` arrays, each of its shape, out of their values laid end to end."""
    if values.ndim != 1 or shapes.dtype != np.int64 or shapes.ndim != 2:
        raise AnswersUnreadable(f"{what} is not values with their shapes")
    if shapes.shape[0] != count or (shapes < 0).any():
        raise AnswersUnreadable(f"{what} has {shapes.shape[0]} shapes for {count} samples")
    if shapes.shape[1] > MAX_AXES:
        raise AnswersUnreadable(f"{what} has {shapes.shape[1]} axes, over {MAX_AXES}")
    listed = shapes.tolist()
    sizes = [math.prod(shape) for shape in listed]  # Python's integers: no wrap-around
    if sum(sizes) != values.size:
        raise AnswersUnreadable(f"{what}'s shapes do not add up to its values")
    out, at = [], 0
    for i, (shape, size) in enumerate(zip(listed, sizes, strict=True)):
        try:
            out.append(values[at : at + size].reshape(shape))
        except ValueError as exc:  # a shape NumPy cannot make, whatever its size says
            raise AnswersUnreadable(f"{what}: sample {i}: {exc}") from None
        at += size
    return out
