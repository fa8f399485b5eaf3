"""Question-answering ground truth, labels of format ``squad-answers``: a UTF-8 file of JSON
lines, one per question of the ``questions-jsonl`` samples, in their order, each a JSON array
of the question's answer texts (SQuAD's ``answers[].text``: one or more, a repeated text kept as
SQuAD repeats it). A question with no answer (SQuAD v2's unanswerable ones) is refused: SQuAD
v1.1's scores are defined for answered questions only. Bounded: at most ``MAX_ANSWERS`` answers
of at most ``MAX_ANSWER_CHARS`` characters each. Lines split as every line-based file's
(``pinbench.worker.lines``)."""

from __future__ import annotations

from pathlib import Path

from pinbench.worker.lines import LabelProblem, read_lines

MAX_ANSWERS = 64
"""SQuAD v1.1's dev set gives a question at most 6 answers."""
MAX_ANSWER_CHARS = 4096


def read_answers(path: Path, *, where: str, count: int) -> list[list[str]]:
    """Each of the ``count`` questions' answer texts."""
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    lines = read_lines(path, where)
    if len(lines) != count:
        raise LabelProblem(
            path=where,
            reason=f"{len(lines)} lines of answers for {count} questions (one line each)",
        )
    out = []
    for number, line in enumerate(lines, start=1):
        at = f"line {number}"
        try:
            row = load_json(line, max_depth=2)
        except JsonRefused as exc:
            raise LabelProblem(path=where, reason=f"{at}: {exc}") from None
        if not isinstance(row, list):
            raise LabelProblem(path=where, reason=f"{at}: not a JSON array of answer texts")
        if not row:
            raise LabelProblem(
                path=where,
                reason=f"{at}: question {number - 1} has no answer; SQuAD v1.1's scores need "
                "one at least (v2's unanswerable questions are not scored here)",
            )
        if len(row) > MAX_ANSWERS:
            raise LabelProblem(
                path=where, reason=f"{at}: {len(row)} answers, more than {MAX_ANSWERS}"
            )
        for k, text in enumerate(row):
            if not isinstance(text, str) or not text.strip() or len(text) > MAX_ANSWER_CHARS:
                raise LabelProblem(
                    path=where,
                    reason=f"{at}: answer {k} must be non-blank text of at most "
                    f"{MAX_ANSWER_CHARS} characters",
                )
        out.append([str(t) for t in row])
    return out
