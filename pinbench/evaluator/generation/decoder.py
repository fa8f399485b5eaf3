"""What every generator shares: the folder's tokenizer (prompts in, answers out), the context
check, when an answer ends, and how a token is picked.

A generator is pinbench's own loop over the model, the KV cache on (``torch_generator`` for
transformers, ``ort_generator`` for ONNX Runtime), so the first token's moment is known exactly
and nothing but the model's calls and the token choice runs between two tokens: greedy is the
arg-max (ties to the lowest id), ``seeded`` samples from ``softmax(logits / temperature)``
(after ``top_k``) with a generator seeded by ``seed + sample index``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from pinbench.errors import UserError
from pinbench.evaluator.predictors.config import ModelFiles
from pinbench.registry.generation import GenerationSpec

First = Callable[[], None]


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

    @abstractmethod
    def open(self, model: ModelFiles, threads: int | None) -> None:
        """Load the model and its tokenizer (``ModelLoadError`` with the reason)."""

    @abstractmethod
    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        """The answer's token ids; ``first`` is called as soon as the first one is chosen."""

    @abstractmethod
    def reference_loss(self, prompt: list[int], reference: str) -> tuple[float, int]:
        """The reference's negative log-likelihood after the prompt (teacher forcing), summed,
        and how many of its tokens were scored."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model."""

    def load_tokenizer(self, path: Any, *, context: int | None, end: set[int]) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))
        self.context = context
        self._end = end

    def encode(self, prompt: str, spec: GenerationSpec) -> list[int]:
        if spec.chat_template:
            return self.chat_ids(prompt)
        ids: list[int] = self._tokenizer.encode(prompt).ids
        return ids

    def chat_ids(self, prompt: str) -> list[int]:
        raise UserError(
            "generation.chat_template: this framework's generator applies no chat template "
            "(the transformers one does)"
        )

    def reference_ids(self, prompt: list[int], reference: str) -> tuple[list[int], list[int]]:
        """The prompt and the reference's tokens after it, cut to the context."""
        ref: list[int] = self._tokenizer.encode(" " + reference.strip()).ids
        ids = prompt + ref
        if self.context is not None and len(ids) > self.context:
            ids = ids[: self.context]
        return ids, ids[len(prompt) :]

    def check_length(self, sample: int, ids: list[int], spec: GenerationSpec) -> None:
        if not ids:
            raise UserError(f"prompt {sample} encodes to no token")
        if self.context is not None and len(ids) + spec.max_new_tokens > self.context:
            raise PromptTooLong(
                sample=sample, tokens=len(ids), new=spec.max_new_tokens, context=self.context
            )

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
