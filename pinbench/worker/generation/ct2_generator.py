"""Generating with CTranslate2 (``format: ctranslate2``): the engine's own decoding loop
(``Generator.generate_tokens``), token by token, in the compute type the model was converted
to.

CTranslate2 has no step that hands out logits with its cache kept, so the engine chooses each
token: greedy is its top-1 (``sampling_topk=1``). Seeded sampling is refused: the engine's
random generator is made once per thread and ``ctranslate2.set_random_seed`` does not reach it
again, so an answer sampled with the same seed differed with the answers drawn before it
(sample 0, then 1, then 0 again gave another answer), where pinbench's seeded answers are the
same in every run and any order. It never ends an answer itself (no end token):
pinbench's stop rules end it (``decoder.ends``), closing the engine's iterator. The
generation config's settings that change a token (``processors.APPLIED``) are not applied by
this loop, so a model that declares one is refused when it opens, naming it.

The prompt goes in as the engine's vocabulary's tokens; its vocabulary must be the tokenizer's,
id for id (checked when the model opens). The reference loss is the engine's own scoring
(``score_batch``: each token's log-probability after the ones before it).
"""

from __future__ import annotations

from typing import Any

from pinbench.errors import UserError
from pinbench.registry.generation import GenerationSpec
from pinbench.worker.generation.decoder import First, Generator
from pinbench.worker.generation.engine_folder import (
    EngineFolder,
    check_vocabulary,
    open_for,
    refuse_settings,
)
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

MARKER = "model.bin"
VOCABULARY = "vocabulary.json"
MAX_VOCABULARY = 1_048_576


class CT2Generator(Generator):
    def __init__(self) -> None:
        super().__init__()
        self._ct2: Any = None
        self._engine: Any = None
        self._folder: EngineFolder | None = None
        self._vocabulary: list[str] = []

    def open(self, model: ModelFiles, threads: int | None) -> None:
        import ctranslate2

        folder = open_for(self, model, marker=MARKER, engine="ctranslate2")
        self._folder = folder
        refuse_settings(folder, "CTranslate2")
        self._vocabulary = self._check_vocabulary(folder)
        try:
            self._engine = ctranslate2.Generator(
                str(folder.engine),
                device="cpu",
                compute_type="default",  # the model's own, as converted
                inter_threads=1,
                intra_threads=threads or 0,
            )
        except Exception as exc:  # the engine's own error types
            reason = str(exc).replace(str(folder.root), ".")
            raise ModelLoadError(model=MARKER, reason=reason) from None
        self._ct2 = ctranslate2

    def _check_vocabulary(self, folder: EngineFolder) -> list[str]:
        """The engine's vocabulary, refused unless it is the tokenizer's id for id."""
        import json

        path = folder.engine / VOCABULARY
        try:
            if path.stat().st_size > 64 * MAX_VOCABULARY:
                raise ValueError("larger than any vocabulary")
            words = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise ModelLoadError(model=VOCABULARY, reason=f"not readable: {exc}") from None
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise ModelLoadError(model=VOCABULARY, reason="not a JSON list of tokens")
        check_vocabulary(self, words, VOCABULARY)
        return words

    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        vocabulary = self._vocabulary
        if spec.sampling == "greedy":
            choice: dict[str, Any] = {"sampling_topk": 1}
        else:  # refused when locked (``registry.lockfile``); a lockfile made otherwise too
            raise UserError(
                "seeded sampling on ctranslate2 is refused: its random generator is seeded once "
                "per thread, so an answer would depend on the answers drawn before it"
            )
        steps = self._engine.generate_tokens(
            [vocabulary[i] for i in ids],
            max_length=spec.max_new_tokens,
            end_token=[],
            **choice,
        )
        tokens: list[int] = []
        plain = not spec.stop and not spec.stop_at_end
        try:
            for step in steps:
                tokens.append(step.token_id)
                if len(tokens) == 1:
                    first()
                if len(tokens) >= spec.max_new_tokens or (not plain and self.ends(tokens, spec)):
                    break
        finally:
            steps.close()
        return tokens

    def scored_nll(self, ids: list[int], begin: int) -> float:
        vocabulary = self._vocabulary
        (scored,) = self._engine.score_batch([[vocabulary[i] for i in ids]], max_input_length=0)
        log_probs = list(scored.log_probs)  # each token's after the ones before it, from the 2nd
        return -float(sum(log_probs[begin - 1 :]))

    def close(self) -> None:
        self._engine = None
        if self._folder is not None:
            self._folder.close()
            self._folder = None
