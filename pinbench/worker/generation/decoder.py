"""What every generator shares: the folder's tokenizer (prompts in, answers out), the context
check, when an answer ends, and how a token is picked.

A generator is pinbench's own loop over the model, the KV cache on (``torch_generator`` for
transformers, ``ort_generator`` for ONNX Runtime), so the first token's moment is known exactly
and nothing but the model's calls and the token choice runs between two tokens: greedy is the
arg-max (ties to the lowest id), ``seeded`` samples from ``softmax(logits / temperature)``
(after ``top_k``) with a generator seeded by ``seed + sample index``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from pinbench.errors import UserError
from pinbench.registry.generation import GenerationSpec
from pinbench.worker.predictors.config import ModelFiles

First = Callable[[], None]
CHUNK = 256
"""Texts per tokenizing child (its arrays are CHUNK x the longest allowed prompt)."""
NO_CONTEXT = 8192
"""The longest prompt (tokens) of a model whose config names no context length."""


def token_nll(logits: Any, token: int) -> float:
    """The negative log-likelihood of ``token`` under one step's ``logits`` (log-softmax in
    float64, shifted by the largest score): what every generator's ``reference_loss`` sums."""
    import numpy as np

    scores = np.asarray(logits, dtype=np.float64)
    top = scores.max()
    return -float(scores[token] - (top + np.log(np.exp(scores - top).sum())))


class PromptTooLong(UserError):
    def __init__(self, *, sample: int, tokens: int, new: int, context: int) -> None:
        super().__init__(
            f"prompt {sample} is {tokens} tokens: with max_new_tokens {new} it passes the "
            f"model's context of {context} tokens (prompts are never truncated: shorten it, "
            "or lower max_new_tokens)"
        )
        self.sample = sample
        self.tokens = tokens
        self.new = new
        self.context = context


class Generator(ABC):
    """``open`` once, then ``encode``/``generate``/``answer_text`` per prompt, ``close``."""

    def __init__(self) -> None:
        self._tokenizer: Any = None
        self._end: set[int] = set()
        self.context: int | None = None
        self.encoder_decoder = False
        """The prompt is the encoder's (``context`` bounds it alone) and the answer the
        decoder's (``decoder_context`` bounds it): decision 245."""
        self.decoder_context: int | None = None
        self.applied: dict[str, Any] = {}
        """The generation config's settings applied to the logits (``processors``), as the
        run records them."""

    @abstractmethod
    def open(self, model: ModelFiles, threads: int | None) -> None:
        """Load the model and its tokenizer (``ModelLoadError`` with the reason)."""

    @abstractmethod
    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        """The answer's token ids; ``first`` is called as soon as the first one is chosen."""

    def generate_batch(
        self,
        rows: list[list[int]],
        spec: GenerationSpec,
        indexes: list[int],
        first: First,
        done: Callable[[int, list[int]], None],
    ) -> None:
        """Answers ``rows`` together: ``first`` once every row's first token is chosen, ``done(row,
        ids)`` as each answer ends. A generator that cannot batch refuses (the lockfile check
        refuses such a request before any run)."""
        raise UserError("this framework's generator answers one prompt at a time: batch_size 1")

    def reference_loss(self, ids: list[int], start: int) -> tuple[float, int]:
        """The negative log-likelihood of ``ids[start:]`` after ``ids[:start]`` (teacher
        forcing), summed, and how many tokens were scored. The first token has no tokens
        before it to be scored after: scoring begins at ``max(start, 1)``, and the count says
        so (every generator's, through ``scored_nll``)."""
        begin = max(start, 1)
        if begin >= len(ids):
            return 0.0, 0
        return self.scored_nll(ids, begin), len(ids) - begin

    @abstractmethod
    def scored_nll(self, ids: list[int], begin: int) -> float:
        """The negative log-likelihood of ``ids[begin:]`` after ``ids[:begin]``, summed
        (``1 <= begin < len(ids)``)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model."""

    @property
    def tokenizer(self) -> Any:
        """The loaded tokenizer (``tokenizers.Tokenizer``)."""
        return self._tokenizer

    def load_tokenizer(self, path: Any, *, name: str, context: int | None, end: set[int]) -> None:
        """The folder's tokenizer: decoding here; encoding in a child a stop can end
        (``pinbench.worker.tokenizing``: a tokenizer's regular expression can run for
        minutes in native code)."""
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer_path, self._tokenizer_name = path, name
        self.context = context
        self._end = end

    def encode_all(
        self, texts: list[str], *, limit: int, truncate: bool, special: bool, stop: First
    ) -> list[list[int]]:
        """Each text's ids, unpadded, at most ``limit`` of them (more: refused, or cut with
        ``truncate``), tokenized in a child process ``stop`` can end."""
        return [ids for ids, _ in self._encode(texts, limit, truncate, special, stop)]

    def _encode(
        self,
        texts: list[str],
        limit: int,
        truncate: bool,
        special: bool,
        stop: First,
        ends: bool = False,
    ) -> list[tuple[list[int], list[int]]]:
        """Each text's ids and (``ends``) where each token's span ends in it; with
        ``truncate`` a longer text is cut at its end."""
        from pinbench.worker.tokenizing import TokenizeProblem, encode_texts

        out: list[tuple[list[int], list[int]]] = []
        for start in range(0, len(texts), CHUNK):
            try:
                encoded = encode_texts(
                    texts[start : start + CHUNK],
                    tokenizer=self._tokenizer_path,
                    name=self._tokenizer_name,
                    max_length=limit,
                    truncation=truncate,
                    stop=stop,
                    ragged=True,
                    special_tokens=special,
                    ends=ends,
                    cut_end=truncate,
                )
            except TokenizeProblem as exc:  # its sample numbers count from the chunk's start
                raise UserError(_renumbered(exc.reason, start)) from None
            for row, mask in enumerate(encoded.attention_mask):
                n = int(mask.sum())
                ids = [int(i) for i in encoded.ids[row, :n]]
                spans = [] if encoded.ends is None else [int(e) for e in encoded.ends[row, :n]]
                out.append((ids, spans))
        return out

    def encode_prompts(
        self, prompts: list[str], spec: GenerationSpec, stop: First
    ) -> list[list[int]]:
        """Every prompt's ids (through the chat template when asked), each checked to leave
        ``max_new_tokens`` within the context; never truncated."""
        if spec.chat_template:
            prompts = [self.chat_text(p) for p in prompts]
        if self.encoder_decoder:
            limit = self.context or NO_CONTEXT
            if self.decoder_context is not None and spec.max_new_tokens > self.decoder_context:
                raise UserError(
                    f"max_new_tokens {spec.max_new_tokens} passes the decoder's context of "
                    f"{self.decoder_context} tokens: lower it"
                )
        else:
            limit = (self.context or NO_CONTEXT + spec.max_new_tokens) - spec.max_new_tokens
        if limit < 1:
            raise PromptTooLong(
                sample=0, tokens=1, new=spec.max_new_tokens, context=self.context or 0
            )
        ids = self.encode_all(
            prompts, limit=limit, truncate=False, special=not spec.chat_template, stop=stop
        )
        for i, row in enumerate(ids):
            if not row:
                raise UserError(f"prompt {i} encodes to no token")
        return ids

    def chat_text(self, prompt: str) -> str:
        raise UserError(
            "generation.chat_template: this framework's generator applies no chat template "
            "(the transformers one does)"
        )

    def reference_ids(
        self, prompts: list[str], references: list[str], spec: GenerationSpec, stop: First
    ) -> list[tuple[list[int], int]]:
        """Each prompt with its reference after it, as one text tokenized as the model reads
        it (``joined``), cut at the context: the ids, and where the reference's tokens begin
        (``reference_tokens``)."""
        texts = [self.chat_text(p) for p in prompts] if spec.chat_template else list(prompts)
        pairs = [joined(t, r) for t, r in zip(texts, references, strict=True)]
        encoded = self._encode(
            [text for text, _ in pairs],
            self.context or NO_CONTEXT,
            True,
            not spec.chat_template,
            stop,
            ends=True,
        )
        return [
            reference_tokens(ids, ends, mark, sample=i)
            for i, ((ids, ends), (_, mark)) in enumerate(zip(encoded, pairs, strict=True))
        ]

    def decode(self, ids: list[int]) -> str:
        text: str = self._tokenizer.decode(ids, skip_special_tokens=True)
        return text

    def ends(self, tokens: list[int], spec: GenerationSpec) -> bool:
        if spec.stop_at_end and tokens[-1] in self._end:
            return True
        if spec.stop:  # the earlier text was checked at earlier steps: the tail suffices
            longest = max(len(s) for s in spec.stop)
            text = self.decode(tokens[-(4 * longest + 8) :])  # a token is at least one byte
            return any(s in text for s in spec.stop)
        return False

    def answer_text(self, tokens: list[int], spec: GenerationSpec) -> str:
        """The answer as text, cut before the first stop text."""
        text = self.decode(tokens)
        cuts = [text.find(s) for s in spec.stop if s in text]
        return text[: min(cuts)] if cuts else text


