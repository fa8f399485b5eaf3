"""COCO run-length encodings checked before pycocotools reads them.

An RLE ``{"size": [h, w], "counts": ...}`` lists, column by column (Fortran order), the
lengths of alternating runs of 0 and 1, starting with 0. pycocotools' C code trusts it: a
counts list that does not add up to ``h * w`` and a compressed string it cannot read (a
character outside its alphabet, a number cut off at the end) both decode to some other mask
without a word, and the metric is computed against it. So the counts are read here as
pycocotools reads them (``rleFrString`` in its ``maskApi.c``) and must add up to the image.

The compressed form: each count is a run of characters ``c`` from ``0`` (48) to ``o`` (111);
``c - 48`` gives 5 bits (least significant first) and a flag (``0x20``) that more follow; the
last character's ``0x10`` bit is the sign; from the third count on, each is stored as the
difference from the count two before it.
"""

from __future__ import annotations

MAX_CHARS_PER_COUNT = 6
"""30 bits: a count of any image pinbench accepts, and no shift pycocotools' C code would
overflow."""


def compressed_counts(text: str) -> list[int] | None:
    """The counts a compressed RLE string holds, or None where pycocotools would misread it
    (a character outside ``0``..``o``, a count longer than ``MAX_CHARS_PER_COUNT``, a number
    cut off at the end)."""
    counts: list[int] = []
    p = 0
    while p < len(text):
        x, k, more = 0, 0, True
        while more:
            if p >= len(text) or k >= MAX_CHARS_PER_COUNT:
                return None
            c = ord(text[p]) - 48
            if not 0 <= c < 64:
                return None
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x -= 1 << (5 * k)  # sign-extend: x |= -1 << 5k
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def rle_problem(rle: dict[str, object], height: int, width: int) -> str | None:
    """Why pycocotools would misread ``rle`` as the mask of an image of ``height x width``,
    or None."""
    if rle.get("size") != [height, width]:
        return f"an RLE segmentation needs size [{height}, {width}] (its image's height and width)"
    raw = rle.get("counts")
    if isinstance(raw, str):
        counts = compressed_counts(raw)
        if counts is None:
            return "its compressed RLE counts are not in pycocotools' encoding"
    elif isinstance(raw, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in raw):
        counts = raw
    else:
        return "RLE counts must be a compressed string or a list of whole numbers >= 0"
    if any(c < 0 for c in counts):
        return "RLE counts must be whole numbers >= 0"
    if sum(counts) != height * width:
        return f"its RLE counts add up to {sum(counts)} pixels, its image has {height * width}"
    return None
