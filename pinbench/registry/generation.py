"""A text-generation request's settings (``generation:``), pinned in its lockfile.

How each answer is generated (how many new tokens at most, greedy or seeded sampling, stop
sequences, the tokenizer's chat template) and, for the Server scenario, the token latency
bounds LoadGen judges the run by (MLPerf's ``ttft_latency`` / ``tpot_latency``, with presets
from MLPerf's ``mlperf.conf``). Every field is honoured by the evaluator or refused here.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from pinbench import bounds as b

MAX_STOPS = 16
MAX_STOP_CHARS = 256
MAX_LANGUAGE_CHARS = 32
"""Longer than any language Whisper names (``<|haw|>``, ``haitian creole``)."""

LATENCY_PRESETS: Final[dict[str, tuple[float, float]]] = {
    "llama2-70b": (2000.0, 200.0),
    "mixtral-8x7b": (2000.0, 200.0),
    "llama3_1-8b": (2000.0, 100.0),
    "llama3_1-405b": (6000.0, 175.0),
}
"""MLPerf Inference's Server bounds by benchmark (``mlperf.conf``: ``*.Server.ttft_latency``
and ``*.Server.tpot_latency``, in ms)."""

StopText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_STOP_CHARS)]
LanguageName = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_LANGUAGE_CHARS)]

LATE_GENERATION_FIELDS = ("language", "task")
"""Left out of lockfiles while unset, so the digests of lockfiles made before Whisper's prompt
was honoured do not change (decision 260)."""


class GenerationSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """How answers are generated; see the module."""

    max_new_tokens: Annotated[int, b.MAX_NEW_TOKENS.meta]
    """At most this many tokens per answer (an end-of-text token ends one sooner)."""
    sampling: Literal["greedy", "seeded"] = "greedy"
    """``greedy``: the most likely token each step; ``seeded``: sampled with ``temperature``
    (and ``top_k``) from a generator seeded with ``seed`` plus the sample's index, so every
    answer is the same in every run and in any order."""
    temperature: Annotated[float, b.TEMPERATURE.meta] | None = None
    top_k: Annotated[int, b.GENERATION_TOP_K.meta] | None = None
    seed: Annotated[int, b.SEED.meta] = 0
    stop: list[StopText] = msgspec.field(default_factory=list)
    """Texts that end an answer where they appear (the answer is cut before it)."""
    chat_template: bool = False
    """Wrap each prompt as a user message in the tokenizer's chat template (the model's
    ``tokenizer_config.json`` must have one)."""
    stop_at_end: bool = True
    """End an answer at the model's end-of-text token; false generates ``max_new_tokens``
    every time (fixed-length answers, as throughput tests use)."""
    latency_preset: Literal["llama2-70b", "mixtral-8x7b", "llama3_1-8b", "llama3_1-405b"] | None = (
        None
    )
    """Server bounds from MLPerf's ``mlperf.conf`` (explicit ``*_latency_ms`` still win)."""
    ttft_latency_ms: Annotated[float, b.TOKEN_LATENCY_MS.meta] | None = None
    """Server: time to first token at the scenario's percentile must be within this."""
    tpot_latency_ms: Annotated[float, b.TOKEN_LATENCY_MS.meta] | None = None
    """Server: time per output token after the first, likewise."""
    language: LanguageName | None = None
    """A Whisper model's language token, as transformers' ``generate(language=...)`` takes it
    (``en``, ``english`` or ``<|en|>``), from the generation config's ``lang_to_id``; unset:
    the checkpoint's own (``forced_decoder_ids``, ``language``), else detected as ``generate``
    detects it (decision 260). Refused on other models."""
    task: Literal["transcribe", "translate"] | None = None
    """A Whisper model's task token (``task_to_id``), as ``generate(task=...)``; unset: the
    checkpoint's own, else ``transcribe`` where a language is given."""

    def __post_init__(self) -> None:
        if self.sampling == "greedy" and (self.temperature is not None or self.top_k is not None):
            raise ValueError(
                "generation.temperature and top_k go with sampling: seeded (greedy picks the "
                "most likely token)"
            )
        if self.sampling == "seeded" and self.temperature is None:
            raise ValueError("generation.sampling seeded needs a temperature (> 0)")
        if len(self.stop) > MAX_STOPS:
            raise ValueError(f"generation.stop lists {len(self.stop)} texts: at most {MAX_STOPS}")
        if len(set(self.stop)) != len(self.stop):
            raise ValueError("generation.stop lists a text twice")

    def latency_bounds(self) -> tuple[float | None, float | None]:
        """(TTFT, TPOT) bounds in ms: explicit, else the preset's, else none."""
        ttft, tpot = LATENCY_PRESETS.get(self.latency_preset or "", (None, None))
        return (
            self.ttft_latency_ms if self.ttft_latency_ms is not None else ttft,
            self.tpot_latency_ms if self.tpot_latency_ms is not None else tpot,
        )
