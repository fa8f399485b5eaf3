"""A ``type: text`` output's ``ctc`` section: how CTC scores are decoded (its alphabet, its
blank, its space or word delimiter). Re-exported by ``registry.ports``, which keeps a model's
other output sections."""

from __future__ import annotations

from typing import Annotated

import msgspec

from pinbench import bounds as b
from pinbench.registry.manifest_parts import _Strict, check_relative_path


class CtcAlphabet(_Strict, frozen=True, kw_only=True):
    """Where a CTC output's characters are, one per line in class order (blank and space
    left out): a ``file`` of the model (PaddleOCR's dict format) or an ONNX model's metadata
    entry (``metadata``: its key, ``character`` in rapidocr's PP-OCR recognisers)."""

    file: str | None = None
    metadata: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    vocab: str | None = None
    """A JSON file of the model mapping each token to its class id (a Hugging Face CTC
    tokenizer's ``vocab.json``): the classes are its tokens in id order, the blank's among
    them (a late field, see ``LATE_CTC_FIELDS``)."""

    def __post_init__(self) -> None:
        given = [n for n in ("file", "metadata", "vocab") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                "a CTC alphabet is either a `file` of the model or an ONNX `metadata` key, or "
                f"a `vocab` JSON file of the model: one of them; given {', '.join(given) or 'none'}"
            )
        for path in (self.file, self.vocab):
            if path is not None:
                check_relative_path(path)


class Ctc(_Strict, frozen=True, kw_only=True):
    """How a ``type: text`` output ``(N, T, C)`` is read: CTC greedy decoding
    (``pinbench.tasks.text_recognition``). Class ``blank`` is CTC's blank; the others are the
    alphabet's characters in order, then a space when ``space`` is set (PaddleOCR's
    ``use_space_char``), so C = len(alphabet) + 1 (+ 1)."""

    blank: Annotated[int, b.CTC_BLANK.meta]
    """The blank's class index (0 in PaddleOCR's recognisers): given, never assumed."""
    alphabet: CtcAlphabet
    space: bool = False
    word_delimiter: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    """The alphabet's entry that separates words (a Hugging Face CTC tokenizer's
    ``word_delimiter_token``, ``|``): decoded as a space, the text then stripped of spaces at
    its ends, as the tokenizer decodes (a late field, see ``LATE_CTC_FIELDS``)."""

    def __post_init__(self) -> None:
        if self.word_delimiter is not None and self.space:
            raise ValueError(
                "a CTC output's words are separated by its `word_delimiter` or by a `space` "
                "class, not both"
            )


LATE_CTC_FIELDS = ("word_delimiter",)
"""``Ctc`` fields added after CTC outputs were published: left out of the stored data while
unset; ``LATE_CTC_ALPHABET_FIELDS`` likewise for its alphabet."""
LATE_CTC_ALPHABET_FIELDS = ("vocab",)
