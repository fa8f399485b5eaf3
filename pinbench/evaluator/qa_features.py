"""Questions about a context to the rows a question-answering model is fed: **features**, made as
MLPerf Inference's BERT makes them (``language/bert/create_squad_data.py``,
``convert_examples_to_features``), with the model's own ``tokenizer.json``.

Each question is tokenized without special tokens and cut to ``max_query_length`` tokens; its
context is tokenized without special tokens, once, whole. A context longer than the room one row
leaves it (``max_length`` less the question and the tokenizer's special tokens for a pair: 3 for
BERT's ``[CLS] q [SEP] c [SEP]``) is cut into windows of that room whose starts are
``doc_stride`` context tokens apart, the last one ending at the context's end (MLPerf's
``doc_spans``: the tokenizer's own overflowing windows with a stride of ``room - doc_stride``
context tokens repeated, which start at the same tokens). Each window is joined to the question
by the tokenizer's post-processor (its special tokens and token type ids) and padded to
``max_length`` as any text is: one feature. A question gives at most ``MAX_FEATURES``.

Beside the ids, the attention mask and the token type ids, each feature carries, for each
context token, its index among its context's tokens and where it starts and ends in the context
(the tokenizer's offsets, in characters): an answer is cut from the context by them
(``tasks.question_answering.spans``). A context token that covers no character is refused: the
offsets are what map an answer back to the text.

This runs in the tokenizer's child process (``tokenizing``): the question, the context and the
tokenizer file are data from others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pinbench.evaluator.tokenizing import (
    Encoded,
    Request,
    TokenizeProblem,
    _chunks,
    run_request,
)

if TYPE_CHECKING:
    from pinbench.evaluator.questions import Question
    from pinbench.registry.steps import Tokenize

DOC_STRIDE = 128
"""MLPerf's BERT: context tokens from one window's start to the next's."""
MAX_QUERY_LENGTH = 64
"""MLPerf's BERT: a question's tokens kept."""
MAX_FEATURES = 1024
"""Features of one question: SQuAD's longest paragraph gives 3 at MLPerf's settings."""
MAX_TOKENS = 2**28
"""The most token positions (features x max_length) of one input, as for any text
(``text_inputs.MAX_TOKENS``)."""


def settings(step: Tokenize) -> tuple[int, int]:
    """A tokenize step's ``doc_stride`` and ``max_query_length``, MLPerf's where unset."""
    stride = DOC_STRIDE if step.doc_stride is None else step.doc_stride
    query = MAX_QUERY_LENGTH if step.max_query_length is None else step.max_query_length
    return stride, query


def encode_questions(
    questions: Sequence[Question],
    step: Tokenize,
    *,
    tokenizer: Path,
    pad_token: str | None,
    stop: Callable[[], None] | None = None,
) -> Encoded:
    """Every question's features, in order (``Encoded.example`` says whose each row is)."""
    if step.truncation:
        raise TokenizeProblem(
            "a question-answering input takes no `truncation`: a long context is cut into "
            "windows (doc_stride), a long question to max_query_length"
        )
    stride, query = settings(step)
    request = Request(
        str(tokenizer),
        step.tokenizer,
        step.max_length,
        False,
        [q.question for q in questions],
        pad_token=pad_token,
        contexts=[q.context for q in questions],
        doc_stride=stride,
        max_query_length=query,
    )
    return run_request(request, stop)


# --- in the child -----------------------------------------------------------------------------


def pair_features(tokenizer: Any, request: Request) -> Encoded:
    """The features of every question of ``request`` and its context (see the module)."""
    assert request.contexts is not None
    length = request.max_length
    pad = dict(tokenizer.padding)  # as ``tokenizing._tokenizer`` set it: the file's, or found
    tokenizer.no_padding()
    special = tokenizer.num_special_tokens_to_add(True)
    rows: list[tuple[Any, int, list[int]]] = []
    texts = [f"{q}\n{c}" for q, c in zip(request.texts, request.contexts, strict=True)]
    for start, end in _chunks(texts):  # bounded memory, whatever the lengths
        try:
            questions = tokenizer.encode_batch(request.texts[start:end], add_special_tokens=False)
            contexts = tokenizer.encode_batch(request.contexts[start:end], add_special_tokens=False)
        except BaseException as exc:  # a panic in native code is a BaseException
            raise TokenizeProblem(f"the tokenizer failed: {type(exc).__name__}: {exc}") from None
        for i, (q, c) in enumerate(zip(questions, contexts, strict=True), start=start):
            rows += _windows(tokenizer, request, i, q, c, special)
            if len(rows) * length > MAX_TOKENS:
                raise TokenizeProblem(
                    f"the first {i + 1} questions give {len(rows)} features of {length} "
                    f"tokens, more than the {MAX_TOKENS} token positions an input may hold"
                )

    def zeros() -> Any:
        return np.zeros((len(rows), length), dtype=np.uint32)

    out = Encoded(
        zeros(),
        zeros(),
        zeros(),
        ends=zeros(),
        starts=zeros(),
        context=zeros(),
        example=np.array([r[1] for r in rows], dtype=np.uint32),
    )
    assert out.ends is not None and out.starts is not None and out.context is not None
    assert out.example is not None
    for row, (encoding, _, index) in enumerate(rows):
        encoding.pad(
            length,
            direction=pad.get("direction", "right"),
            pad_id=pad["pad_id"],
            pad_type_id=pad.get("pad_type_id", 0),
            pad_token=pad["pad_token"],
        )
        out.ids[row] = encoding.ids
        out.attention_mask[row] = encoding.attention_mask
        out.type_ids[row] = encoding.type_ids
        k = 0
        for position, (sequence, (begin, finish)) in enumerate(
            zip(encoding.sequence_ids, encoding.offsets, strict=True)
        ):
            if sequence == 1:
                out.context[row, position] = index[k] + 1
                out.starts[row, position], out.ends[row, position] = begin, finish
                k += 1
        if k != len(index):
            raise TokenizeProblem(
                f"question {int(out.example[row])}: the tokenizer's post-processor changed the "
                "context's tokens as it joined them to the question"
            )
    return out


