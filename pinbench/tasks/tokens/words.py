"""Which token of a sample gives each word its label: the **first sub-token** of the word (as
Hugging Face's token-classification examples label and read words, ``word_ids``), found from
where each token ends in the text (the tokenizer's offsets, ``tokenizing.encode_texts(...,
ends=True)``).

A token belongs to the word that holds its last character; a token that spans no character (a
special token, padding: its end is 0) belongs to none. The alignment is refused as ambiguous
(``Unaligned``) where a word has no token (cut off by ``max_length``, or merged into another
word's token), where a token's last character is a space between words (it covers more than
one word), and where a word's first token comes after a later word's."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError


class Unaligned(UserError):
    """A sample whose words cannot be matched to tokens one way only."""

    def __init__(self, *, sample: int, reason: str) -> None:
        super().__init__(
            f"token classification: sample {sample}: {reason} - words take the label of their "
            "first sub-token, so each word needs tokens of its own"
        )
        self.sample = sample
        self.reason = reason


def first_tokens(text: str, ends: npt.NDArray[np.uint32], *, sample: int) -> list[int]:
    """For each word of ``text`` (split on single spaces), the index of its first token, from
    each token's end offset ``ends`` (characters; 0 for a token of no character)."""
    owner = np.full(len(text), -1, dtype=np.int64)  # each character's word, -1 for a space
    start = 0
    for w, word in enumerate(text.split(" ")):
        owner[start : start + len(word)] = w
        start += len(word) + 1
    count = len(text.split(" "))
    first = [-1] * count
    seen = -1
    for k, end in enumerate(int(e) for e in ends):
        if end == 0:
            continue
        if end > len(text):
            raise Unaligned(sample=sample, reason=f"token {k} ends past the text ({end})")
        w = int(owner[end - 1])
        if w < 0:
            raise Unaligned(
                sample=sample, reason=f"token {k} ends on a space: it spans more than one word"
            )
        if first[w] < 0:
            if w < seen:
                raise Unaligned(
                    sample=sample, reason=f"word {w}'s first token comes after word {seen}'s"
                )
            first[w] = k
            seen = w
    missing = next((w for w, k in enumerate(first) if k < 0), None)
    if missing is not None:
        raise Unaligned(
            sample=sample,
            reason=f"word {missing} ({text.split(' ')[missing][:40]!r}) has no token of its "
            "own (cut off by max_length, or merged into another word's token)",
        )
    return first
