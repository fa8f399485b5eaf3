"""Generating with ONNX Runtime GenAI (``format: ort-genai``): the engine's model, its KV
cache and its buffers, its ``genai_config.json`` as its model builder wrote it.

pinbench's loop drives the engine as for every generator (``decoder``): the prompt's ids go
in with ``append_tokens``, each step's logits come out with ``get_logits``, and the token is
chosen here, the generation config's settings applied (``processors``) and greedy the arg-max
(ties to the lowest id), seeded sampled with ``seed + sample index``; the chosen token goes back
in with ``append_tokens``. So an answer ends where pinbench's stop rules say (an end-of-text
token is appended like any other where ``stop_at_end`` is false), and greedy answers are
transformers' token for token on the same float32 weights (``tests/test_engines.py``). The
engine's own search (``generate_next_token``) is not used: its rules for ending and sampling
are not transformers'. One engine generator per prompt, sized for the prompt and its
``max_new_tokens``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import numpy as np

from pinbench.registry.generation import GenerationSpec
from pinbench.worker.generation.decoder import First, Generator, token_nll
from pinbench.worker.generation.engine_folder import EngineFolder, open_for, processors_of
from pinbench.worker.generation.ort_generator import pick
from pinbench.worker.generation.processors import Processors
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

MARKER = "genai_config.json"


class OrtGenAIGenerator(Generator):
    def __init__(self) -> None:
        super().__init__()
        self._og: Any = None
        self._model: Any = None
        self._folder: EngineFolder | None = None
        self._processors = Processors()

    def open(self, model: ModelFiles, threads: int | None) -> None:
        import onnxruntime_genai as og

        from pinbench.registry.engine_formats import EngineFolderRefused, check_genai

        folder = open_for(self, model, marker=MARKER, engine="onnxruntime-genai")
        self._folder = folder
        marker = next(p for p in model.files if p.rsplit("/", 1)[-1] == MARKER)
        try:  # as publishing checked it: the engine reads this data, written anew, alone
            checked = check_genai(marker, model.files.__getitem__, list(model.files))
        except EngineFolderRefused as exc:
            raise ModelLoadError(model=exc.path, reason=exc.reason) from None
        engine = folder.engine_files("pinbench-genai-")
        (engine / MARKER).write_text(json.dumps(checked.config))
        for path in (checked.decoder, *checked.data):
            (engine / path.rsplit("/", 1)[-1]).symlink_to(folder.root / path)
        context = checked.config["model"].get("context_length")
        if context is not None and folder.context is not None and context < folder.context:
            raise ModelLoadError(
                model=marker,
                reason=f"its context_length {context} is shorter than config.json's "
                f"{folder.context}, by which prompts are bounded",
            )
        self._processors = processors_of(folder)
        self.applied = self._processors.applied()
        try:
            config = og.Config(str(engine))
            config.clear_providers()  # the CPU's
            if threads is not None:
                options = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
                config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
            self._model = og.Model(config)
        except Exception as exc:  # the engine's own error types
            reason = str(exc).replace(str(folder.root), ".")
            raise ModelLoadError(model=MARKER, reason=reason) from None
        self._og = og

    def _engine(self, total: int) -> Any:
        params = self._og.GeneratorParams(self._model)
        params.set_search_options(max_length=total, do_sample=False, num_beams=1)
        return self._og.Generator(self._model, params)

    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        greedy = spec.sampling == "greedy"
        rng = None if greedy else np.random.default_rng((spec.seed + index) % (2**63))
        choose = partial(pick, spec=spec, rng=rng)
        answer = self._processors.start(ids, spec.max_new_tokens)
        engine = self._engine(len(ids) + spec.max_new_tokens)
        engine.append_tokens(ids)
        token = answer.token(engine.get_logits()[0, -1], choose)
        first()
        tokens = [token]
        plain = not spec.stop and not spec.stop_at_end
        limit = spec.max_new_tokens
        while len(tokens) < limit and (plain or not self.ends(tokens, spec)):
            engine.append_tokens([token])
            token = answer.token(engine.get_logits()[0, -1], choose)
            tokens.append(token)
        return tokens

    def scored_nll(self, ids: list[int], begin: int) -> float:
        engine = self._engine(len(ids))
        nll = 0.0
        for position, token in enumerate(ids[:-1]):
            engine.append_tokens([token])
            if position >= begin - 1:
                nll += token_nll(engine.get_logits()[0, -1], ids[position + 1])
        return nll

    def close(self) -> None:
        self._model = None
        if self._folder is not None:
            self._folder.close()
            self._folder = None