def _windows(
    tokenizer: Any, request: Request, i: int, question: Any, context: Any, special: int
) -> list[tuple[Any, int, list[int]]]:
    """Question ``i``'s features: (the joined encoding, ``i``, each context token's index)."""
    question.truncate(request.max_query_length)
    room = request.max_length - len(question.ids) - special
    if room < 1:
        raise TokenizeProblem(
            f"question {i}: max_length {request.max_length} holds its {len(question.ids)} "
            f"tokens (max_query_length {request.max_query_length}) and {special} special "
            "tokens but no context token: raise max_length or lower max_query_length"
        )
    if not context.ids:
        raise TokenizeProblem(f"question {i}: its context gives no token")
    spans = context.offsets
    bad = next((k for k, (a, b) in enumerate(spans) if b <= a), None)
    if bad is not None:
        raise TokenizeProblem(
            f"question {i}: context token {bad} ({context.tokens[bad][:40]!r}) covers no "
            "character of the context (offsets "
            f"{spans[bad]}): answers are cut from the context by the tokenizer's offsets"
        )
    total = len(context.ids)
    step = min(room, request.doc_stride)
    count = 1 if total <= room else 1 + -(-(total - room) // step)
    if count > MAX_FEATURES:
        raise TokenizeProblem(
            f"question {i}: its context of {total} tokens gives {count} windows of {room} "
            f"tokens {step} apart, more than the {MAX_FEATURES} a question may give: raise "
            "doc_stride or max_length"
        )
    windows = [context]
    if total > room:
        context.truncate(room, stride=room - step)
        windows += context.overflowing
    assert len(windows) == count, (len(windows), count)
    out = []
    for k, window in enumerate(windows):
        joined = tokenizer.post_process(question, window, add_special_tokens=True)
        first = k * step
        out.append((joined, i, list(range(first, first + len(window.ids)))))
    return out


# --- the model's inputs --------------------------------------------------------------------------


def preprocess_questions(
    questions: Sequence[Question],
    spec: Any,
    files: dict[str, Path],
    stop: Callable[[], None] | None,
    encodings: dict[Any, Encoded],
) -> Any:
    """One input's rows of every question's features: its steps are one ``tokenize`` step
    (its ``output`` says which field feeds it), maybe then a ``dtype``; every input of the model
    must make the same features (one tokenizer, max_length, doc_stride, max_query_length)."""
    from pinbench.evaluator.image_steps import dtype
    from pinbench.evaluator.pipeline_errors import PipelineError, _finish
    from pinbench.evaluator.text_inputs import configured_pad

    steps = list(spec.steps)
    step = steps[0].tokenize if steps else None
    if step is None or any(s.dtype is None for s in steps[1:]):
        raise PipelineError(
            step="tokenize",
            reason=f"input {spec.name!r} reads questions: its steps must be a tokenize step, "
            "maybe then a dtype step",
        )
    key = (step.tokenizer, step.max_length, *settings(step))
    if encodings and key not in encodings:
        raise PipelineError(
            step="tokenize",
            reason=f"input {spec.name!r} tokenizes questions otherwise than another input "
            f"({key} against {next(iter(encodings))}: tokenizer, max_length, doc_stride, "
            "max_query_length): every input must be fed the same features",
        )
    if key not in encodings:
        try:
            encodings[key] = encode_questions(
                questions,
                step,
                tokenizer=files[step.tokenizer],
                pad_token=configured_pad(files, step.tokenizer),
                stop=stop,
            )
        except TokenizeProblem as exc:
            raise PipelineError(step="tokenize", reason=exc.reason) from None
    fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    x: Any = encodings[key].field(fields[step.output]).astype(np.int64)
    for rest in steps[1:]:
        x = dtype(x, rest.dtype)
    return _finish(x, spec)
