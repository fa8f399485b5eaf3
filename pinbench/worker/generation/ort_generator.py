"""Generating with ONNX Runtime: pinbench's decoder-with-past layout, one token a step.

The graph takes ``input_ids`` ``(1, 1)`` int64 and, per layer ``i``, ``past_key_i`` and
``past_value_i`` ``(1, heads, T, head size)``, and gives ``logits`` ``(1, vocab)`` for the next
token and ``present_key_i`` / ``present_value_i`` with ``T + 1`` positions (the catalog's
``text/tiny-gpt-onnx`` is such an export). The prompt is fed one token a step through the same
graph (the cache starts empty), then each answer token: the arithmetic of causal attention,
so greedy answers are the transformers generator's token for token (tested). The artifact
holds the model's ``tokenizer.json``, ``config.json`` (its context) and
``generation_config.json`` (its end-of-text token, and the settings ``processors`` applies or
refuses) beside the ``.onnx`` file.
"""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from pinbench.errors import UserError
from pinbench.registry.generation import GenerationSpec
from pinbench.worker.generation.decoder import First, Generator, end_tokens, token_nll
from pinbench.worker.generation.processors import Processors, check_settings
from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

LAYOUT = (
    "pinbench's decoder-with-past layout: inputs input_ids (1, 1) and past_key_i/past_value_i, "
    "outputs logits (1, vocab) and present_key_i/present_value_i"
)


