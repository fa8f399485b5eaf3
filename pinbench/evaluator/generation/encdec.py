"""Generating with an encoder-decoder (T5, BART, Marian, Whisper) in transformers: the encoder
reads the sample once, then the decoder reads its prompt (``decoder_start_token_id`` alone, or
Whisper's start, language, task and no-timestamps tokens: ``whisper_prompt``, decision 260) and
generates one token a step with its KV cache (self-attention's grows, cross-attention's is
computed at the first step and kept), as transformers' ``generate`` does (decision 245).

The first token's moment is the encoder's pass, the language's detection where the prompt
leaves it open, and the decoder's pass over the prompt (the prefill of a decoder-only model):
TTFT. The prompt is not the answer: the answer is the tokens after it, and only they are
counted. The generation config's forced tokens are part of how the model answers and are
honoured as ``generate`` honours them: ``forced_bos_token_id`` is the first token where the
prompt is the start token alone (``generate`` forces it at length 1), ``forced_eos_token_id``
the token at the last step ``max_new_tokens`` allows; ``suppress_tokens`` are never chosen,
``begin_suppress_tokens`` not as the first token after the prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pinbench.registry.generation import GenerationSpec

Pick = Callable[[Any, GenerationSpec, Any], int]
"""``pick(logits, spec, torch generator)``: the next token."""
Ends = Callable[[list[int], GenerationSpec], bool]


@dataclass(frozen=True, slots=True)
class Forced:
    """The ids the generation config forces (None: none) and those it suppresses: every step's
    ``suppress_tokens``, the first step's ``begin_suppress_tokens`` (transformers'
    ``SuppressTokensLogitsProcessor`` and ``SuppressTokensAtBeginLogitsProcessor``)."""

    first: int | None
    last: int | None
    suppress: tuple[int, ...] = ()
    begin_suppress: tuple[int, ...] = ()

    @classmethod
    def of(cls, generation_config: Any) -> Forced:
        def one(value: Any) -> int | None:
            if isinstance(value, list):
                value = value[0] if value else None
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        def ids(value: Any) -> tuple[int, ...]:
            return tuple(int(v) for v in value or ())

        return cls(
            one(getattr(generation_config, "forced_bos_token_id", None)),
            one(getattr(generation_config, "forced_eos_token_id", None)),
            ids(getattr(generation_config, "suppress_tokens", None)),
            ids(getattr(generation_config, "begin_suppress_tokens", None)),
        )

    def check(self, vocabulary: int) -> None:
        """Every id within the vocabulary (``ValueError`` naming the first that is not)."""
        named = [
            ("forced_bos_token_id", [self.first]),
            ("forced_eos_token_id", [self.last]),
            ("suppress_tokens", self.suppress),
            ("begin_suppress_tokens", self.begin_suppress),
        ]
        for key, values in named:
            bad = next((v for v in values if v is not None and not 0 <= v < vocabulary), None)
            if bad is not None:
                raise ValueError(f"`{key}` names {bad}, past the vocabulary ({vocabulary} ids)")

    def suppressed(self, logits: Any, step: int) -> Any:
        """``logits`` with the suppressed ids at minus infinity."""
        drop = self.suppress + (self.begin_suppress if step == 0 else ())
        if not drop:
            return logits
        logits = logits.clone()
        logits[list(drop)] = float("-inf")
        return logits

    def token(self, step: int, spec: GenerationSpec, prompt: int) -> int | None:
        """The id forced at ``step`` (0: the first new token) after a prompt of ``prompt``
        tokens, if any."""
        if step == spec.max_new_tokens - 1 and self.last is not None:
            return self.last
        if step == 0 and prompt == 1 and self.first is not None:
            return self.first
        return None


@dataclass(frozen=True, slots=True)
class EncoderDecoder:
    """The model and how its decoder starts."""

    model: Any
    prompt: tuple[int | None, ...]
    """The decoder's first ids: ``decoder_start_token_id``, then Whisper's prompt; ``None``
    where the language is detected from ``languages``."""
    forced: Forced
    encoder_input: str
    """What the encoder reads: ``input_ids`` (text) or ``input_features`` (Whisper's log-mel)."""
    languages: tuple[int, ...] = ()

    def _prompt(self, encoded: Any) -> Any:
        """The prompt as a batch of one, its language detected where it is open, as
        ``WhisperForConditionalGeneration.detect_language`` does: the decoder's pass over the
        start token alone, the most likely of the ``lang_to_id`` ids."""
        import torch

        ids = list(self.prompt)
        if None in ids:
            logits = self._step(encoded, None, torch.tensor([ids[:1]]), None).logits[0, -1]
            others = torch.ones_like(logits, dtype=torch.bool)
            others[list(self.languages)] = False
            ids[ids.index(None)] = int(logits.masked_fill(others, float("-inf")).argmax())
        return torch.tensor([ids])

    def _encode(self, inputs: Any, mask: Any) -> Any:
        kwargs = {self.encoder_input: inputs}
        if mask is not None:
            kwargs["attention_mask"] = mask
        return self.model.get_encoder()(**kwargs)

    def _step(self, encoded: Any, mask: Any, tokens: Any, past: Any) -> Any:
        return self.model(
            encoder_outputs=encoded,
            attention_mask=mask,
            decoder_input_ids=tokens,
            past_key_values=past,
            use_cache=True,
        )

    def generate(
        self,
        inputs: Any,
        spec: GenerationSpec,
        generator: Any,
        pick: Pick,
        ends: Ends,
        first: Callable[[], None],
    ) -> list[int]:
        """One sample's answer (``inputs``: its encoder input, a batch of one)."""
        import torch

        with torch.inference_mode():
            encoded = self._encode(inputs, None)
            out = self._step(encoded, None, self._prompt(encoded), None)
            tokens = [self._next(out.logits[0, -1], 0, spec, generator, pick)]
            first()
            while len(tokens) < spec.max_new_tokens and not ends(tokens, spec):
                out = self._step(encoded, None, torch.tensor([[tokens[-1]]]), out.past_key_values)
                tokens.append(self._next(out.logits[0, -1], len(tokens), spec, generator, pick))
        return tokens

    def generate_batch(
        self,
        inputs: Any,
        mask: Any,
        spec: GenerationSpec,
        generators: Sequence[Any],
        pick: Pick,
        ends: Ends,
        first: Callable[[], None],
        done: Callable[[int, list[int]], None],
    ) -> None:
        """A batch's answers: the encoder's inputs right-padded under ``mask`` (None: all the
        same length), every decoder row one token a step; an ended row rides along until the
        last one ends, its tokens no longer read."""
        import torch

        rows = int(inputs.shape[0])
        answers: list[list[int]] = [[] for _ in range(rows)]
        live = list(range(rows))
        assert None not in self.prompt  # speech, whose language may be detected, is not batched
        with torch.inference_mode():
            encoded = self._encode(inputs, mask)
            out = self._step(encoded, mask, torch.tensor([list(self.prompt)] * rows), None)
            while True:
                logits = out.logits[:, -1]
                for r in live:
                    step = len(answers[r])
                    answers[r].append(self._next(logits[r], step, spec, generators[r], pick))
                if len(answers[live[0]]) == 1:
                    first()
                for r in list(live):
                    if len(answers[r]) >= spec.max_new_tokens or ends(answers[r], spec):
                        live.remove(r)
                        done(r, answers[r])
                if not live:
                    return
                feed = torch.tensor([[a[-1]] for a in answers])
                out = self._step(encoded, mask, feed, out.past_key_values)

    def _next(
        self, logits: Any, step: int, spec: GenerationSpec, generator: Any, pick: Pick
    ) -> int:
        forced = self.forced.token(step, spec, len(self.prompt))
        if forced is not None:
            return forced
        return pick(self.forced.suppressed(logits, step), spec, generator)

    def reference_loss(self, inputs: Any, reference: list[int]) -> float:
        """The negative log-likelihood of ``reference`` as the decoder's answer to ``inputs``
        (teacher forcing from the prompt), summed."""
        import torch

        with torch.inference_mode():
            encoded = self._encode(inputs, None)
            prompt = self._prompt(encoded)[0].tolist()
            decoder = torch.tensor([[*prompt, *reference[:-1]]])
            logits = self.model(
                encoder_outputs=encoded, decoder_input_ids=decoder, use_cache=False
            ).logits[0, len(prompt) - 1 :]
        picked = torch.log_softmax(logits.float(), dim=-1)
        return float(-picked.gather(1, torch.tensor(reference)[:, None]).sum())
