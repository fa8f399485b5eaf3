"""Texts to token ids in a child process that a stop can end (decision 114).

A tokenizer file may carry any regular expression in its pre-tokenizer, and one expression
over one crafted line runs for minutes inside the ``tokenizers`` library's native code, where
no signal handler, cancel or time limit of this interpreter reaches (the call returns only when
it is done). So texts are tokenized by a child interpreter (``tokenizer_child.main``) and the caller
waits for it, checking its stop as it waits: a time limit, a cancel or a signal kills the child
at once and the run ends with the stop's reason. The child dies with its parent (Linux's
``PR_SET_PDEATHSIG``): an evaluator that is itself killed leaves no tokenizer running.

The child reads one ``Request`` (MessagePack) on stdin and writes one ``Reply`` (MessagePack,
after its 8-byte length) on stdout, then, when the reply carries no error, the ids, attention
masks and token type ids as three ``(count, max_length)`` arrays of native ``uint32`` (and,
when the request asks for ``ends``, a fourth: the character each token ends at; question and
context pairs give the fields of ``qa_features``).
Tokenizing is done in chunks of at most ``CHUNK_TEXTS`` texts and ``CHUNK_CHARS`` characters,
so memory stays bounded whatever the lines' lengths (a line holds at most 1 MiB:
``pinbench.worker.lines``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import msgspec
import numpy as np
import numpy.typing as npt

from pinbench import typed

CHUNK_TEXTS = 1024
"""The most texts per call into the tokenizer."""
CHUNK_CHARS = 1024 * 1024
"""The most characters per call into the tokenizer (unless one text is longer): the library
holds some 200 bytes per character of a call's texts until it returns."""
POLL_S = 0.05
"""How often the wait for the child looks at the stop."""
HEADER_BYTES = 8
_FIELDS = ("ids", "attention_mask", "type_ids")
_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from pinbench.worker.tokenizer_child import main; main(int(sys.argv[2]))"
)

U32 = npt.NDArray[np.uint32]


class TokenizeProblem(ValueError):
    """The texts could not be tokenized: ``reason`` says why (the tokenize step's error)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Request(msgspec.Struct, frozen=True):
    tokenizer: str
    """The tokenizer file's local path."""
    name: str
    """Its path in the model artifact (what messages name)."""
    max_length: int
    truncation: bool
    texts: list[str]
    ragged: bool = False
    """Texts as they encode, unpadded (a generation's prompts): each row holds its ids and
    then zeros, its attention mask saying how many; no pad token is needed."""
    special_tokens: bool = True
    """Add the tokenizer's special tokens (its post-processor's); false for a text a chat
    template has already laid out."""
    ends: bool = False
    """Also give, per token, the character of the text where its span ends (the library's
    offsets; a token the post-processor added spans no character: 0)."""
    cut_end: bool = False
    """With ``truncation``, cut a longer text at its end whatever the file's truncation
    direction says (a reference scored after its prompt keeps its prompt whole)."""
    pad_token: str | None = None
    """The pad token ``tokenizer_config.json`` beside the file names, used when the file's own
    padding settings name none."""
    contexts: list[str] | None = None
    """Each text's context: ``texts`` are questions, encoded as features (``qa_features``)."""
    doc_stride: int = 0
    max_query_length: int = 0


class Reply(msgspec.Struct, frozen=True):
    error: str | None = None
    count: int = 0
    length: int = 0


@dataclass(frozen=True, slots=True)
class Encoded:
    """Every text's encoding padded to ``max_length``: one row per text."""

    ids: U32
    attention_mask: U32
    type_ids: U32
    ends: U32 | None = None
    """Where each token's span ends in its text (characters), when the request asked."""
    starts: U32 | None = None
    """Question answering's features (``qa_features``): where each token starts, ``context``
    (1 + its index among its context's tokens; 0 for another) and each row's ``example``."""
    context: U32 | None = None
    example: U32 | None = None

    def field(self, name: str) -> U32:
        """``ids``, ``attention_mask`` or ``type_ids``."""
        out: U32 = getattr(self, name)
        return out


