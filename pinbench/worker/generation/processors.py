"""The generation config's settings that change which token is chosen, applied to each step's
logits as transformers 5.23's ``generate`` applies them (``GenerationMixin._get_logits_processor``,
in its order), and the check that refuses every other setting that would change an answer
(decision 272). Shared by every text generator: decoder-only models (their ids: the prompt and
the answer) and encoder-decoders (the decoder's ids: its start token, then the answer).

In ``generate``'s order: ``repetition_penalty`` (``RepetitionPenaltyLogitsProcessor``: the
score of every id already in the ids divided by the penalty, multiplied where negative),
``no_repeat_ngram_size`` (``NoRepeatNGramLogitsProcessor``: no n-gram of the ids twice),
``bad_words_ids`` (``NoBadWordsLogitsProcessor``: a one-token sequence never chosen, except
the end-of-text alone; a longer one's last token not where the ids end with the rest),
``min_length`` (``MinLengthLogitsProcessor``: no end-of-text while the ids are shorter),
``min_new_tokens`` (``MinNewTokensLengthLogitsProcessor``: nor before that many new tokens),
``forced_bos_token_id`` (the only token where the ids are one long), ``forced_eos_token_id``
(the only token at the last step ``max_new_tokens`` allows), ``suppress_tokens`` (never),
``begin_suppress_tokens`` (not as the first token after the prompt; after the forced one where
the prompt is one token and ``forced_bos_token_id`` set, as ``generate`` counts it).

A batch's rows are each processed as the row alone (its own ids, no pads), as one prompt at a
time is: transformers' batched ``generate`` would count a left-padded row's pads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pinbench.errors import UserError

MAX_NGRAM = 64
MAX_MIN_LENGTH = 1_048_576
MAX_PENALTY = 100.0
MAX_SEQUENCES = 10_000
"""``bad_words_ids`` sequences, and ``suppress_tokens``'s ids."""
MAX_SEQUENCE = 64
"""Ids in one ``bad_words_ids`` sequence."""

APPLIED = {
    "repetition_penalty": "RepetitionPenaltyLogitsProcessor over the ids so far",
    "no_repeat_ngram_size": "NoRepeatNGramLogitsProcessor over the ids so far",
    "bad_words_ids": "NoBadWordsLogitsProcessor over the ids so far",
    "min_length": "MinLengthLogitsProcessor (the ids: a prompt's, or a decoder's from its start)",
    "min_new_tokens": "MinNewTokensLengthLogitsProcessor",
    "forced_bos_token_id": "the only token where the ids are one long",
    "forced_eos_token_id": "the only token at the last step max_new_tokens allows",
    "suppress_tokens": "never chosen",
    "begin_suppress_tokens": "not chosen first",
}
"""Settings applied to the logits (``Processors``)."""

HONOURED = {
    **APPLIED,
    "eos_token_id": "ends an answer; the token min_length and min_new_tokens hold back",
    "decoder_start_token_id": "an encoder-decoder's decoder starts from it",
    "max_length": "replaced by the request's max_new_tokens, as generate's argument replaces it",
    "max_new_tokens": "replaced by the request's, as generate's argument replaces it",
    **dict.fromkeys(
        ("do_sample", "temperature", "top_k", "top_p", "min_p", "top_h", "typical_p"),
        "the request's `sampling` says how a token is chosen: greedy reads none of them "
        "(generate(do_sample=False)), seeded is pinbench's own (its temperature and top_k)",
    ),
    **dict.fromkeys(
        ("epsilon_cutoff", "eta_cutoff"),
        "the request's `sampling` says how a token is chosen (greedy reads none of them)",
    ),
}
"""Settings pinbench applies, or the request replaces as ``generate``'s arguments replace them."""

