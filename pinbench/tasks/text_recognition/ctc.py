"""A CTC output's alphabet (from a file of the model, or an ONNX metadata entry read without
loading the model) and its greedy decoding.

An alphabet holds one entry per line, as PaddleOCR's dict files and rapidocr's ``character``
metadata do: UTF-8, lines split on LF only (a CR before it dropped), one final line end
allowed; an entry is the whole line, so a line of one space is the space character. An empty
line is refused (it would be a class that decodes to nothing), and so is an entry of more than
``MAX_ENTRY_CHARS`` code points or an alphabet of more classes than an output may score
(``bounds.CLASSES``: counted before the lines are split, so a file of millions of lines is not
held as millions of strings). Classes are the alphabet's entries in order, then ``" "`` where
``space`` is set (PaddleOCR's ``use_space_char``), with the blank inserted at its declared
index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pinbench import bounds
from pinbench.errors import UserError
from pinbench.registry.ports import Ctc
from pinbench.worker.lines import MAX_FILE_BYTES, LabelProblem, read_text

Array = npt.NDArray[np.generic]
MAX_CLASSES = int(bounds.CLASSES.high)
"""The most classes a CTC output may score: its alphabet's entries, the space and the blank."""
MAX_ENTRY_CHARS = 256
"""The longest entry, in code points: a CTC class is a character or a short token (a
SentencePiece unit); a decoded text holds at most this many per time step."""


class AlphabetProblem(UserError):
    """A CTC alphabet that cannot be read, or cannot be the output's classes."""

    def __init__(self, *, output: str, source: str, reason: str) -> None:
        super().__init__(f"the CTC alphabet of output {output!r} ({source}): {reason}")
        self.output = output
        self.source = source
        self.reason = reason


class NotCtcScores(UserError):
    """An output of ``type: text`` that is not one score per sample, time step and class."""

    def __init__(self, *, output: str, shape: tuple[int, ...], reason: str) -> None:
        super().__init__(f"text output {output!r} of shape {list(shape)}: {reason}")
        self.output = output
        self.shape = shape
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Alphabet:
    classes: tuple[str, ...]
    """Each class's text, by class index (the blank's is ``""``)."""
    blank: int
    source: str
    """Where the entries came from, for messages."""
    delimited: bool = False
    """A word delimiter is one of the classes, decoded as a space: a decoded text is stripped
    of spaces at its ends, as a Hugging Face CTC tokenizer strips it."""

    @property
    def entries(self) -> int:
        """How many classes are characters (every class but the blank)."""
        return len(self.classes) - 1


def read_alphabet(ctc: Ctc, model_files: Mapping[str, Path], *, output: str) -> Alphabet:
    """The classes of a CTC output from its ``ctc`` section; ``model_files`` are the model's
    verified files by artifact path. Reads bytes only: nothing of the model is executed."""
    if ctc.alphabet.vocab is not None:
        return _delimited(ctc, _from_vocab(ctc, model_files, output=output), output=output)
    if ctc.alphabet.file is not None:
        name = ctc.alphabet.file
        source = f"file {name}"
        try:
            text = read_text(model_files[name], name)
        except LabelProblem as exc:
            raise AlphabetProblem(output=output, source=source, reason=exc.reason) from None
    else:
        assert ctc.alphabet.metadata is not None
        source, text = _from_metadata(ctc.alphabet.metadata, model_files, output=output)
    lines = text.count("\n")
    if lines > MAX_CLASSES:  # refused before splitting: each line would be a string held
        raise AlphabetProblem(
            output=output,
            source=source,
            reason=f"{lines} lines: an output scores at most {MAX_CLASSES} classes, the "
            "alphabet's entries with the blank (and the space)",
        )
    entries = text.split("\n")
    if entries[-1] == "":
        entries.pop()  # the final line end
    entries = [e.removesuffix("\r") for e in entries]
    if not entries:
        raise AlphabetProblem(output=output, source=source, reason="it is empty")
    for number, entry in enumerate(entries, start=1):
        if not entry:
            raise AlphabetProblem(
                output=output,
                source=source,
                reason=f"line {number} is empty: each line is one class's character",
            )
        if len(entry) > MAX_ENTRY_CHARS:
            raise AlphabetProblem(
                output=output,
                source=source,
                reason=f"line {number} holds {len(entry)} characters: an entry is one class's "
                f"character or token, at most {MAX_ENTRY_CHARS}",
            )
    if ctc.space:
        entries.append(" ")
    if len(entries) + 1 > MAX_CLASSES:
        raise AlphabetProblem(
            output=output,
            source=source,
            reason=f"{len(entries)} characters and the blank: an output scores at most "
            f"{MAX_CLASSES} classes",
        )
    if ctc.blank > len(entries):
        raise AlphabetProblem(
            output=output,
            source=source,
            reason=f"blank {ctc.blank} is past the {len(entries) + 1} classes of "
            f"{len(entries)} characters and the blank",
        )
    entries.insert(ctc.blank, "")
    return _delimited(ctc, Alphabet(tuple(entries), ctc.blank, source), output=output)


