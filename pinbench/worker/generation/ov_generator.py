"""Generating with OpenVINO GenAI (``format: openvino``): the engine's ``LLMPipeline`` over the
stateful OpenVINO IR optimum-intel's exporter wrote (``openvino_model.xml`` and ``.bin``, its
KV cache kept in the model's state), in float32 (``INFERENCE_PRECISION_HINT`` and
``KV_CACHE_PRECISION`` f32: the CPU plugin's default on a processor with bf16 is bf16).

The engine's own loop chooses each token, streamed back one by one (``StreamerBase.write``,
which the engine calls on a thread of its own). LoadGen hears of a first token only from the
query's thread (``scenario._Query``), so the engine generates on a thread of pinbench's
(``generate`` waits there), the streamer wakes the query's thread at the first token, which
tells LoadGen, and an answer is complete once the streamer has ended. The first token's time
thus includes one thread's wake-up, as any client of a streaming engine sees it:
greedy is its arg-max, seeded its own sampler (``top_k``, or every token; the ``temperature``),
seeded with ``rng_seed = seed + sample index``. It never ends an answer itself
(``ignore_eos``): pinbench's stop rules end it (``decoder.ends``), the streamer saying stop.
The generation config's settings that change a token are not applied by this loop, so a model
that declares one is refused when it opens, naming it. The prompt goes in as pinbench's
tokenizer's ids (``TokenizedInputs``), never through the engine's tokenizer models.

The reference loss (perplexity) comes from the same IR compiled on its own, one inference of
the whole text with the state reset: each position's logits for the next token.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.generation import GenerationSpec
from pinbench.worker.generation.decoder import First, Generator, token_nll
from pinbench.worker.generation.engine_folder import EngineFolder, open_for, refuse_settings
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

MARKER = "openvino_model.xml"
F32 = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "ATTENTION_BACKEND": "SDPA"}
"""Float32, and the stateful model's own KV cache (``SDPA``): the engine's default backend
(paged attention) caches prompt prefixes across answers, so a prompt seen before (the warm-up's,
a dataset's repeated in a performance test) would skip its prefill where no other engine
does."""
ENGINE_FILES = ("openvino_model.xml", "openvino_model.bin", "config.json", "generation_config.json")
"""What the engine is given of its folder (links in a folder of their own): the model and the
configs it reads, never the tokenizer's models (pinbench gives it ids) or anything else."""
WAKE_S = 0.05
"""How often the query's thread, waiting for the first token, looks whether the answer ended
without one."""
STREAMER_WAIT_S = 60
"""How long an answer waits for the engine's streamer thread to end after ``generate``
returns."""


class OpenVINOGenerator(Generator):
    def __init__(self) -> None:
        super().__init__()
        self._genai: Any = None
        self._ov: Any = None
        self._pipeline: Any = None
        self._scorer: Any = None
        self._config: dict[str, Any] = {}
        self._folder: EngineFolder | None = None
        self._engine = Path()
        self._vocabulary = 0

    def open(self, model: ModelFiles, threads: int | None) -> None:
        import openvino as ov
        import openvino_genai as genai

        folder = open_for(self, model, marker=MARKER, engine="openvino-genai")
        self._folder = folder
        refuse_settings(folder, "OpenVINO GenAI")
        self._vocabulary = int(folder.config["vocab_size"])  # checked: processors_of
        self._config = {**F32, **({"INFERENCE_NUM_THREADS": threads} if threads else {})}
        from pinbench.registry.engine_formats import EngineFolderRefused, check_openvino_ir

        try:
            check_openvino_ir(MARKER, folder.engine / MARKER)
        except EngineFolderRefused as exc:
            raise ModelLoadError(model=exc.path, reason=exc.reason) from None
        engine = folder.engine_files("pinbench-openvino-")
        for name in ENGINE_FILES:
            if (folder.engine / name).is_file():
                (engine / name).symlink_to(folder.engine / name)
        self._engine = engine
        try:
            self._pipeline = genai.LLMPipeline(str(engine), "CPU", **self._config)
        except Exception as exc:  # the engine's own error types
            reason = str(exc).replace(str(folder.root), ".")
            raise ModelLoadError(model=MARKER, reason=reason) from None
        self._genai, self._ov = genai, ov
        from concurrent.futures import ThreadPoolExecutor

        self._own = ThreadPoolExecutor(1, thread_name_prefix="openvino")

    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        genai, ov = self._genai, self._ov
        config = genai.GenerationConfig()
        config.max_new_tokens = spec.max_new_tokens
        config.ignore_eos = True
        if spec.sampling == "greedy":
            config.do_sample = False
        else:
            config.do_sample = True
            config.temperature = float(spec.temperature or 1.0)
            config.top_k = spec.top_k or self._vocabulary
            config.top_p = 1.0
            config.rng_seed = (spec.seed + index) % (2**32)
        tokens: list[int] = []
        chosen, ended = threading.Event(), threading.Event()
        plain = not spec.stop and not spec.stop_at_end
        ends, limit = self.ends, spec.max_new_tokens

        base: Any = genai.StreamerBase

        class Streamer(base):  # type: ignore[misc]
            def write(self, token: Any) -> Any:
                for t in token if isinstance(token, list) else [token]:
                    tokens.append(int(t))
                    if len(tokens) == 1:
                        chosen.set()
                    if len(tokens) >= limit or (not plain and ends(tokens, spec)):
                        return genai.StreamingStatus.STOP
                return genai.StreamingStatus.RUNNING

            def end(self) -> None:
                ended.set()

        prompt = np.array([ids], dtype=np.int64)
        mask = np.ones_like(prompt)  # both kept alive here: a Tensor shares its array's memory
        inputs = genai.TokenizedInputs(ov.Tensor(prompt), ov.Tensor(mask))
        streamer = Streamer()
        answer = self._own.submit(self._pipeline.generate, inputs, config, streamer)
        while not chosen.wait(WAKE_S) and not answer.done():
            pass
        if chosen.is_set():
            first()  # from this thread, LoadGen's (``scenario._Query``)
        answer.result()
        if not ended.wait(STREAMER_WAIT_S):
            raise UserError(
                f"OpenVINO GenAI's streamer did not end {STREAMER_WAIT_S} s after its answer"
            )
        del inputs, prompt, mask, streamer
        return tokens[:limit]

    def scored_nll(self, ids: list[int], begin: int) -> float:
        if self._scorer is None:
            assert self._folder is not None
            core = self._ov.Core()
            scoring = {k: v for k, v in self._config.items() if k != "ATTENTION_BACKEND"}
            compiled = core.compile_model(str(self._engine / MARKER), "CPU", scoring)
            self._scorer = compiled.create_infer_request()
        scorer = self._scorer
        scorer.reset_state()
        n = len(ids)
        scorer.infer(
            {
                "input_ids": np.array([ids], dtype=np.int64),
                "attention_mask": np.ones((1, n), dtype=np.int64),
                "position_ids": np.arange(n, dtype=np.int64)[None],
                "beam_idx": np.zeros(1, dtype=np.int32),
            }
        )
        logits = np.asarray(scorer.get_tensor("logits").data, dtype=np.float64)[0]
        nll = 0.0
        for position in range(begin - 1, n - 1):
            nll += token_nll(logits[position], ids[position + 1])
        return nll

    def close(self) -> None:
        if self._pipeline is not None:
            self._own.shutdown()
        self._pipeline = self._scorer = None
        if self._folder is not None:
            self._folder.close()
            self._folder = None
