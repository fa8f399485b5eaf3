"""Token-classification ground truth, labels of format ``iob2-tags``: a UTF-8 file of one line
per text sample (``data.format: text-lines``), in sample order, the sample's tags separated by
single spaces, one per word of the sample (its line split on single spaces: the words of a
CoNLL sentence joined by spaces). A tag is ``O``, ``B-TYPE`` or ``I-TYPE`` (IOB2, the entity
type any text without spaces). Lines split as every line-based file's
(``pinbench.worker.lines``)."""

from __future__ import annotations

import re
from pathlib import Path

from pinbench.worker.lines import LabelProblem, read_lines

TAG = re.compile(r"O|[BI]-[^ ]+")


def words(text: str) -> list[str]:
    """A sample's words: its line split on single spaces."""
    return text.split(" ")


def read_tags(path: Path, *, where: str, texts: list[str]) -> list[list[str]]:
    """Each sample's tags, one per word of ``texts`` (the samples, in order)."""
    lines = read_lines(path, where)
    if len(lines) != len(texts):
        raise LabelProblem(
            path=where, reason=f"{len(lines)} lines of tags for {len(texts)} samples (one each)"
        )
    out = []
    for number, (line, text) in enumerate(zip(lines, texts, strict=True), start=1):
        sample_words = words(text)
        if "" in sample_words:
            raise LabelProblem(
                path=where,
                reason=f"sample {number - 1} has an empty word (two spaces, or one at an end): "
                "words are separated by single spaces",
            )
        tags = line.split(" ")
        if len(tags) != len(sample_words):
            raise LabelProblem(
                path=where,
                reason=f"line {number} has {len(tags)} tags for the {len(sample_words)} words "
                f"of sample {number - 1}",
            )
        bad = next((t for t in tags if not TAG.fullmatch(t)), None)
        if bad is not None:
            raise LabelProblem(
                path=where, reason=f"line {number}: tag {bad[:80]!r} is not O, B-TYPE or I-TYPE"
            )
        out.append(tags)
    return out