NO_EFFECT = {
    "bos_token_id": "generate starts from it only without a prompt; a prompt is always given",
    "pad_token_id": "pads a batch's rows; each row is answered as if alone",
    "use_cache": "the loop always keeps its KV cache",
    "cache_implementation": "how the KV cache is stored, not what it holds",
    "cache_config": "how the KV cache is stored, not what it holds",
    "compile_config": "whether generate compiles the model",
    "disable_compile": "whether generate compiles the model",
    "length_penalty": "read by beam search alone (num_beams > 1 is refused)",
    "early_stopping": "read by beam search alone (num_beams > 1 is refused)",
    "renormalize_logits": "a log-softmax: the arg-max and softmax(logits / t) are unchanged",
    "low_memory": "read by contrastive search alone",
    **dict.fromkeys(
        (
            "is_assistant",
            "num_assistant_tokens",
            "num_assistant_tokens_schedule",
            "assistant_confidence_threshold",
            "assistant_lookbehind",
            "target_lookbehind",
            "max_matching_ngram_size",
        ),
        "read with an assistant model alone, which is never given",
    ),
    **dict.fromkeys(
        ("output_attentions", "output_hidden_states", "output_scores", "output_logits"),
        "what generate returns beside the tokens",
    ),
    "return_dict_in_generate": "what generate returns beside the tokens",
    "transformers_version": "a record of the writer",
    "_from_model_config": "a record of where the settings came from",
}
"""Settings that do not change the tokens of an answer, each with why."""

NEUTRAL: dict[str, Any] = {
    "num_beams": 1,
    "num_beam_groups": 1,
    "num_return_sequences": 1,
    "diversity_penalty": 0.0,
    "encoder_repetition_penalty": 1.0,
    "encoder_no_repeat_ngram_size": 0,
    "guidance_scale": 1.0,
    "remove_invalid_values": False,
    "token_healing": False,
}
"""Settings pinbench does not apply, at the value where ``generate`` does not apply them either."""


class GenerationSettingRefused(UserError):
    def __init__(self, *, key: str, reason: str) -> None:
        super().__init__(f"generation config: `{key}`: {reason}")
        self.key = key
        self.reason = reason


def check_settings(settings: Mapping[str, Any]) -> None:
    """Every setting (``GenerationConfig.to_diff_dict()``, or generation_config.json as data;
    ``None``: unset, transformers 5's default) is honoured, changes no answer, or is at the
    value where ``generate`` does not apply it; another is refused naming it."""
    for key, value in sorted(settings.items()):
        if value is None or key in HONOURED or key in NO_EFFECT:
            continue
        neutral = NEUTRAL.get(key, ...)
        same_kind = isinstance(value, bool) == isinstance(neutral, bool)
        if neutral is not ... and same_kind and value == neutral:
            continue
        raise GenerationSettingRefused(
            key=key,
            reason=f"{value!r:.60} changes how transformers' generate answers, and pinbench "
            f"does not apply it (it applies {', '.join(APPLIED)}, and the request's "
            "generation section): remove it, or set it to transformers' default",
        )


