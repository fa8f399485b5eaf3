"""Whisper's decoder prompt, built as transformers' ``WhisperForConditionalGeneration.generate``
builds it (``_set_language_and_task`` and ``_retrieve_init_tokens`` in transformers 5's
``models/whisper/generation_whisper.py``), from the generation config as data and the request's
``language`` and ``task`` (decision 260):

``<|startoftranscript|>`` (``decoder_start_token_id``), the language token, the task token,
``<|notimestamps|>`` (``no_timestamps_token_id``; timestamps are not asked for). A language or
task the request names replaces the checkpoint's; where neither is named, the checkpoint's
``language``/``task`` settings, else its ``forced_decoder_ids`` (positions 1, 2, ... after the
start), say them; where the language is still open and the config has ``lang_to_id``, it is
detected as ``generate`` detects it (the language token the decoder finds most likely after the
start token alone). The prompt is the decoder's input, not its answer: the answer, and the
tokens TTFT and TPOT count, are the tokens after it.

Every generation setting is honoured, has no effect on the tokens of a one-sample answer (said
why), or is refused naming it (``check_settings``): ``generate`` would answer otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinbench.errors import UserError

TASKS = ("translate", "transcribe")
"""transformers' ``TASK_IDS``."""

PROMPT_KEYS = (
    "decoder_start_token_id",
    "forced_decoder_ids",
    "lang_to_id",
    "task_to_id",
    "no_timestamps_token_id",
    "is_multilingual",
    "language",
    "task",
    "return_timestamps",
)
"""Settings the prompt is built from (``whisper_prompt``)."""

HONOURED = {
    **dict.fromkeys(PROMPT_KEYS, "the decoder's prompt"),
    "suppress_tokens": "never chosen (processors)",
    "begin_suppress_tokens": "not chosen first (processors)",
    "forced_bos_token_id": "the first token where the prompt is the start token alone",
    "forced_eos_token_id": "the token at the last step max_new_tokens allows",
    "eos_token_id": "ends an answer",
    "max_length": "replaced by the request's max_new_tokens, as generate's max_new_tokens "
    "replaces it",
    "max_new_tokens": "replaced by the request's, as generate's argument replaces it",
    "do_sample": "Whisper's generate sets it from its temperature argument, which the "
    "request's sampling stands for",
    "temperature": "Whisper's generate sets it from its temperature argument, which the "
    "request's sampling stands for",
}
"""Settings pinbench applies as ``generate`` applies them."""

NO_EFFECT = {
    "bos_token_id": "a decoder-only model's; Whisper's decoder starts from its prompt",
    "pad_token_id": "pads the rows of a batch; one sample is answered at a time",
    "alignment_heads": "read for token timestamps alone, which are not asked for",
    "max_initial_timestamp_index": "read with timestamps alone, which are not asked for",
    "prev_sot_token_id": "read with a previous text's prompt alone, which is not given",
    "use_cache": "the loop always keeps its KV cache",
    "output_attentions": "what generate returns beside the tokens",
    "output_hidden_states": "what generate returns beside the tokens",
    "output_scores": "what generate returns beside the tokens",
    "output_logits": "what generate returns beside the tokens",
    "return_dict_in_generate": "what generate returns beside the tokens",
    "transformers_version": "a record of the writer",
    "_from_model_config": "a record of where the settings came from",
}
"""Settings that do not change the tokens of one sample's short-form answer."""


class WhisperSettingRefused(UserError):
    def __init__(self, *, key: str, reason: str) -> None:
        super().__init__(f"Whisper's generation config: `{key}`: {reason}")
        self.key = key
        self.reason = reason


def check_settings(differing: Mapping[str, Any]) -> None:
    """Every setting that differs from transformers' defaults (``GenerationConfig
    .to_diff_dict()``) is honoured or changes nothing; another is refused naming it."""
    for key, value in sorted(differing.items()):
        if key in HONOURED or key in NO_EFFECT:
            continue
        raise WhisperSettingRefused(
            key=key,
            reason=f"{value!r:.60} changes how transformers' Whisper generate answers, and "
            "pinbench does not apply it (it honours the prompt, suppressed and forced tokens, "
            "and the request's generation section): remove it, or set it to transformers' "
            "default",
        )


@dataclass(frozen=True, slots=True)
class WhisperPrompt:
    """The decoder's prompt; ``None`` at most once, where the language is detected from
    ``languages`` (the ids of ``lang_to_id``)."""

    tokens: tuple[int | None, ...]
    languages: tuple[int, ...] = ()

    def ids(self) -> list[int]:
        """Every id the prompt may hold (each checked against the vocabulary)."""
        return [t for t in self.tokens if t is not None] + list(self.languages)


