"""Generating with transformers (PyTorch): a prefill, then one token a step with the KV cache;
an encoder-decoder's loop is ``encdec``'s. The generation config's settings are checked when the
model opens (every one applied, changing no answer, or refused naming it) and applied to each
step's logits as ``generate`` applies them (``processors``, decision 272)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.registry.generation import GenerationSpec
from pinbench.worker.generation.decoder import NO_CONTEXT, First, Generator
from pinbench.worker.generation.processors import Processors
from pinbench.worker.generation.processors import check_settings as check_text_settings
from pinbench.worker.generation.whisper_prompt import check_settings
from pinbench.worker.predictors.config import ModelFiles

if TYPE_CHECKING:
    from pinbench.artifacts.hf_folder import HfFolder
    from pinbench.worker.generation.chat_template import ChatTemplate
    from pinbench.worker.generation.encdec import EncoderDecoder


class TorchGenerator(Generator):
    def __init__(self) -> None:
        super().__init__()
        self._model: Any = None
        self._chat: Any = None
        self._threads: int | None = None
        self._encdec: EncoderDecoder | None = None
        self._settings_file = "generation_config.json"
        self._processors = Processors()

    def open(self, model: ModelFiles, threads: int | None) -> None:
        import torch

        from pinbench.worker.predictors.base import ModelLoadError
        from pinbench.worker.predictors.transformers.loading import load_model

        if threads is not None:
            self._threads = torch.get_num_threads()
            torch.set_num_threads(threads)
        self._model, folder = load_model(model, generation=True)
        if folder.tokenizer is None:
            raise ModelLoadError(
                model=folder.path("config.json"),
                reason="a text-generation model needs its tokenizer.json in the folder",
            )
        end = self._model.generation_config.eos_token_id
        self.load_tokenizer(
            model.files[folder.tokenizer],
            name=folder.tokenizer,
            context=folder.context,
            end={end} if isinstance(end, int) else set(end or []),
        )
        self._folder = folder
        self._files = model.files
        self._settings_file = folder.path(
            "generation_config.json"
            if folder.path("generation_config.json") in model.files
            else "config.json"
        )
        self._processors = self._read_settings(whisper=folder.speech)
        self.applied = self._processors.applied()
        if folder.decoder_start is not None:
            encoder_input = "input_features" if folder.speech else "input_ids"
            self._open_encoder_decoder(folder.decoder_start, encoder_input)

    def _open_encoder_decoder(self, start: int, encoder_input: str) -> None:
        from pinbench.worker.generation.encdec import EncoderDecoder
        from pinbench.worker.predictors.base import ModelLoadError

        config = self._model.config
        rows = self._rows()
        if not start < rows:  # decoder_start checked it against vocab_size, where named
            raise ModelLoadError(
                model=self._folder.path("config.json"),
                reason=f"`decoder_start_token_id: {start}` is past the output embedding "
                f"({rows} rows): the decoder cannot start from it",
            )
        self._encdec = EncoderDecoder(self._model, (start,), self._processors, encoder_input)
        self.encoder_decoder = True
        positions = getattr(config, "max_target_positions", None) or getattr(
            config, "max_position_embeddings", None
        )
        self.decoder_context = positions if isinstance(positions, int) else None
        if encoder_input != "input_ids":
            self.context = None
            try:
                self._set_whisper_prompt(None, None, rows)
            except UserError as exc:
                raise ModelLoadError(model=self._settings_file, reason=str(exc)) from None

    def _rows(self) -> int:
        """The logits' width: the output embedding's rows."""
        head = self._model.get_output_embeddings()
        if head is None:
            return int(self._model.config.get_text_config().vocab_size)
        return int(head.weight.shape[0])

    def _read_settings(self, *, whisper: bool) -> Processors:
        """The generation config's settings, checked (Whisper's by ``whisper_prompt``, which
        also builds its prompt; every other model's by ``processors``), before anything is
        timed: refused naming the setting and the file."""
        from pinbench.worker.predictors.base import ModelLoadError

        settings = self._model.generation_config.to_diff_dict()
        try:
            (check_settings if whisper else check_text_settings)(settings)
            processors = Processors.of(settings, begin_after_forced=not whisper)
            processors.check(self._rows())
        except UserError as exc:
            raise ModelLoadError(model=self._settings_file, reason=str(exc)) from None
        return processors

    def _set_whisper_prompt(self, language: str | None, task: str | None, rows: int) -> None:
        """The decoder's prompt as Whisper's ``generate(language=..., task=...)`` builds it
        (``whisper_prompt``, decision 260), every id in it within the output embedding."""
        from dataclasses import replace

        from transformers.models.whisper.tokenization_whisper import TO_LANGUAGE_CODE as codes

        from pinbench.worker.generation.whisper_prompt import whisper_prompt

        assert self._encdec is not None
        prompt = whisper_prompt(
            self._model.generation_config.to_dict(),
            getattr(self._model.config, "forced_decoder_ids", None),
            language=language,
            task=task,
            codes=codes,
        )
        bad = next((i for i in prompt.ids() if i >= rows), None)
        if bad is not None:
            raise UserError(
                f"Whisper's prompt names token {bad}, past the output embedding ({rows} rows)"
            )
        self._encdec = replace(self._encdec, prompt=prompt.tokens, languages=prompt.languages)

    def speech_prompt(self, spec: GenerationSpec) -> tuple[int | None, ...]:
        """Set the prompt for the request's ``language`` and ``task`` (before anything is
        timed) and return it (``None``: the language detected); ``max_new_tokens`` after it
        must fit the decoder's positions, as ``generate`` requires."""
        assert self._encdec is not None
        self._set_whisper_prompt(spec.language, spec.task, self._rows())
        prompt = self._encdec.prompt
        if self.decoder_context is not None and (
            len(prompt) + spec.max_new_tokens > self.decoder_context
        ):
            raise UserError(
                f"max_new_tokens {spec.max_new_tokens} after Whisper's prompt of {len(prompt)} "
                f"tokens passes the decoder's {self.decoder_context} positions "
                f"(max_target_positions): at most {self.decoder_context - len(prompt)}"
            )
        return prompt

    @property
    def folder(self) -> HfFolder:
        return self._folder

    @property
    def files(self) -> dict[str, Path]:
        return dict(self._files)

    def encode_prompts(
        self, prompts: list[str], spec: GenerationSpec, stop: First
    ) -> list[list[int]]:
        if self._folder.speech:
            raise UserError(
                f"{self._folder.architecture} reads audio (log-mel features), not a prompt's "
                "tokens: run it on a speech-recognition dataset (data.format audio)"
            )
        return super().encode_prompts(prompts, spec, stop)

    def chat_text(self, prompt: str) -> str:
        from pinbench.worker.predictors.base import ModelLoadError

        if not self._folder.chat_template:
            raise ModelLoadError(
                model=self._folder.path("tokenizer_config.json"),
                reason="generation.chat_template is set but the model's tokenizer has no chat "
                "template",
            )
        if self._chat is None:
            self._chat = self._chat_template()
        chat: ChatTemplate = self._chat
        return chat.render([{"role": "user", "content": prompt}], add_generation_prompt=True)

    def _chat_template(self) -> ChatTemplate:
        """The tokenizer's chat template and special tokens as transformers reads them,
        rendered in pinbench's bounded sandbox (``chat_template``), not transformers' own:
        its sandbox bounds no template's growth."""
        from pinbench.worker.generation.chat_template import ChatTemplate
        from pinbench.worker.predictors.base import ModelLoadError
        from pinbench.worker.predictors.transformers.loading import import_transformers

        transformers = import_transformers()
        where = self._folder.path("tokenizer_config.json")
        tokenizer = transformers.PreTrainedTokenizerFast.from_pretrained(
            str(self._files[where].parent), local_files_only=True, trust_remote_code=False
        )
        try:
            source = tokenizer.get_chat_template()
        except ValueError as exc:  # several templates and none the default
            raise ModelLoadError(model=where, reason=str(exc)) from None
        return ChatTemplate(
            str(source),
            name=f"{where} (chat_template)",
            variables=dict(tokenizer.special_tokens_map),
        )

    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        import torch

        model = self._model
        generator = None
        if spec.sampling == "seeded":
            generator = torch.Generator().manual_seed((spec.seed + index) % (2**63))
        if self._encdec is not None:
            return self._encdec.generate(
                torch.tensor([ids]), spec, generator, _pick, self.ends, first
            )
        answer = self._processors.start(ids, spec.max_new_tokens)
        choose = partial(_pick, spec=spec, generator=generator)
        with torch.inference_mode():
            out = model(input_ids=torch.tensor([ids]), use_cache=True)
            past = out.past_key_values
            token = answer.token(out.logits[0, -1], choose)
            first()
            tokens = [token]
            while len(tokens) < spec.max_new_tokens and not self.ends(tokens, spec):
                out = model(input_ids=torch.tensor([[token]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                token = answer.token(out.logits[0, -1], choose)
                tokens.append(token)
        return tokens

    def generate_batch(
        self,
        rows: list[list[int]],
        spec: GenerationSpec,
        indexes: list[int],
        first: First,
        done: Callable[[int, list[int]], None],
    ) -> None:
        """The prompts left-padded to one width under an attention mask (positions counted
        from each prompt's own start, as transformers' ``generate`` does), one step for the
        whole batch after that; an ended row rides along until the last one ends, its tokens
        no longer read."""
        import torch

        if self._encdec is not None:
            self._encoder_decoder_batch(rows, spec, indexes, first, done)
            return
        model = self._model
        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, row in enumerate(rows):
            ids[r, width - len(row) :] = torch.tensor(row)
            mask[r, width - len(row) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        generators: list[Any] = [None] * len(rows)
        if spec.sampling == "seeded":
            generators = [torch.Generator().manual_seed((spec.seed + i) % (2**63)) for i in indexes]
        answers: list[list[int]] = [[] for _ in rows]
        states = [self._processors.start(row, spec.max_new_tokens) for row in rows]
        live = list(range(len(rows)))
        with torch.inference_mode():
            out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
            step = positions[:, -1:] + 1
            while True:
                logits = out.logits[:, -1]
                for r in live:
                    choose = partial(_pick, spec=spec, generator=generators[r])
                    answers[r].append(states[r].token(logits[r], choose))
                if len(answers[live[0]]) == 1:
                    first()
                for r in list(live):
                    if len(answers[r]) >= spec.max_new_tokens or self.ends(answers[r], spec):
                        live.remove(r)
                        done(r, answers[r])
                if not live:
                    return
                mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=torch.long)], dim=1)
                feed = torch.tensor([[a[-1]] for a in answers])
                out = model(
                    input_ids=feed,
                    attention_mask=mask,
                    position_ids=step,
                    past_key_values=out.past_key_values,
                    use_cache=True,
                )
                step = step + 1

    def generate_features(
        self, features: Any, spec: GenerationSpec, index: int, first: First
    ) -> list[int]:
        """A speech encoder-decoder's answer to one sample's log-mel features."""
        import torch

        assert self._encdec is not None and self._encdec.encoder_input == "input_features"
        generator = None
        if spec.sampling == "seeded":
            generator = torch.Generator().manual_seed((spec.seed + index) % (2**63))
        inputs = torch.from_numpy(features).to(self._model.dtype)
        return self._encdec.generate(inputs, spec, generator, _pick, self.ends, first)

    def _encoder_decoder_batch(
        self,
        rows: list[list[int]],
        spec: GenerationSpec,
        indexes: list[int],
        first: First,
        done: Callable[[int, list[int]], None],
    ) -> None:
        """The prompts right-padded under an attention mask, as transformers' tokenizer pads
        an encoder's inputs (the padded places are masked out of every attention)."""
        import torch

        assert self._encdec is not None
        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, row in enumerate(rows):
            ids[r, : len(row)] = torch.tensor(row)
            mask[r, : len(row)] = 1
        generators: list[Any] = [None] * len(rows)
        if spec.sampling == "seeded":
            generators = [torch.Generator().manual_seed((spec.seed + i) % (2**63)) for i in indexes]
        self._encdec.generate_batch(ids, mask, spec, generators, _pick, self.ends, first, done)

    def reference_ids(
        self, prompts: list[str], references: list[str], spec: GenerationSpec, stop: First
    ) -> list[tuple[list[int], int]]:
        """An encoder-decoder's reference is the decoder's answer: the prompt's ids (as the
        run encoded them) then the reference's, tokenized alone as transformers' tokenizer
        makes a model's ``labels`` (special tokens included: T5's ``</s>``), cut at the
        decoder's context; the reference's begin after the prompt's."""
        if self._encdec is None:
            return super().reference_ids(prompts, references, spec, stop)
        texts = [self.chat_text(p) for p in prompts] if spec.chat_template else list(prompts)
        encoded = self.encode_all(
            texts,
            limit=self.context or NO_CONTEXT,
            truncate=False,
            special=not spec.chat_template,
            stop=stop,
        )
        answers = self.encode_all(
            [r.strip() for r in references],
            limit=self.decoder_context or NO_CONTEXT,
            truncate=True,
            special=True,
            stop=stop,
        )
        return [(p + a, len(p)) for p, a in zip(encoded, answers, strict=True)]

    def reference_loss(self, ids: list[int], start: int) -> tuple[float, int]:
        """An encoder-decoder's every reference token is scored (its decoder starts from its
        own start token); a decoder's from the second on (``Generator.reference_loss``)."""
        if self._encdec is None or start >= len(ids):
            return super().reference_loss(ids, start)
        import torch

        ref = ids[start:]
        return self._encdec.reference_loss(torch.tensor([ids[:start]]), ref), len(ref)

    def scored_nll(self, ids: list[int], begin: int) -> float:
        import torch

        with torch.inference_mode():
            logits = self._model(input_ids=torch.tensor([ids])).logits[0].float()
        picked = torch.log_softmax(logits[begin - 1 : len(ids) - 1], dim=-1)
        return float(-picked.gather(1, torch.tensor(ids[begin:])[:, None]).sum())

    def close(self) -> None:
        self._model = None
        self._encdec = None
        if self._threads is not None:
            import torch

            torch.set_num_threads(self._threads)


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
