"""Speech recognition's ``wer``, ``cer`` and ``exact_match`` (decision 247), computed by jiwer 4
itself (decision 277): ``jiwer.wer`` and ``jiwer.cer`` with their default transforms,
corpus-level. The host scores (``evaluator.scoring.score_texts``); jiwer is pinbench's
dependency, imported when scoring starts, never by the evaluator.

- ``cer`` (jiwer's ``cer_default``): each text stripped of leading and trailing whitespace
  (``str.strip()``), then the Levenshtein distance in code points, summed over samples, divided
  by the stripped references' total length.
- ``wer`` (jiwer's ``wer_default``): each run of two or more whitespace characters replaced by
  one space, the text stripped, then split on the space character only (empty pieces dropped):
  a lone tab or no-break space is part of a word. The distance over words, summed, divided by
  the references' total word count.
- ``exact_match``: the share of samples whose decoded text equals its reference once both are
  stripped (Whisper's decoded text starts with a space).

Undefined (``UndefinedMetric``, the run fails) where the references hold no character or no
word by jiwer's own transforms: jiwer returns the insertion count there, which is not a rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version

from pinbench.tasks.base import Scored
from pinbench.worker.undefined import UndefinedMetric


def speech_metrics(decoded: Sequence[str], references: Sequence[str]) -> Scored:
    """``wer``, ``cer`` and ``exact_match`` of ``decoded`` against ``references`` (one each per
    sample, in the same order), as the module defines them; the details name the scorer."""
    import jiwer

    assert len(decoded) == len(references)
    if not references:
        raise UndefinedMetric(metric="exact_match", reason="no sample was scored")
    hypotheses, truth = list(decoded), list(references)
    if not sum(len(chars) for chars in jiwer.cer_default(truth)):
        raise UndefinedMetric(
            metric="cer", reason="the references hold no character once stripped (as jiwer's)"
        )
    if not sum(len(words) for words in jiwer.wer_default(truth)):
        raise UndefinedMetric(
            metric="wer", reason="the references hold no word (split as jiwer splits them)"
        )
    exact = sum(h.strip() == r.strip() for h, r in zip(hypotheses, truth, strict=True))
    metrics = {
        "wer": float(jiwer.wer(truth, hypotheses)),
        "cer": float(jiwer.cer(truth, hypotheses)),
        "exact_match": exact / len(truth),
    }
    return Scored(metrics, details={"scorer": f"jiwer {version('jiwer')}"})