class OrtGenerator(Generator):
    def __init__(self) -> None:
        super().__init__()
        self._session: Any = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._past: list[str] = []
        self._shapes: list[tuple[int, int]] = []
        self._processors = Processors()

    def open(self, model: ModelFiles, threads: int | None) -> None:
        import onnxruntime as ort

        from pinbench.artifacts.hf_folder import read_json
        from pinbench.artifacts.hf_shapes import ShapeMismatch, check_config
        from pinbench.worker.model_folder import FOLDER, confined, materialise
        from pinbench.worker.predictors.onnxruntime.predictor import check_model

        name = check_model(model)
        found = {p.rsplit("/", 1)[-1]: p for p in model.files}
        missing = [f for f in ("tokenizer.json", "config.json") if f not in found]
        if missing:
            raise ModelLoadError(
                model=name,
                reason=f"a generating ONNX model needs {' and '.join(missing)} among its files",
            )
        config = read_json(model.files[found["config.json"]], found["config.json"])
        generation = (
            read_json(model.files[found["generation_config.json"]], "generation_config.json")
            if "generation_config.json" in found
            else {}
        )
        if not isinstance(config, dict) or not isinstance(generation, dict):
            raise ModelLoadError(model=name, reason="config.json is not a JSON object")
        try:  # its numbers bounded (the context sizes the tokenizer's arrays)
            check_config(config, None)
        except ShapeMismatch as exc:
            raise ModelLoadError(model=found["config.json"], reason=exc.reason) from None
        context = next(
            (
                v
                for k in ("n_positions", "max_position_embeddings")
                if isinstance(v := config.get(k), int) and v > 0
            ),
            None,
        )
        self.load_tokenizer(
            model.files[found["tokenizer.json"]],
            name=found["tokenizer.json"],
            context=context,
            end=end_tokens(generation, config),
        )
        root = confined(model.files)
        if root is None:
            self._dir = tempfile.TemporaryDirectory(prefix="pinbench-onnx-")
            root = Path(self._dir.name) / FOLDER
            materialise(model.files, root)
        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(
                str(root / name), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # ORT's own exception types
            raise ModelLoadError(model=name, reason=str(exc).replace(str(root), ".")) from None
        self._bind(session, name)
        self._session = session
        self._processors = _processors(generation, config, session, found)
        self.applied = self._processors.applied()

    def _bind(self, session: Any, name: str) -> None:
        ins = {a.name: a for a in session.get_inputs()}
        outs = [a.name for a in session.get_outputs()]
        layers = sum(1 for n in ins if n.startswith("past_key_"))
        self._past = [f"past_{k}_{i}" for i in range(layers) for k in ("key", "value")]
        wanted_in = {"input_ids", *self._past}
        present = [f"present_{k}_{i}" for i in range(layers) for k in ("key", "value")]
        if layers == 0 or set(ins) != wanted_in or outs != ["logits", *present]:
            raise ModelLoadError(
                model=name,
                reason=f"its inputs {sorted(ins)} and outputs {outs} are not {LAYOUT}",
            )
        self._shapes = []
        for past in self._past:
            shape = ins[past].shape
            if len(shape) != 4 or not all(isinstance(d, int) for d in (shape[1], shape[3])):
                raise ModelLoadError(
                    model=name, reason=f"{past} has shape {shape}; want (1, heads, T, head size)"
                )
            self._shapes.append((int(shape[1]), int(shape[3])))

    def _empty(self) -> dict[str, Any]:
        return {
            n: np.zeros((1, h, 0, d), np.float32)
            for n, (h, d) in zip(self._past, self._shapes, strict=True)
        }

    def _step(self, token: int, past: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        got = self._session.run(None, {"input_ids": np.array([[token]], np.int64), **past})
        return got[0][0], dict(zip(self._past, got[1:], strict=True))

    def generate(self, ids: list[int], spec: GenerationSpec, index: int, first: First) -> list[int]:
        """One feed reused step after step (the token written in place, the cache replaced by
        what the step gave): the loop holds the session's calls and the token choice only."""
        greedy = spec.sampling == "greedy"
        rng = None if greedy else np.random.default_rng((spec.seed + index) % (2**63))
        run, names = self._session.run, self._past
        answer = self._processors.start(ids, spec.max_new_tokens)
        choose = partial(pick, spec=spec, rng=rng)
        token_in = np.zeros((1, 1), np.int64)
        feed = {"input_ids": token_in, **self._empty()}
        got: Any = None
        for token in ids:
            token_in[0, 0] = token
            got = run(None, feed)
            feed.update(zip(names, got[1:], strict=True))
        token = answer.token(got[0][0], choose)
        first()
        tokens = [token]
        plain = not spec.stop and not spec.stop_at_end
        limit = spec.max_new_tokens
        while len(tokens) < limit and (plain or not self.ends(tokens, spec)):
            token_in[0, 0] = token
            got = run(None, feed)
            feed.update(zip(names, got[1:], strict=True))
            token = answer.token(got[0][0], choose)
            tokens.append(token)
        return tokens

    def scored_nll(self, ids: list[int], begin: int) -> float:
        past = self._empty()
        nll = 0.0
        for position, token in enumerate(ids[:-1]):
            logits, past = self._step(token, past)
            if position >= begin - 1:
                nll += token_nll(logits, ids[position + 1])
        return nll

    def close(self) -> None:
        self._session = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _processors(
    generation: dict[str, Any], config: dict[str, Any], session: Any, found: dict[str, str]
) -> Processors:
    """generation_config.json's settings checked as data (``processors``, decision 272), its
    ids within the logits' width (config.json's ``vocab_size``, else the graph's)."""
    where = found.get("generation_config.json", "generation_config.json")
    width = config.get("vocab_size")
    if not isinstance(width, int) or isinstance(width, bool):
        width = session.get_outputs()[0].shape[-1]
    try:
        check_settings(generation)
        processors = Processors.of(generation)
        if isinstance(width, int):
            processors.check(width)
        elif any(k.endswith(("_ids", "_id", "_tokens")) for k in processors.applied()):
            raise UserError("its token ids cannot be checked: config.json names no vocab_size")
    except UserError as exc:
        raise ModelLoadError(model=where, reason=str(exc)) from None
    return processors


def pick(logits: Any, spec: GenerationSpec, rng: Any) -> int:
    if spec.sampling == "greedy":
        return int(np.argmax(logits))
    assert spec.temperature is not None and rng is not None
    scores = logits.astype(np.float64) / spec.temperature
    if spec.top_k is not None and spec.top_k < scores.size:
        kth = np.sort(scores)[-spec.top_k]
        scores = np.where(scores < kth, -np.inf, scores)
    probs = np.exp(scores - scores.max())
    probs /= probs.sum()
    return int(rng.choice(probs.size, p=probs))
