"""Question answering's work and memory on the host, bounded by what they are given: a
question of many windows is answered in work in proportion to its features' positions, a
question's windows are refused before they are made when they would hold too many positions,
and the host refuses fed ids it cannot read rather than failing on them (decision 285)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.registry.steps import Tokenize
from pinbench.tasks.question_answering.spans import max_context
from pinbench.worker.qa_features import encode_questions
from pinbench.worker.questions import Question
from pinbench.worker.tokenizing import TokenizeProblem
from tests import squad_reference

ref: Any = squad_reference


class _Span:
    def __init__(self, start: int, length: int) -> None:
        self.start, self.length = start, length


def _features(total: int, room: int, step: int, width: int) -> tuple[Any, list[_Span]]:
    """The ``context`` rows of one question's windows (as ``qa_features`` makes them: two
    question tokens first, then the window's) and MLPerf's ``doc_spans`` of the same."""
    spans, start = [], 0
    while True:
        length = min(room, total - start)
        spans.append(_Span(start, length))
        if start + length == total:
            break
        start += min(length, step)
    rows = np.zeros((len(spans), width), dtype=np.uint32)
    for f, span in enumerate(spans):
        rows[f, 2 : 2 + span.length] = np.arange(span.start + 1, span.start + span.length + 1)
    return rows, spans


def _reference(rows: Any, spans: list[_Span]) -> Any:
    out = np.zeros(rows.shape, dtype=np.bool_)
    for f, row in enumerate(rows):
        for position in np.flatnonzero(row):
            out[f, position] = ref._check_is_max_context(spans, f, int(row[position]) - 1)
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 80), st.integers(1, 20), st.integers(1, 25))
def test_max_context_is_mlperf_s_for_any_windows(total: int, room: int, step: int) -> None:
    rows, spans = _features(total, room, step, room + 4)
    assert max_context(rows).tolist() == _reference(rows, spans).tolist()


def test_a_question_of_the_most_windows_is_answered_in_work_of_its_positions() -> None:
    """1024 windows of 380 tokens one apart: every window holds every other's tokens but one,
    so comparing each token with each window is 400 million steps (hours of the host's time
    for a few hundred such questions); one pass per window is some 400 thousand."""
    rows, spans = _features(380 + 1023, 380, 1, 384)
    assert len(spans) == 1024
    flags = max_context(rows)
    pick = np.random.default_rng(0).choice(len(spans), 12, replace=False)
    for f in pick:
        for position in np.flatnonzero(rows[f])[::37]:
            want = ref._check_is_max_context(spans, int(f), int(rows[f, position]) - 1)
            assert flags[f, position] == want
    assert flags.sum() == 380 + 1023  # each token in one window: its max context


def test_a_question_s_windows_are_refused_before_they_are_made_past_their_bound() -> None:
    """512 windows of 8,192 tokens are 4 million positions, some 1.3 GB as the library's
    encodings before a byte of them is written: refused, naming the bound."""
    from pinbench.catalog.minilm import TOKENIZER

    step = Tokenize(tokenizer="tokenizer.json", max_length=8192, doc_stride=8, max_query_length=8)
    long = Question("what is it?", " ".join(["word"] * (8192 + 600 * 8)))
    with pytest.raises(TokenizeProblem, match="4194304 token positions a question may give"):
        encode_questions([long], step, tokenizer=Path(TOKENIZER), pad_token=None)


@pytest.mark.parametrize(
    ("fed", "why"),
    [
        (None, "no ids returned for the input"),
        (np.zeros((2,), dtype=np.int64), "one id per row"),
        (np.zeros((2, 3), dtype=np.int64), "rows of another width"),
        (np.zeros((2, 8, 1), dtype=np.int64), "a third axis"),
    ],
)
def test_fed_ids_the_host_cannot_read_are_refused_naming_them(
    tmp_path: Path, fed: Any, why: str
) -> None:
    from types import SimpleNamespace

    from pinbench.catalog.minilm import TOKENIZER
    from pinbench.tasks.question_answering.task import BadSpanScores, QuestionAnswering
    from tests.test_question_answering import END, START, _scorer_context

    context = _scorer_context(tmp_path, [START, END], True)
    context.model_paths = {"tokenizer.json": Path(TOKENIZER)}
    questions = [Question("who?", "anna and bob"), Question("where?", "in paris")]
    context.samples = SimpleNamespace(questions=questions, truth=[["anna"], ["paris"]])
    scorer = QuestionAnswering().prepare(context)
    assert scorer is not None
    logits = np.zeros((1, 8), dtype=np.float32)
    answers: dict[int, Any] = {i: {"start_logits": logits, "end_logits": logits} for i in range(2)}
    arrays = {} if fed is None else {"input_ids": fed}
    with pytest.raises(BadSpanScores, match=r"were not returned as \[2, 8\]"):
        scorer.score(answers, arrays)
