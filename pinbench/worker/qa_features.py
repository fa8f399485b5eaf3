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

from pinbench.worker.tokenizing import (
    U32,
    Encoded,
    Request,
    TokenizeProblem,
    chunks,
    run_request,
)

if TYPE_CHECKING:
    from pinbench.registry.steps import Tokenize
    from pinbench.worker.questions import Question

DOC_STRIDE = 128
"""MLPerf's BERT: context tokens from one window's start to the next's."""
MAX_QUERY_LENGTH = 64
"""MLPerf's BERT: a question's tokens kept."""
MAX_FEATURES = 1024
"""Features of one question: SQuAD's longest paragraph gives 3 at MLPerf's settings."""
MAX_TOKENS = 2**26
"""The most token positions (features x max_length) of one input: 1.75 GiB of the seven
arrays the tokenizer's process makes (SQuAD v1.1's training set at MLPerf's settings is some
34 million). A quarter of ``text_inputs.MAX_TOKENS``: a feature carries seven arrays, a text
three or four (decision 285)."""
MAX_QUESTION_TOKENS = 2**22
"""The most token positions one question's features may hold: the library's encodings of one
question's windows are held at once, some 300 bytes a position (1.2 GiB here; decision 285)."""


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
    """The features of every question of ``request`` and its context (see the module). Each
    question's windows are written into arrays as they are joined (28 bytes a position), never
    kept as the library's encodings (some 300 bytes a position): memory is bounded by
    ``MAX_TOKENS`` before it is spent, and by ``MAX_QUESTION_TOKENS`` for one question."""
    assert request.contexts is not None
    length = request.max_length
    pad = dict(tokenizer.padding)  # as ``tokenizer_child._tokenizer`` set it: the file's, or found
    tokenizer.no_padding()
    special = tokenizer.num_special_tokens_to_add(True)
    blocks: list[dict[str, U32]] = []
    made = 0
    texts = [f"{q}\n{c}" for q, c in zip(request.texts, request.contexts, strict=True)]
    for start, end in chunks(texts):  # bounded memory, whatever the lengths
        try:
            questions = tokenizer.encode_batch(request.texts[start:end], add_special_tokens=False)
            contexts = tokenizer.encode_batch(request.contexts[start:end], add_special_tokens=False)
        except BaseException as exc:  # a panic in native code is a BaseException
            raise TokenizeProblem(f"the tokenizer failed: {type(exc).__name__}: {exc}") from None
        for i, (q, c) in enumerate(zip(questions, contexts, strict=True), start=start):
            block = _question_block(tokenizer, request, i, q, c, special, pad, made)
            made += len(block["example"])
            blocks.append(block)
        del questions, contexts
    arrays: dict[str, U32] = {n: np.empty((made, length), dtype=np.uint32) for n in QA_FIELDS}
    arrays["example"] = np.empty(made, dtype=np.uint32)
    row = 0
    blocks.reverse()
    while blocks:  # each block freed once copied: the arrays are held once, not twice
        block = blocks.pop()
        n = len(block["example"])
        for name, values in block.items():
            arrays[name][row : row + n] = values
        row += n
    return Encoded(**arrays)


def _question_block(
    tokenizer: Any,
    request: Request,
    i: int,
    question: Any,
    context: Any,
    special: int,
    pad: dict[str, Any],
    made: int,
) -> dict[str, U32]:
    """Question ``i``'s features as arrays, one row each (``made``: the rows before it)."""
    length = request.max_length
    windows, step = _windows(request, i, question, context, special)
    count = len(windows)
    if (made + count) * length > MAX_TOKENS:
        raise TokenizeProblem(
            f"the first {i + 1} questions give {made + count} features of {length} tokens, "
            f"more than the {MAX_TOKENS} token positions an input may hold"
        )
    block: dict[str, U32] = {n: np.zeros((count, length), dtype=np.uint32) for n in QA_FIELDS}
    block["example"] = np.full(count, i, dtype=np.uint32)
    for k, window in enumerate(windows):
        joined = tokenizer.post_process(question, window, add_special_tokens=True)
        joined.pad(
            length,
            direction=pad.get("direction", "right"),
            pad_id=pad["pad_id"],
            pad_type_id=pad.get("pad_type_id", 0),
            pad_token=pad["pad_token"],
        )
        if len(joined.ids) != length:
            raise TokenizeProblem(
                f"question {i}: the tokenizer's post-processor made {len(joined.ids)} tokens of "
                f"a window, more than max_length {length}"
            )
        block["ids"][k] = joined.ids
        block["attention_mask"][k] = joined.attention_mask
        block["type_ids"][k] = joined.type_ids
        first, held = k * step, len(window.ids)
        sequence = np.array([s == 1 for s in joined.sequence_ids], dtype=np.bool_)
        if int(sequence.sum()) != held:
            raise TokenizeProblem(
                f"question {i}: the tokenizer's post-processor changed the context's tokens as "
                "it joined them to the question"
            )
        offsets = np.array(joined.offsets, dtype=np.int64).reshape(length, 2)[sequence]
        block["context"][k, sequence] = np.arange(first + 1, first + held + 1)
        block["starts"][k, sequence] = offsets[:, 0]
        block["ends"][k, sequence] = offsets[:, 1]
    return block


QA_FIELDS = ("ids", "attention_mask", "type_ids", "ends", "starts", "context")
"""The ``(features, max_length)`` arrays of ``pair_features`` (``example`` beside them)."""


def _windows(
    request: Request, i: int, question: Any, context: Any, special: int
) -> tuple[list[Any], int]:
    """Question ``i``'s context windows (each the library's encoding of its tokens) and the
    context tokens from one window's start to the next's."""
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
    if count > MAX_FEATURES or count * request.max_length > MAX_QUESTION_TOKENS:
        raise TokenizeProblem(
            f"question {i}: its context of {total} tokens gives {count} windows of {room} "
            f"tokens {step} apart, more than the {MAX_FEATURES} windows or "
            f"{MAX_QUESTION_TOKENS} token positions a question may give: raise doc_stride, "
            "or lower max_length"
        )
    windows = [context]
    if total > room:
        context.truncate(room, stride=room - step)
        windows += context.overflowing
    assert len(windows) == count, (len(windows), count)
    return windows, step


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
    from pinbench.worker.image_steps import dtype
    from pinbench.worker.pipeline_errors import PipelineError, _finish
    from pinbench.worker.text_inputs import configured_pad

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