def end_tokens(generation_config: dict[str, Any], config: dict[str, Any]) -> set[int]:
    """The end-of-text ids: ``generation_config.json``'s ``eos_token_id``, else config's."""
    for source in (generation_config, config):
        end = source.get("eos_token_id")
        if isinstance(end, int) and not isinstance(end, bool):
            return {end}
        if isinstance(end, list) and all(isinstance(e, int) for e in end):
            return set(end)
    return set()


def joined(prompt: str, reference: str) -> tuple[str, int]:
    """The text a reference is scored in: the prompt, one space (none when the prompt already
    ends in whitespace) and the reference stripped; and where the reference's part (the space
    included) begins."""
    gap = "" if prompt[-1:].isspace() else " "
    return prompt + gap + reference.strip(), len(prompt)


def reference_tokens(
    ids: list[int], ends: list[int], mark: int, *, sample: int
) -> tuple[list[int], int]:
    """The tokens scored for a reference, from the joined text's encoding: the reference's are
    those that cover a character of its part (span end past ``mark``), from the first of them
    on; a token the tokenizer's post-processor added there (an end-of-text, spanning no
    character) is left out. The tokens before the first are the context (the prompt's, a BOS
    included). Returns the ids kept and where the reference's begin."""
    first = next((i for i, end in enumerate(ends) if end > mark), len(ids))
    if first == 0:
        raise UserError(
            f"prompt {sample}: the tokenizer joins all of the prompt into the reference's "
            "first token, so no token is left to score the reference after"
        )
    kept = ids[:first] + [t for t, end in zip(ids[first:], ends[first:], strict=True) if end > mark]
    return kept, first


def _renumbered(reason: str, offset: int) -> str:
    """A tokenizing child's message, its sample number counted from the whole list."""
    found = re.match(r"^(prompt|sample) (\d+)", reason)
    if found is None:
        return reason
    return f"prompt {int(found[2]) + offset}{reason[found.end() :]}"
