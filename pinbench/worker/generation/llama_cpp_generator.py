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
        name = next(p for p in model.files if PurePosixPath(p).suffix == ".gguf")
        path = folder.root.joinpath(*PurePosixPath(name).parts)
        try:  # as publishing checked it, and its vocabulary against the tokenizer's
            metadata = check_gguf(name, path)
        except GGUFRefused as exc:
            raise ModelLoadError(model=exc.path, reason=exc.reason) from None
        check_vocabulary(self, metadata["tokenizer.ggml.tokens"], name)
        self._processors = processors_of(folder)
        self.applied = self._processors.applied()
        context = folder.context or 2048
        self._engine = _load(str(path), name, context, threads, folder)
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

    def reference_loss(self, ids: list[int], start: int) -> tuple[float, int]:
        if start >= len(ids):
            return 0.0, 0
        self._engine.reset()
        nll = 0.0
        for position, token in enumerate(ids[:-1]):
            logits = self._step([token])
            if position >= start - 1:
                nll += token_nll(logits, ids[position + 1])
        return nll, len(ids) - start

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        if self._folder is not None:
            self._folder.close()
            self._folder = None


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
            n_batch=context,
            n_ubatch=context,
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
