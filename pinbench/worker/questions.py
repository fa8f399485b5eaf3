"""A ``questions-jsonl`` file: one JSON object per line, ``{"question": text, "context": text}``
(a SQuAD question about its paragraph; the answers are the dataset's labels, a file of their
own that the system under test is never handed: ``tasks.question_answering.truth``).

Lines are read as every line-based file is (``lines.read_lines``: UTF-8, LF, bounded); each is
a JSON object read with ``jsonsafe`` (duplicate keys refused) holding ``question`` and
``context``, each text with a character that is not whitespace, and ``id`` (text, optional:
SQuAD's question id, kept for people). Any other key is refused, never ignored. Bounded: at
most ``MAX_QUESTIONS`` lines, a question of at most ``MAX_QUESTION_CHARS`` characters and a
context of at most ``MAX_CONTEXT_CHARS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pinbench.worker.lines import LabelProblem, json_objects, read_lines

KEYS = ("question", "context", "id")
MAX_QUESTIONS = 1_000_000
"""Questions in one file: SQuAD v1.1's training set holds 87,599, its dev set 10,570."""
MAX_QUESTION_CHARS = 4096
"""SQuAD's longest question is some 250 characters."""
MAX_CONTEXT_CHARS = 262_144
"""SQuAD's longest paragraph is some 4,000 characters; a context is held and tokenized whole,
and each window of it is one feature fed to the model."""
MAX_ID_CHARS = 256


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    context: str
    id: str | None = None


def read_questions(path: Path, *, where: str) -> list[Question]:
    lines = read_lines(path, where)
    if len(lines) > MAX_QUESTIONS:
        raise LabelProblem(
            path=where, reason=f"{len(lines)} lines: a file holds at most {MAX_QUESTIONS} questions"
        )
    out: list[Question] = []
    for at, row in json_objects(lines, where, keys=KEYS, hint="; the answers are the labels file"):
        for key, most in (("question", MAX_QUESTION_CHARS), ("context", MAX_CONTEXT_CHARS)):
            value = row.get(key)
            if not isinstance(value, str) or not value.strip():
                raise LabelProblem(path=where, reason=f"{at}: `{key}` must be non-blank text")
            if len(value) > most:
                raise LabelProblem(
                    path=where,
                    reason=f"{at}: `{key}` is {len(value)} characters, more than {most}",
                )
        ident = row.get("id")
        if ident is not None and (not isinstance(ident, str) or len(ident) > MAX_ID_CHARS):
            raise LabelProblem(
                path=where, reason=f"{at}: `id` must be text of at most {MAX_ID_CHARS} characters"
            )
        out.append(Question(row["question"], row["context"], ident))
    if not out:
        raise LabelProblem(path=where, reason="holds no question")
    return out