@dataclass(frozen=True, slots=True)
class Processors:
    """The settings applied to the logits, checked and bounded (``of``)."""

    end: tuple[int, ...] = ()
    repetition_penalty: float = 1.0
    no_repeat_ngram: int = 0
    bad_words: tuple[tuple[int, ...], ...] = ()
    """As ``NoBadWordsLogitsProcessor`` keeps them: a one-token end-of-text left out."""
    min_length: int = 0
    min_new_tokens: int = 0
    first: tuple[int, ...] = ()
    last: tuple[int, ...] = ()
    suppress: tuple[int, ...] = ()
    begin_suppress: tuple[int, ...] = ()
    begin_after_forced: bool = True
    """``generate``'s rule; Whisper's ``generate`` starts its own at the prompt's end."""

    @classmethod
    def of(cls, settings: Mapping[str, Any], *, begin_after_forced: bool = True) -> Processors:
        """From the generation config's settings (``to_diff_dict()`` or its JSON), each
        refused naming it where it is not what ``generate`` reads (it would raise) or past a
        bound."""
        end = _ids(settings.get("eos_token_id"), "eos_token_id", MAX_SEQUENCES)
        words = settings.get("bad_words_ids")
        bad: list[tuple[int, ...]] = []
        if words is not None:
            if not isinstance(words, list) or not 0 < len(words) <= MAX_SEQUENCES:
                raise GenerationSettingRefused(
                    key="bad_words_ids",
                    reason=f"must be a list of 1 to {MAX_SEQUENCES} lists of token ids",
                )
            for word in words:
                if not isinstance(word, list) or not 0 < len(word) <= MAX_SEQUENCE:
                    raise GenerationSettingRefused(
                        key="bad_words_ids",
                        reason=f"{word!r:.40}: each must be a list of 1 to {MAX_SEQUENCE} ids",
                    )
                bad.append(tuple(_ids(word, "bad_words_ids", MAX_SEQUENCE)))
        penalty = settings.get("repetition_penalty")
        if (penalty is not None and penalty != 1.0) and (
            not isinstance(penalty, float) or not 0 < penalty <= MAX_PENALTY
        ):
            raise GenerationSettingRefused(
                key="repetition_penalty",
                reason=f"{penalty!r:.40} must be a decimal number above 0, at most "
                f"{MAX_PENALTY:g} (transformers refuses an integer)",
            )
        min_length = _count(settings, "min_length", MAX_MIN_LENGTH)
        min_new = _count(settings, "min_new_tokens", MAX_MIN_LENGTH)
        return cls(
            end=tuple(end),
            repetition_penalty=1.0 if penalty is None else float(penalty),
            no_repeat_ngram=_count(settings, "no_repeat_ngram_size", MAX_NGRAM),
            bad_words=tuple(dict.fromkeys(w for w in bad if not (len(w) == 1 and w[0] in end))),
            # generate holds back the end-of-text alone: without one they do nothing
            min_length=min_length if end else 0,
            min_new_tokens=min_new if end else 0,
            first=tuple(_ids(settings.get("forced_bos_token_id"), "forced_bos_token_id", 1)),
            last=tuple(_ids(settings.get("forced_eos_token_id"), "forced_eos_token_id", 64)),
            suppress=tuple(_ids(settings.get("suppress_tokens"), "suppress_tokens", MAX_SEQUENCES)),
            begin_suppress=tuple(
                _ids(settings.get("begin_suppress_tokens"), "begin_suppress_tokens", MAX_SEQUENCES)
            ),
            begin_after_forced=begin_after_forced,
        )

    def check(self, vocabulary: int) -> None:
        """Every id within the vocabulary, and a forced token that can be chosen
        (``GenerationSettingRefused`` naming the first that is not)."""
        named = [
            ("forced_bos_token_id", self.first),
            ("forced_eos_token_id", self.last),
            ("suppress_tokens", self.suppress),
            ("begin_suppress_tokens", self.begin_suppress),
            ("bad_words_ids", tuple(i for w in self.bad_words for i in w)),
        ]
        for key, values in named:
            bad = next((v for v in values if not v < vocabulary), None)
            if bad is not None:
                raise GenerationSettingRefused(
                    key=key, reason=f"names {bad}, past the vocabulary ({vocabulary} ids)"
                )
        for key, forced in named[:2]:
            if forced and set(forced) <= set(self.suppress):
                raise GenerationSettingRefused(
                    key=key,
                    reason="forces a token suppress_tokens never lets be chosen (generate "
                    "would then pick id 0 from scores that are all minus infinity)",
                )

    def applied(self) -> dict[str, Any]:
        """What is applied, as the run records it (a long list as its length)."""
        values: dict[str, Any] = {
            "repetition_penalty": None
            if self.repetition_penalty == 1.0
            else self.repetition_penalty,
            "no_repeat_ngram_size": self.no_repeat_ngram or None,
            "bad_words_ids": [list(w) for w in self.bad_words] or None,
            "min_length": self.min_length or None,
            "min_new_tokens": self.min_new_tokens or None,
            "forced_bos_token_id": list(self.first) or None,
            "forced_eos_token_id": list(self.last) or None,
            "suppress_tokens": list(self.suppress) or None,
            "begin_suppress_tokens": list(self.begin_suppress) or None,
        }
        return {
            k: (f"{len(v)} entries" if isinstance(v, list) and len(v) > 32 else v)
            for k, v in values.items()
            if v is not None
        }

    def start(self, prompt: Sequence[int], max_new_tokens: int) -> Answer:
        """One answer's state after ``prompt`` (the ids ``generate``'s processors read before
        the first new token)."""
        return Answer(self, list(prompt), max_new_tokens)