def whisper_prompt(
    settings: Mapping[str, Any],
    config_forced: Any,
    *,
    language: str | None,
    task: str | None,
    codes: Mapping[str, str],
) -> WhisperPrompt:
    """The prompt ``generate(language=language, task=task)`` starts from: ``settings`` is the
    generation config's ``to_dict()``, ``config_forced`` config.json's ``forced_decoder_ids``
    (read where the generation config has none), ``codes`` transformers' ``TO_LANGUAGE_CODE``
    (language names to codes)."""
    if settings.get("return_timestamps"):
        raise WhisperSettingRefused(
            key="return_timestamps",
            reason="timestamp decoding (WhisperTimeStampLogitsProcessor) is not run: set it "
            "to false",
        )
    multilingual = settings.get("is_multilingual", True)
    if "is_multilingual" in settings and not multilingual and (language or task):
        named = "language" if language else "task"
        raise UserError(
            f"generation.{named}: the model is English-only (`is_multilingual: "
            f"{multilingual}`): leave generation.language and generation.task unset"
        )
    for field, given, key in (("language", language, "lang_to_id"), ("task", task, "task_to_id")):
        if given is not None and key not in settings:
            raise UserError(
                f"generation.{field}: the model's generation config has no `{key}` to find "
                "the token in"
            )
    language = language if language is not None else settings.get("language")
    task = task if task is not None else settings.get("task")
    if isinstance(language, list | tuple):
        raise WhisperSettingRefused(
            key="language", reason="one language per sample is not run: name one language"
        )
    start = _token_id(settings.get("decoder_start_token_id"), "decoder_start_token_id")
    tokens: list[int | None] = [start]
    if task is None and language is None:
        forced = settings.get("forced_decoder_ids")
        if forced is None:
            forced = config_forced
        if forced is not None:
            tokens += _forced(forced)
    languages: tuple[int, ...] = ()
    if language is not None:
        _set(tokens, 1, _language_id(str(language), settings, codes))
    elif "lang_to_id" in settings and (len(tokens) <= 1 or tokens[1] is None):
        languages = tuple(_table(settings, "lang_to_id").values())
        if not languages:
            raise WhisperSettingRefused(
                key="lang_to_id", reason="is empty: no language can be detected"
            )
        _set(tokens, 1, None)
    table = _table(settings, "task_to_id") if "task_to_id" in settings else None
    if task is not None:
        if task not in TASKS:
            raise WhisperSettingRefused(key="task", reason=f"{task!r:.40} is not one of {TASKS}")
        if table is None or task not in table:
            raise WhisperSettingRefused(
                key="task_to_id", reason=f"names no `{task}` token for the task asked"
            )
        tokens.append(table[task])
    elif language is not None and table is not None and not set(table.values()) & set(tokens):
        if "transcribe" not in table:
            raise WhisperSettingRefused(
                key="task_to_id", reason="names no `transcribe` token, generate's default"
            )
        tokens.append(table["transcribe"])
    if settings.get("no_timestamps_token_id") is not None:  # generate appends, then drops, None
        stamp = _token_id(settings["no_timestamps_token_id"], "no_timestamps_token_id")
        if tokens[-1] != stamp:
            tokens.append(stamp)
    detect_at = 1 if languages else None
    return WhisperPrompt(
        tuple(t for i, t in enumerate(tokens) if t is not None or i == detect_at), languages
    )


def _set(tokens: list[int | None], at: int, value: int | None) -> None:
    """``generate``'s: the language replaces position 1 where the prompt has one."""
    if len(tokens) > at:
        tokens[at] = value
    else:
        tokens.append(value)


def _language_id(language: str, settings: Mapping[str, Any], codes: Mapping[str, str]) -> int:
    """As ``generate``'s ``language_to_id``: the token itself (``<|en|>``), a name
    (``english``) or a code (``en``), in any case; the checkpoint's table must hold it."""
    table = _table(settings, "lang_to_id")
    name = language.lower()
    if name in table:
        token = name
    elif name in codes:
        token = f"<|{codes[name]}|>"
    elif name in codes.values():
        token = f"<|{name}|>"
    else:
        raise UserError(
            f"generation.language {language!r} is not a language Whisper names (a code such "
            "as `en`, a name such as `english`, or a token such as `<|en|>`)"
        )
    if token not in table:
        known = ", ".join(sorted(table)[:12]) + (", ..." if len(table) > 12 else "")
        raise UserError(
            f"generation.language {language!r}: {token} is not in the model's `lang_to_id` "
            f"({len(table)} languages: {known})"
        )
    return table[token]


def _table(settings: Mapping[str, Any], key: str) -> dict[str, int]:
    value = settings.get(key)
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise WhisperSettingRefused(key=key, reason="is not a table of tokens to ids")
    return {k: _token_id(v, f"{key}[{k!r:.30}]") for k, v in value.items()}


def _token_id(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WhisperSettingRefused(key=key, reason=f"{value!r:.40} is not a token id")
    return value


def _forced(forced: Any) -> list[int | None]:
    """``forced_decoder_ids`` as ``generate`` reads it: ``[position, id]`` pairs at positions
    1, 2, ... in order, an id ``null`` where the language is left to detection."""
    pattern = (
        "must be [position, token id or null] pairs at positions 1, 2, ... in order, as "
        "Whisper's prompt is"
    )
    if not isinstance(forced, list) or not forced:
        raise WhisperSettingRefused(key="forced_decoder_ids", reason=pattern)
    out: list[int | None] = []
    for i, pair in enumerate(forced, start=1):
        if not isinstance(pair, list | tuple) or len(pair) != 2 or pair[0] != i:
            raise WhisperSettingRefused(key="forced_decoder_ids", reason=pattern)
        out.append(None if pair[1] is None else _token_id(pair[1], "forced_decoder_ids"))
    return out
