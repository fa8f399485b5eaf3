"""Speech recognition's ``wer``, ``cer`` and ``exact_match`` (decision 247): jiwer 4's
``wer``/``cer`` with their default transforms, corpus-level, computed here with text
recognition's edit distance (jiwer is a test-only reference).

- ``cer`` (jiwer's ``cer_default``): each text stripped of leading and trailing whitespace
  (``str.strip()``), then the Levenshtein distance in code points, summed over samples, divided
  by the stripped references' total length.
- ``wer`` (jiwer's ``wer_default``): each run of two or more whitespace characters replaced by
  one space (``re.sub(r"\\s\\s+", " ", text)``), the text stripped, then split on the space
  character only (empty pieces dropped): a lone tab or no-break space is part of a word, as in
  jiwer. The distance over words, summed, divided by the references' total word count.
- ``exact_match``: the share of samples whose decoded text equals its reference once both are
  stripped (Whisper's decoded text starts with a space).

Undefined (``UndefinedMetric``, the run fails) where the stripped references hold no character
or no word: jiwer returns the insertion count there, which is not a rate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pinbench.tasks.text_recognition.metrics import error_rates

_RUNS = re.compile(r"\s\s+")


def words_of(text: str) -> list[str]:
    """jiwer's ``wer_default`` words of ``text``."""
    return [w for w in _RUNS.sub(" ", text).strip().split(" ") if w]


def speech_metrics(decoded: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """``wer``, ``cer`` and ``exact_match`` of ``decoded`` against ``references`` (one each per
    sample, in the same order), as the module defines them."""
    return error_rates(
        decoded,
        references,
        text=str.strip,
        words=words_of,
        no_char="the references hold no character once stripped (as jiwer's)",
        no_word="the references hold no word (split as jiwer splits them)",
    )
