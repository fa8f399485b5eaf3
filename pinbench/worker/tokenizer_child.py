"""The tokenizer's child process (``tokenizing``'s docstring): one request on stdin, its
reply on stdout. The parent's side never imports this; the child imports the question
features it builds."""

from __future__ import annotations

import os
import signal
import sys
from typing import IO, Any

import msgspec
import numpy as np

from pinbench import typed
from pinbench.worker.tokenizing import (
    HEADER_BYTES,
    Encoded,
    Reply,
    Request,
    TokenizeProblem,
    chunks,
    fields_of,
)


def main(parent: int) -> None:
    """The child: one request on stdin, its reply on stdout (see the module's docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the parent's to act on
    _die_with(parent)
    request = typed.decode_msgpack(sys.stdin.buffer.read(), Request)
    out = sys.stdout.buffer
    try:
        encoded = _encode(request)
    except TokenizeProblem as exc:
        _write(out, Reply(error=exc.reason))
        return
    count = len(request.texts) if encoded.example is None else len(encoded.example)
    _write(out, Reply(count=count, length=request.max_length))
    for name in fields_of(request):
        out.write(np.ascontiguousarray(encoded.field(name)).data.cast("B"))
    out.flush()


def _write(out: IO[bytes], reply: Reply) -> None:
    raw = msgspec.msgpack.encode(reply)
    out.write(len(raw).to_bytes(HEADER_BYTES, "little") + raw)
    out.flush()


def _die_with(parent: int) -> None:
    """Be killed when the parent dies (Linux), and end now if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _encode(request: Request) -> Encoded:
    tokenizer = _tokenizer(request)
    if request.contexts is not None:
        from pinbench.worker.qa_features import pair_features

        return pair_features(tokenizer, request)
    count, length = len(request.texts), request.max_length
    out = Encoded(*(np.zeros((count, length), dtype=np.uint32) for _ in fields_of(request)))
    for start, end in chunks(request.texts):
        try:
            encodings = tokenizer.encode_batch(
                request.texts[start:end], add_special_tokens=request.special_tokens
            )
        except BaseException as exc:  # a panic in native code is a BaseException
            raise TokenizeProblem(f"the tokenizer failed: {type(exc).__name__}: {exc}") from None
        for i, encoding in enumerate(encodings, start=start):
            if len(encoding.ids) > length and request.ragged:
                raise TokenizeProblem(
                    f"prompt {i} is {len(encoding.ids)} tokens: more than the {length} the "
                    "model's context leaves beside max_new_tokens (prompts are never "
                    "truncated: shorten it, or lower max_new_tokens)"
                )
            if len(encoding.ids) > length:
                fix = (
                    "max_length cannot hold the tokenizer's special tokens: raise it"
                    if request.truncation
                    else "set `truncation: true` or a larger max_length"
                )
                raise TokenizeProblem(
                    f"sample {i} is {len(encoding.ids)} tokens, more than max_length "
                    f"{length}: {fix}"
                )
            n = len(encoding.ids)  # max_length, unless ragged
            out.ids[i, :n] = encoding.ids
            out.attention_mask[i, :n] = encoding.attention_mask
            out.type_ids[i, :n] = encoding.type_ids
            if out.ends is not None:
                out.ends[i, :n] = [end for _, end in encoding.offsets]
    return out


def _tokenizer(request: Request) -> Any:
    """The tokenizer file, its own padding and truncation settings kept (direction, pad
    token and ids) with the length the manifest declares; a file whose padding names no pad
    token pads with ``tokenizer_config.json``'s (the request's), else ``[PAD]`` when it has
    one; a tokenizer that names none is refused rather than padded with a guess."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(request.tokenizer)
    except BaseException as exc:  # tokenizers raises its own (Rust) exception types
        raise TokenizeProblem(f"cannot read tokenizer {request.name}: {exc}") from None
    truncation = tokenizer.truncation or {}
    if request.truncation:
        tokenizer.enable_truncation(
            max_length=request.max_length,
            direction="right" if request.cut_end else truncation.get("direction", "right"),
            strategy=truncation.get("strategy", "longest_first"),
        )
    else:
        tokenizer.no_truncation()
    if request.ragged:
        tokenizer.no_padding()
        return tokenizer
    pad = tokenizer.padding or {}
    if not pad.get("pad_token") and request.pad_token is not None:
        if tokenizer.token_to_id(request.pad_token) is None:
            raise TokenizeProblem(
                f"tokenizer_config.json names the pad token {request.pad_token!r:.80}, which "
                f"tokenizer {request.name} does not have"
            )
        pad = {**pad, "pad_token": request.pad_token}
        pad.pop("pad_id", None)  # the file's pad id goes with the file's pad token
    pad_token = pad.get("pad_token") or (
        "[PAD]" if tokenizer.token_to_id("[PAD]") is not None else None
    )
    if pad_token is None:
        raise TokenizeProblem(
            f"tokenizer {request.name} names no pad token (no padding settings, no pad_token "
            "in a tokenizer_config.json beside it and no [PAD] token): inputs are padded to "
            "max_length"
        )
    tokenizer.enable_padding(
        length=request.max_length,
        direction=pad.get("direction", "right"),
        pad_id=pad.get("pad_id", tokenizer.token_to_id(pad_token)),
        pad_type_id=pad.get("pad_type_id", 0),
        pad_token=pad_token,
    )
    return tokenizer