def _delimited(ctc: Ctc, alphabet: Alphabet, *, output: str) -> Alphabet:
    """``alphabet`` with its word delimiter's class decoded as a space, where one is declared:
    exactly one class other than the blank must be that entry."""
    if ctc.word_delimiter is None:
        return alphabet
    at = [i for i, c in enumerate(alphabet.classes) if c == ctc.word_delimiter and i != ctc.blank]
    if len(at) != 1:
        raise AlphabetProblem(
            output=output,
            source=alphabet.source,
            reason=f"the word delimiter {ctc.word_delimiter!r} must be exactly one class of the "
            f"alphabet; it is {len(at)}",
        )
    classes = list(alphabet.classes)
    classes[at[0]] = " "
    return Alphabet(tuple(classes), alphabet.blank, alphabet.source, delimited=True)


def _from_vocab(ctc: Ctc, model_files: Mapping[str, Path], *, output: str) -> Alphabet:
    """The classes a ``vocab`` file maps, in id order (the blank's text ``""``): a JSON object
    of token to id whose ids are exactly 0 .. n - 1, each once."""
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    name = ctc.alphabet.vocab
    assert name is not None
    source = f"vocab {name}"

    def refused(reason: str) -> AlphabetProblem:
        return AlphabetProblem(output=output, source=source, reason=reason)

    path = model_files[name]
    if path.stat().st_size > MAX_FILE_BYTES:
        raise refused(f"over {MAX_FILE_BYTES} bytes")
    try:
        doc = load_json(path.read_bytes())
    except JsonRefused as exc:
        raise refused(f"not JSON pinbench accepts: {exc.reason}") from None
    if not isinstance(doc, dict) or not doc:
        raise refused("not a JSON object of tokens to class ids")
    if len(doc) > MAX_CLASSES:
        raise refused(f"{len(doc)} tokens: an output scores at most {MAX_CLASSES} classes")
    by_id: dict[int, str] = {}
    for token, index in doc.items():
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(doc):
            raise refused(f"token {token[:40]!r} has id {index!r:.40}: ids are 0 to {len(doc) - 1}")
        if index in by_id:
            raise refused(f"tokens {by_id[index][:40]!r} and {token[:40]!r} both have id {index}")
        if not token or len(token) > MAX_ENTRY_CHARS:
            raise refused(f"token {token[:40]!r} at id {index}: 1 to {MAX_ENTRY_CHARS} characters")
        by_id[index] = token
    if ctc.space:
        raise refused("a vocabulary holds every class: `space` adds none to it")
    if ctc.blank >= len(by_id):
        raise refused(f"blank {ctc.blank} is past its {len(by_id)} classes")
    classes = [by_id[i] for i in range(len(by_id))]
    classes[ctc.blank] = ""
    return Alphabet(tuple(classes), ctc.blank, source)


def _from_metadata(key: str, model_files: Mapping[str, Path], *, output: str) -> tuple[str, str]:
    """``(where, value)`` of the ONNX model's one metadata entry ``key``."""
    from pinbench.tasks.onnx_metadata import MetadataProblem, one_value

    try:
        return one_value(key, model_files, max_bytes=MAX_FILE_BYTES, holds="holds the alphabet")
    except MetadataProblem as exc:
        raise AlphabetProblem(output=output, source=exc.source, reason=exc.reason) from None


def check_scores(shape: tuple[int, ...], alphabet: Alphabet, *, output: str, batch: int) -> None:
    """A first answer's CTC output is ``(batch, T, C)`` with C the alphabet's classes."""
    if len(shape) != 3:
        raise NotCtcScores(
            output=output,
            shape=shape,
            reason="a CTC output has 3 axes, (N, T, C): samples, time steps, classes",
        )
    if shape[0] != batch:
        raise NotCtcScores(
            output=output,
            shape=shape,
            reason=f"its first axis must be the batch's {batch} samples",
        )
    if shape[2] != len(alphabet.classes):
        raise AlphabetProblem(
            output=output,
            source=alphabet.source,
            reason=f"the output scores {shape[2]} classes per time step, but {alphabet.entries} "
            f"characters and the blank make {len(alphabet.classes)}: the alphabet must be "
            "the model's (with `space: true` where the model adds a space class)",
        )


def best_path(scores: Array, *, output: str, first: int) -> npt.NDArray[np.int64]:
    """Each time step's class, ``(N, T)``: the argmax (the first on ties) of scores that must
    be finite (``first``: the first sample's index, for messages)."""
    values = np.asarray(scores)
    finite = np.isfinite(values)
    if not finite.all():
        at = np.argwhere(~finite)[0]
        raise NotCtcScores(
            output=output,
            shape=tuple(values.shape),
            reason=f"sample {first + int(at[0])} has the score {values[tuple(at)]} at time step "
            f"{int(at[1])}: scores must be finite",
        )
    best: npt.NDArray[np.int64] = np.argmax(values, axis=2).astype(np.int64)
    return best


def decode(path: npt.NDArray[np.int64], alphabet: Alphabet) -> str:
    """One sample's best path as text: repeats collapsed, then the blank dropped."""
    if not path.size:
        return ""
    kept = np.ones(path.shape, dtype=bool)
    kept[1:] = path[1:] != path[:-1]
    kept &= path != alphabet.blank
    text = "".join(alphabet.classes[int(c)] for c in path[kept])
    return text.strip(" ") if alphabet.delimited else text
