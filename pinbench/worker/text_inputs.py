"""Text samples through a model's tokenizer: one encoding per text and field, bounded."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from pinbench.registry.ports import Input
from pinbench.registry.steps import (
    Tokenize,
)
from pinbench.worker.image_steps import dtype
from pinbench.worker.pipeline_errors import Array, PipelineError, _finish
from pinbench.worker.tokenizing import Encoded, TokenizeProblem, encode_texts

_ENCODING_FIELDS = {
    "input_ids": "ids",
    "attention_mask": "attention_mask",
    "token_type_ids": "type_ids",
}


def tokenizer_version() -> str:
    import tokenizers

    return f"tokenizers {tokenizers.__version__}, lines split on LF"


Encodings = dict[tuple[str, int, bool], Encoded]
"""Texts already tokenized, by (tokenizer path, max_length, truncation): the inputs of one
model that read the ids, the attention mask and the token type ids tokenize once."""


def preprocess_texts(
    texts: Sequence[str],
    spec: Input,
    files: dict[str, Path],
    stop: Callable[[], None] | None = None,
    encodings: Encodings | None = None,
) -> Array:
    """Tokenize text samples for one input: its first step is ``tokenize`` (the tokenizer
    file among the model's ``files``), padded to ``max_length``; a longer text without
    ``truncation`` is refused, naming it. A ``dtype`` step may follow. Tokenizing runs in a
    child process that ``stop`` (called while it runs; it raises to stop) ends at once
    (``pinbench.worker.tokenizing``)."""
    steps = list(spec.steps)
    if not steps or steps[0].tokenize is None:
        raise PipelineError(
            step="tokenize",
            reason=f"input {spec.name!r} reads text samples: its steps must begin with a "
            "tokenize step (e.g. `- tokenize: {tokenizer: tokenizer.json, max_length: 128}`)",
        )
    step = steps[0].tokenize
    assert step is not None
    if step.doc_stride is not None or step.max_query_length is not None:
        raise PipelineError(
            step="tokenize",
            reason=f"input {spec.name!r}: doc_stride and max_query_length window a question's "
            "context (samples of data.format questions-jsonl); these samples are texts",
        )
    x: Array = _tokenize(texts, step, files, stop, {} if encodings is None else encodings)
    for rest in steps[1:]:
        if rest.dtype is None:
            raise PipelineError(
                step="tokenize", reason="only a dtype step may follow tokenize on text samples"
            )
        x = dtype(x, rest.dtype)
    return _finish(x, spec)


MAX_TOKENS = 2**28
"""The most token positions (samples x max_length) one input may hold: 2 GiB as int64."""


def _tokenize(
    texts: Sequence[str],
    step: Tokenize,
    files: dict[str, Path],
    stop: Callable[[], None] | None,
    encodings: Encodings,
) -> Array:
    total = len(texts) * step.max_length
    if total > MAX_TOKENS:
        raise PipelineError(
            step="tokenize",
            reason=f"{len(texts)} samples x max_length {step.max_length} = {total} tokens, "
            f"more than the {MAX_TOKENS} an input may hold",
        )
    key = (step.tokenizer, step.max_length, step.truncation)
    if key not in encodings:
        try:
            encodings[key] = encode_texts(
                texts,
                tokenizer=files[step.tokenizer],
                name=step.tokenizer,
                max_length=step.max_length,
                truncation=step.truncation,
                stop=stop,
                pad_token=configured_pad(files, step.tokenizer),
            )
        except TokenizeProblem as exc:
            raise PipelineError(step="tokenize", reason=exc.reason) from None
    return encodings[key].field(_ENCODING_FIELDS[step.output]).astype(np.int64)


def configured_pad(files: dict[str, Path], tokenizer: str) -> str | None:
    """The pad token of the ``tokenizer_config.json`` beside ``tokenizer`` among the model's
    ``files`` (a string, or transformers' serialised ``AddedToken``: its ``content``), if
    there is one: where transformers' own tokenizer reads it."""
    from pinbench.artifacts.hf_folder import HfFolderRefused, read_json

    folder = tokenizer.rpartition("/")[0]
    name = f"{folder}/tokenizer_config.json" if folder else "tokenizer_config.json"
    if name not in files:
        return None
    try:
        config = read_json(files[name], name)
    except HfFolderRefused as exc:
        raise PipelineError(step="tokenize", reason=str(exc)) from None
    pad = config.get("pad_token") if isinstance(config, dict) else None
    if isinstance(pad, dict):
        pad = pad.get("content")
    return pad if isinstance(pad, str) and pad else None


def text_rows(
    texts: Sequence[str],
    spec: Input,
    files: dict[str, Path],
    stop: Callable[[], None] | None = None,
    encodings: Encodings | None = None,
) -> tuple[list[Array], float]:
    """A ``padding: longest`` input's rows: each text's tokens of the input's field at its own
    length (a dtype step applied), and what a batch pads them with (the tokenizer's pad id for
    ``input_ids``, its pad type id for ``token_type_ids``, 0 for ``attention_mask``), read from
    the tokenizer's own padding of the texts to ``max_length``."""
    step = spec.steps[0].tokenize if spec.steps else None
    if step is None or step.padding != "longest":
        raise ValueError(f"input {spec.name!r} is not tokenized with padding longest")
    padded = preprocess_texts(texts, spec, files, stop, encodings)
    encodings = {} if encodings is None else encodings
    masked = msgspec.structs.replace(step, output="attention_mask")
    mask = _tokenize(texts, masked, files, stop, encodings)
    lengths = mask.sum(axis=1)
    if any(row[:n].min(initial=1) == 0 for row, n in zip(mask, lengths, strict=True)):
        raise PipelineError(
            step="tokenize",
            reason=f"input {spec.name!r}: the tokenizer pads on the left; padding longest pads "
            "a batch at the end, as transformers' pipelines do by default",
        )
    pads = {int(v) for row, n in zip(padded, lengths, strict=True) for v in row[n:]}
    if len(pads) > 1:
        raise PipelineError(
            step="tokenize", reason=f"input {spec.name!r}: the tokenizer pads with {sorted(pads)}"
        )
    pad = float(pads.pop()) if pads else 0.0
    return [row[:n] for row, n in zip(padded, lengths, strict=True)], pad