@dataclass(slots=True)
class Answer:
    """The ids so far and what the processors keep of them (n-grams, ids seen)."""

    processors: Processors
    ids: list[int]
    max_new_tokens: int
    prompt: int = 0
    active: bool = False
    seen: dict[int, None] = field(default_factory=dict)
    ngrams: dict[tuple[int, ...], set[int]] = field(default_factory=dict)
    words: dict[int, dict[tuple[int, ...], set[int]]] = field(default_factory=dict)
    single: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        p = self.processors
        self.prompt = len(self.ids)
        self.active = bool(
            p.repetition_penalty != 1.0
            or p.no_repeat_ngram
            or p.bad_words
            or p.min_length
            or p.min_new_tokens
            or p.first
            or p.last
            or p.suppress
            or p.begin_suppress
        )
        self.single = tuple(dict.fromkeys(w[0] for w in p.bad_words if len(w) == 1))
        for w in p.bad_words:
            if len(w) > 1:
                self.words.setdefault(len(w) - 1, {}).setdefault(w[:-1], set()).add(w[-1])
        ids, self.ids = self.ids, []
        for token in ids:
            self._push(token)

    def _push(self, token: int) -> None:
        self.ids.append(token)
        n = self.processors.no_repeat_ngram
        if self.processors.repetition_penalty != 1.0:
            self.seen[token] = None
        if n and len(self.ids) >= n:
            self.ngrams.setdefault(tuple(self.ids[len(self.ids) - n : -1]), set()).add(token)

    def token(self, logits: Any, choose: Callable[[Any], int]) -> int:
        """The next token: ``choose`` (greedy or sampled) over the processed ``logits``; a
        forced one where it stands alone, as ``generate``'s greedy arg-max picks it."""
        if not self.active:
            token = choose(logits)
            self._push(token)
            return token
        scores, forced = self._processed(logits)
        if len(forced) == 1 and not math.isinf(float(scores[forced[0]])):
            token = forced[0]
        else:
            token = choose(scores)
        self._push(token)
        return token

    def _processed(self, logits: Any) -> tuple[Any, tuple[int, ...]]:
        p, ids = self.processors, self.ids
        length, step = len(ids), len(ids) - self.prompt
        scores = _float32_copy(logits)
        inf = float("-inf")
        if self.seen:
            seen = list(self.seen)
            picked = scores[seen]
            negative = picked < 0
            picked[negative] = picked[negative] * p.repetition_penalty
            picked[~negative] = picked[~negative] / p.repetition_penalty
            scores[seen] = picked
        n = p.no_repeat_ngram
        if n and length >= n:
            banned = self.ngrams.get(tuple(ids[length - n + 1 :]), ())
            if banned:
                scores[list(banned)] = inf
        if self.single:
            scores[list(self.single)] = inf
        for size, table in self.words.items():
            if size <= length:
                lasts = table.get(tuple(ids[length - size :]))
                if lasts:
                    scores[list(lasts)] = inf
        if p.end and (length < p.min_length or step < p.min_new_tokens):
            scores[list(p.end)] = inf
        forced: tuple[int, ...] = ()
        if p.first and length == 1:
            forced = p.first
        if p.last and step == self.max_new_tokens - 1:
            forced = p.last
        if forced:
            scores[:] = inf
            scores[list(forced)] = 0.0
        if p.suppress:
            scores[list(p.suppress)] = inf
        begin = self.prompt + (1 if p.begin_after_forced and self.prompt == 1 and p.first else 0)
        if p.begin_suppress and length == begin:
            scores[list(p.begin_suppress)] = inf
        return scores, forced


def _float32_copy(logits: Any) -> Any:
    """A float32 copy (``generate`` processes float32 scores), torch's or NumPy's."""
    if hasattr(logits, "clone"):
        import torch

        return logits.to(dtype=torch.float32, copy=True)
    import numpy as np

    return np.array(logits, dtype=np.float32)


def _count(settings: Mapping[str, Any], key: str, most: int) -> int:
    value = settings.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise GenerationSettingRefused(
            key=key, reason=f"{value!r:.40} must be an integer from 0 (off) to {most}"
        )
    return value


def _ids(value: Any, key: str, most: int) -> list[int]:
    """A token id or a list of them (``None``: none), each an integer from 0."""
    values = [value] if isinstance(value, int) else value
    if value is None:
        return []
    if not isinstance(values, list) or len(values) > most:
        raise GenerationSettingRefused(
            key=key, reason=f"must be a token id or a list of at most {most} of them"
        )
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise GenerationSettingRefused(key=key, reason=f"{v!r:.40} is not a token id")
    return list(values)
