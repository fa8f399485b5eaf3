"""Generating with transformers (PyTorch), the KV cache on: a prefill, then one token a step.

The loop is pinbench's own (not ``generate``), so the first token's moment is known exactly
and nothing but the model's calls and the token choice runs between two tokens: greedy is the
arg-max (ties to the lowest id), ``seeded`` samples from ``softmax(logits / temperature)``
(after ``top_k``) with a generator seeded by ``seed + sample index``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinbench.errors import UserError
from pinbench.evaluator.predictors.config import ModelFiles
from pinbench.registry.generation import GenerationSpec


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


class TokenGenerator:
    """``open`` once, then ``encode``/``generate``/``decode`` per prompt."""

    def __init__(self) -> None:
        self._model: Any = None
        self._tokenizer: Any = None
        self._chat: Any = None
        self._end: set[int] = set()
        self.context: int | None = None
        self._threads: int | None = None

    def open(self, model: ModelFiles, threads: int | None) -> None:
        import torch
        from tokenizers import Tokenizer

        from pinbench.evaluator.predictors.base import ModelLoadError
        from pinbench.evaluator.predictors.transformers.loading import load_model

        if threads is not None:
            self._threads = torch.get_num_threads()
            torch.set_num_threads(threads)
        self._model, folder = load_model(model, generation=True)
        if folder.tokenizer is None:
            raise ModelLoadError(
                model=folder.path("config.json"),
                reason="a text-generation model needs its tokenizer.json in the folder",
            )
        self._tokenizer = Tokenizer.from_file(str(model.files[folder.tokenizer]))
        self.context = folder.context
        end = self._model.generation_config.eos_token_id
        self._end = {end} if isinstance(end, int) else set(end or [])
        self._folder = folder
        self._files = model.files

    def encode(self, prompt: str, spec: GenerationSpec) -> list[int]:
        if not spec.chat_template:
            ids: list[int] = self._tokenizer.encode(prompt).ids
            return ids
        return self._chat_ids(prompt)

    def _chat_ids(self, prompt: str) -> list[int]:
        from pinbench.evaluator.predictors.base import ModelLoadError

        if not self._folder.chat_template:
            raise ModelLoadError(
                model=self._folder.path("tokenizer_config.json"),
                reason="generation.chat_template is set but the model's tokenizer has no chat "
                "template",
            )
        if self._chat is None:
            from pinbench.evaluator.predictors.transformers.loading import import_transformers

            transformers = import_transformers()
            path = self._files[self._folder.path("tokenizer_config.json")]
            root = path.parent
            self._chat = transformers.PreTrainedTokenizerFast.from_pretrained(
                str(root), local_files_only=True, trust_remote_code=False
            )
        ids = self._chat.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=True, add_generation_prompt=True
        )
        if isinstance(ids, dict):
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def check_length(self, sample: int, ids: list[int], spec: GenerationSpec) -> None:
        if self.context is not None and len(ids) + spec.max_new_tokens > self.context:
            raise PromptTooLong(
                sample=sample, tokens=len(ids), new=spec.max_new_tokens, context=self.context
            )
        if not ids:
            raise UserError(f"prompt {sample} encodes to no token")

    def decode(self, ids: list[int]) -> str:
        text: str = self._tokenizer.decode(ids, skip_special_tokens=True)
        return text

    def generate(
        self, ids: list[int], spec: GenerationSpec, index: int, first: Callable[[], None]
    ) -> list[int]:
        """The answer's token ids; ``first`` is called as soon as the first one is chosen."""
        import torch

        model = self._model
        generator = None
        if spec.sampling == "seeded":
            generator = torch.Generator().manual_seed((spec.seed + index) % (2**63))
        with torch.inference_mode():
            out = model(input_ids=torch.tensor([ids]), use_cache=True)
            past = out.past_key_values
            token = self._pick(out.logits[0, -1], spec, generator)
            first()
            tokens = [token]
            while len(tokens) < spec.max_new_tokens and not self._ends(tokens, spec):
                out = model(input_ids=torch.tensor([[token]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                token = self._pick(out.logits[0, -1], spec, generator)
                tokens.append(token)
        return tokens

    def _ends(self, tokens: list[int], spec: GenerationSpec) -> bool:
        if spec.stop_at_end and tokens[-1] in self._end:
            return True
        if spec.stop:
            text = self.decode(tokens)
            return any(s in text for s in spec.stop)
        return False

    @staticmethod
    def _pick(logits: Any, spec: GenerationSpec, generator: Any) -> int:
        import torch

        if spec.sampling == "greedy":
            return int(torch.argmax(logits))
        assert spec.temperature is not None
        scores = logits.float() / spec.temperature
        if spec.top_k is not None and spec.top_k < scores.numel():
            kth = torch.topk(scores, spec.top_k).values[-1]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        return int(torch.multinomial(probs, 1, generator=generator))

    def answer_text(self, tokens: list[int], spec: GenerationSpec) -> str:
        """The answer as text, cut before the first stop text."""
        text = self.decode(tokens)
        cuts = [text.find(s) for s in spec.stop if s in text]
        return text[: min(cuts)] if cuts else text

    def reference_loss(self, prompt: list[int], reference: str) -> tuple[float, int]:
        """The reference's negative log-likelihood after the prompt (teacher forcing), summed,
        and how many tokens it holds."""
        import torch

        ref: list[int] = self._tokenizer.encode(" " + reference.strip()).ids
        ids = prompt + ref
        if self.context is not None and len(ids) > self.context:
            ids = ids[: self.context]
            ref = ids[len(prompt) :]
        if not ref:
            return 0.0, 0
        with torch.inference_mode():
            logits = self._model(input_ids=torch.tensor([ids])).logits[0].float()
        start = len(prompt)
        picked = torch.log_softmax(logits[start - 1 : len(ids) - 1], dim=-1)
        nll = -picked.gather(1, torch.tensor(ref)[:, None]).sum()
        return float(nll), len(ref)

    def close(self) -> None:
        self._model = None
        if self._threads is not None:
            import torch

            torch.set_num_threads(self._threads)
