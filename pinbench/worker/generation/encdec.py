"""Generating with an encoder-decoder (T5, BART, Marian, Whisper) in transformers: the encoder
reads the sample once, then the decoder reads its prompt (``decoder_start_token_id`` alone, or
Whisper's start, language, task and no-timestamps tokens: ``whisper_prompt``, decision 260) and
generates one token a step with its KV cache (self-attention's grows, cross-attention's is
computed at the first step and kept), as transformers' ``generate`` does (decision 245).

The first token's moment is the encoder's pass, the language's detection where the prompt
leaves it open, and the decoder's pass over the prompt (the prefill of a decoder-only model):
TTFT. The prompt is not the answer: the answer is the tokens after it, and only they are
counted. The generation config's settings that change which token is chosen (forced,
suppressed and banned tokens, minimum lengths, n-grams, the repetition penalty) are applied to
each step's logits as ``generate`` applies them, over the decoder's ids (its prompt, then the
answer): ``processors`` (decision 272).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pinbench.registry.generation import GenerationSpec
from pinbench.worker.generation.processors import Answer, Processors

Pick = Callable[[Any, GenerationSpec, Any], int]
"""``pick(logits, spec, torch generator)``: the next token."""
Ends = Callable[[list[int], GenerationSpec], bool]


@dataclass(frozen=True, slots=True)
class EncoderDecoder:
    """The model and how its decoder starts."""

    model: Any
    prompt: tuple[int | None, ...]
    """The decoder's first ids: ``decoder_start_token_id``, then Whisper's prompt; ``None``
    where the language is detected from ``languages``."""
    processors: Processors
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
            prompt = self._prompt(encoded)
            answer = self.processors.start(prompt[0].tolist(), spec.max_new_tokens)
            out = self._step(encoded, None, prompt, None)
            tokens = [_next(answer, out.logits[0, -1], spec, generator, pick)]
            first()
            while len(tokens) < spec.max_new_tokens and not ends(tokens, spec):
                out = self._step(encoded, None, torch.tensor([[tokens[-1]]]), out.past_key_values)
                tokens.append(_next(answer, out.logits[0, -1], spec, generator, pick))
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
        prompt = [t for t in self.prompt if t is not None]
        states = [self.processors.start(prompt, spec.max_new_tokens) for _ in range(rows)]
        with torch.inference_mode():
            encoded = self._encode(inputs, mask)
            out = self._step(encoded, mask, torch.tensor([prompt] * rows), None)
            while True:
                logits = out.logits[:, -1]
                for r in live:
                    answers[r].append(_next(states[r], logits[r], spec, generators[r], pick))
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


def _next(answer: Answer, logits: Any, spec: GenerationSpec, generator: Any, pick: Pick) -> int:
    return answer.token(logits, lambda scores: pick(scores, spec, generator))