def encode_texts(
    texts: Sequence[str],
    *,
    tokenizer: Path,
    name: str,
    max_length: int,
    truncation: bool,
    stop: Callable[[], None] | None = None,
    ragged: bool = False,
    special_tokens: bool = True,
    ends: bool = False,
    cut_end: bool = False,
    pad_token: str | None = None,
) -> Encoded:
    """Tokenize ``texts`` in a child process, padded to ``max_length`` (``truncation``: cut
    longer ones, else refuse them); ``stop`` is called while waiting and, when it raises,
    the child is killed and its error raised. A tokenizer that fails, or a text longer than
    ``max_length`` without truncation, raises ``TokenizeProblem``. ``ends``: give each
    token's end offset too; ``cut_end``: truncate at the end whatever the file says;
    ``pad_token``: ``tokenizer_config.json``'s, when the file's padding names none."""
    request = Request(
        str(tokenizer),
        name,
        max_length,
        truncation,
        list(texts),
        ragged,
        special_tokens,
        ends,
        cut_end,
        pad_token,
    )
    return run_request(request, stop)


def run_request(request: Request, stop: Callable[[], None] | None) -> Encoded:
    """``request`` answered by a child process (see ``encode_texts``)."""
    argv = [sys.executable, "-I", "-c", _BOOT, json.dumps(sys.path), str(os.getpid())]
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, close_fds=True
        )
        exchange = _Exchange(proc, request)
        try:
            while not exchange.done.wait(POLL_S):
                if stop is not None:
                    stop()
        finally:
            if proc.poll() is None and not exchange.done.is_set():
                proc.kill()
            proc.wait()
            exchange.thread.join()
        if exchange.reply is not None and exchange.reply.error is not None:
            raise TokenizeProblem(exchange.reply.error)
        if exchange.encoded is None:
            raise TokenizeProblem(_died(proc.returncode, errors))
        return exchange.encoded


class _Exchange:
    """Hands the child its request and reads its reply on a thread of its own, so that the
    caller's thread only waits (and a signal handler can run there)."""

    def __init__(self, proc: subprocess.Popen[bytes], request: Request) -> None:
        self.proc = proc
        self.request = request
        self.payload = msgspec.msgpack.encode(request)
        self.reply: Reply | None = None
        self.encoded: Encoded | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tokenize-exchange", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            try:
                self.proc.stdin.write(self.payload)
                self.proc.stdin.close()
            except OSError:  # the child died first: its exit status says why
                return
            self.reply, self.encoded = _read_reply(self.proc.stdout, fields_of(self.request))
        except (OSError, ValueError, msgspec.DecodeError):
            return
        finally:
            self.proc.stdout.close()
            self.done.set()


def fields_of(request: Request) -> tuple[str, ...]:
    """The arrays the child writes, in order (``example``: one value per row)."""
    if request.contexts is not None:
        return (*_FIELDS, "ends", "starts", "context", "example")
    return (*_FIELDS, "ends") if request.ends else _FIELDS


def _read_reply(out: IO[bytes], fields: tuple[str, ...]) -> tuple[Reply | None, Encoded | None]:
    size = _read_exactly(out, HEADER_BYTES)
    if size is None:
        return None, None
    raw = _read_exactly(out, int.from_bytes(size, "little"))
    if raw is None:
        return None, None
    reply = typed.decode_msgpack(raw, Reply)
    if reply.error is not None:
        return reply, None
    arrays = []
    for name in fields:
        shape = (reply.count,) if name == "example" else (reply.count, reply.length)
        array = np.empty(shape, dtype=np.uint32)
        view = array.data.cast("B")
        done = 0
        while done < len(view):
            n = out.readinto(view[done:])  # type: ignore[attr-defined]
            if not n:
                return reply, None
            done += n
        arrays.append(array)
    return reply, Encoded(*arrays)


def _read_exactly(out: IO[bytes], n: int) -> bytes | None:
    data = out.read(n)
    return data if len(data) == n else None


def _died(code: int, errors: IO[bytes]) -> str:
    errors.seek(0, os.SEEK_END)
    errors.seek(max(0, errors.tell() - 2000))
    tail = errors.read().decode("utf-8", "replace").strip().splitlines()
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"
    last = f": {tail[-1][:500]}" if tail else ""
    return f"the tokenizer process {how} before it finished{last}"


def chunks(texts: Sequence[str]) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of at most ``CHUNK_TEXTS`` texts and ``CHUNK_CHARS``
    characters (one text at least)."""
    out, start, chars = [], 0, 0
    for i, text in enumerate(texts):
        if i > start and (i - start == CHUNK_TEXTS or chars + len(text) > CHUNK_CHARS):
            out.append((start, i))
            start, chars = i, 0
        chars += len(text)
    if start < len(texts):
        out.append((start, len(texts)))
    return out
