"""Generating with llama.cpp through llama-cpp-python (``format: gguf``): one GGUF file, its
weights in the type its converter wrote (f32, q8_0, ...), the engine's own KV cache.

pinbench's loop drives the engine as it drives ONNX Runtime GenAI (``ort_genai_generator``):
the prompt's ids go in with ``Llama.eval`` (one batch), the last position's logits come out
(``llama_get_logits_ith``), and the token is chosen here, the generation config's settings
applied (``processors``): greedy the arg-max (ties to the lowest id), seeded sampling with
``seed + sample index``; the chosen token goes back in with ``eval``. The engine's own
sampler, its tokenizer and its chat template are not used: prompts are pinbench's tokenizer's
ids, so the file's vocabulary must be ``tokenizer.json``'s, id for id (checked when the model
opens, from the file's header read as data: ``registry.gguf_header``). Each answer starts from
an empty cache (``reset``, and ``eval`` drops what the cache held past it): no answer reuses
another's prompt.
"""

from __future__ import annotations

from functools import partial
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from pinbench.registry.generation import GenerationSpec
from pinbench.worker.generation.decoder import First, Generator, token_nll
from pinbench.worker.generation.engine_folder import (
    EngineFolder,
    check_vocabulary,
    open_for,
    processors_of,
)
from pinbench.worker.generation.ort_generator import pick
from pinbench.worker.generation.processors import Processors
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

MARKER = "*.gguf"
MOST = 32_768
"""The longest context pinbench makes the engine with (its KV cache and buffers grow with it)."""
BATCH = 512
"""Tokens the engine computes at once (llama.cpp's default): its compute buffers grow with the
square of it."""
REPACKED = False
"""Whether llama.cpp may repack quantised weights into the CPU's extra buffer types (its
default: AMX and AVX-512 layouts where the processor has them). On this project's machine (a
processor with AMX, the wheel built for it) the repacked q8_0 weights of the tiny LLaMA crashed
the worker in its first ``eval`` (a segmentation fault; the same file ran unrepacked, and in a
portable build); float32 weights are never repacked. So pinbench loads weights as the file
gives them, and says so (docs/engines.md)."""


class LlamaCppGenerator(Generator):
    def __init__(self) -> None:
        super().__init__()
        self._engine: Any = None
        self._logits: Any = None
        self._width = 0
        self._folder: EngineFolder | None = None
        self._processors = Processors()

    def open(self, model: ModelFiles, threads: int | None) -> None:
        from pinbench.registry.gguf_header import GGUFRefused, check_gguf

        folder = open_for(self, model, marker=MARKER, engine="llama-cpp-python")
        self._folder = folder
        name = next(p for p in model.files if PurePosixPath(PurePosixPath(p).name).match(MARKER))
        path = folder.root.joinpath(*PurePosixPath(name).parts)
        try:  # as publishing checked it, and its vocabulary against the tokenizer's
            metadata = check_gguf(name, path)
        except GGUFRefused as exc:
            raise ModelLoadError(model=exc.path, reason=exc.reason) from None
        words = metadata["tokenizer.ggml.tokens"]
        check_vocabulary(self, words, name)
        if folder.config.get("vocab_size") != len(words):
            raise ModelLoadError(
                model="config.json",
                reason=f"its vocab_size {folder.config.get('vocab_size')} is not the GGUF "
                f"file's {len(words)} tokens",
            )
        self.context = _context(folder.context, metadata, name)
        self._processors = processors_of(folder)
        self.applied = self._processors.applied()
        self._engine = _load(str(path), name, self.context, threads, folder)
        import llama_cpp

        self._logits = llama_cpp.llama_get_logits_ith
        self._width = self._engine.n_vocab()

    def _step(self, ids: list[int]) -> Any:
        """The logits after ``ids`` are appended to the engine's sequence."""
        self._engine.eval(ids)
        row = self._logits(self._engine.ctx, -1)
        return np.ctypeslib.as_array(row, shape=(self._width,))

    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        greedy = spec.sampling == "greedy"
        rng = None if greedy else np.random.default_rng((spec.seed + index) % (2**63))
        choose = partial(pick, spec=spec, rng=rng)
        answer = self._processors.start(ids, spec.max_new_tokens)
        self._engine.reset()
        token = answer.token(self._step(ids), choose)
        first()
        tokens = [token]
        plain = not spec.stop and not spec.stop_at_end
        limit = spec.max_new_tokens
        while len(tokens) < limit and (plain or not self.ends(tokens, spec)):
            token = answer.token(self._step([token]), choose)
            tokens.append(token)
        return tokens

    def scored_nll(self, ids: list[int], begin: int) -> float:
        self._engine.reset()
        nll = 0.0
        for position, token in enumerate(ids[:-1]):
            logits = self._step([token])
            if position >= begin - 1:
                nll += token_nll(logits, ids[position + 1])
        return nll

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        if self._folder is not None:
            self._folder.close()
            self._folder = None


def _context(config: int | None, metadata: dict[str, Any], name: str) -> int:
    """The context the engine is made with, and prompts are bounded by: the GGUF file's own
    (``<architecture>.context_length``), refused where config.json claims a longer one;
    ``MOST`` at most (the engine's buffers grow with it)."""
    own = metadata.get(f"{metadata['general.architecture']}.context_length")
    if not isinstance(own, int) or own < 1:
        raise ModelLoadError(model=name, reason="it names no context_length")
    if config is not None and config > own:
        raise ModelLoadError(
            model="config.json",
            reason=f"its context {config} is longer than the GGUF file's {own}",
        )
    return min(config or own, MOST)


def _load(path: str, name: str, context: int, threads: int | None, folder: EngineFolder) -> Any:
    """The engine on the CPU: a context of the model's length, a prompt in one batch, its own
    threads ``threads`` (its default where None), nothing it would print; the weights in the
    buffers the file gives them (``REPACKED``)."""
    import llama_cpp.llama_cpp as low  # the module the constructor takes its defaults from
    from llama_cpp import Llama

    default = low.llama_model_default_params

    def unpacked() -> Any:
        params = default()
        params.use_extra_bufts = REPACKED
        return params

    setattr(low, "llama_model_default_params", unpacked)  # noqa: B010 - read once, below
    try:
        return Llama(
            model_path=path,
            n_ctx=context,
            n_batch=min(context, BATCH),  # eval splits a longer prompt into batches
            n_ubatch=min(context, BATCH),
            type_k=low.GGML_TYPE_F32,  # the cache in float32, as the weights (its default: f16)
            type_v=low.GGML_TYPE_F32,
            n_threads=threads,
            n_threads_batch=threads,
            n_gpu_layers=0,
            use_mmap=True,
            chat_format="llama-2",  # named: none is guessed from the file (none is used)
            verbose=False,
        )
    except Exception as exc:  # the engine's own error types (ValueError: failed to load)
        reason = str(exc).replace(str(folder.root), ".")
        raise ModelLoadError(model=name, reason=reason) from None
    finally:
        setattr(low, "llama_model_default_params", default)  # noqa: B010
