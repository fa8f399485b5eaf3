"""A GGUF file's header read as data, every count bounded where it is read (issue 87).

GGUF (llama.cpp's format) is ``GGUF``, a version, the tensor and key counts, then each
metadata key with its typed value, then the tensors' descriptions and data. pinbench reads
the metadata only: to refuse at publish what it does not load (a file split over others, a
header past its file's end, no architecture) and to compare the file's vocabulary with the
artifact's ``tokenizer.json`` when the model opens. The engine parses the rest in the sandbox.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pinbench.registry.sourcing import FileProblem

MAGIC = b"GGUF"
VERSIONS = (3,)
MAX_KEYS = 65_536
MAX_TENSORS = 1 << 20
MAX_STRING = 16 << 20
"""A key's or value's bytes (a chat template is the longest value models carry)."""
MAX_ITEMS = 1 << 24
"""An array's items (a vocabulary's tokens, its merges)."""
MAX_STRINGS = 1 << 22
"""Strings in all the header's arrays together, each read to be skipped or kept (a large
model's vocabulary and merges are under a million)."""
KEPT_ARRAYS = frozenset({"tokenizer.ggml.tokens"})
"""The arrays pinbench reads (the vocabulary it compares with ``tokenizer.json``); every other
array is passed over, kept as ``Skipped``, so a header costs little memory whatever it holds."""
MAX_HEADER = 512 << 20
SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
    12: "<d",
}  # fmt: skip
STRING, ARRAY = 8, 9
SPLIT_KEYS = ("split.count", "split.no", "split.tensors.count")
TEMPLATE_KEY = "tokenizer.chat_template"
"""The default chat template, and with a ``.NAME`` after it each named one: llama-cpp-python's
constructor compiles every one (Jinja's sandbox, in the evaluator's), though pinbench applies
none of them (an engine's prompts are pinbench's tokenizer's, ``generation.chat_template`` is
refused for engines)."""
MAX_TEMPLATES = 16
MAX_TEMPLATE = 256 << 10
"""A chat template's bytes: the longest the field publishes (tool-calling templates) are tens
of KiB."""


class GGUFRefused(FileProblem):
    """A GGUF file pinbench does not load."""


@dataclass(frozen=True)
class Skipped:
    """An array the header holds and pinbench does not read: its item type and count."""

    item: int
    count: int


def read_metadata(name: str, path: Path) -> dict[str, Any]:
    """The metadata of the GGUF file at ``path`` (``name``: its artifact path), by key."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        reader = _Reader(name, handle, min(size, MAX_HEADER))
        if handle.read(4) != MAGIC:
            raise GGUFRefused(path=name, reason="not a GGUF file (no GGUF magic)")
        version = reader.scalar("<I")
        if version not in VERSIONS:
            raise GGUFRefused(path=name, reason=f"GGUF version {version}; pinbench reads 3")
        tensors, keys = reader.scalar("<Q"), reader.scalar("<Q")
        if tensors > MAX_TENSORS or keys > MAX_KEYS:
            raise GGUFRefused(
                path=name, reason=f"{tensors} tensors and {keys} keys: more than any model has"
            )
        metadata: dict[str, Any] = {}
        for _ in range(keys):
            key = reader.string()
            if "\x00" in key:
                raise GGUFRefused(
                    path=name,
                    reason=f"key {key!r} holds a NUL byte: llama.cpp reads a key to its first NUL",
                )
            if key in metadata:
                raise GGUFRefused(path=name, reason=f"key {key!r} is given twice")
            reader.key = key
            metadata[key] = reader.value(reader.scalar("<I"), keep=key in KEPT_ARRAYS)
    return metadata


def check_gguf(name: str, path: Path) -> dict[str, Any]:
    """Refuse a GGUF file pinbench does not load; its metadata otherwise."""
    metadata = read_metadata(name, path)
    split = [k for k in SPLIT_KEYS if k in metadata]
    if split:
        raise GGUFRefused(
            path=name,
            reason=f"it is one part of a split model ({split[0]}): the engine would open the "
            "other parts by name; publish the model as one GGUF file",
        )
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str) or not architecture.replace("_", "").isalnum():
        raise GGUFRefused(path=name, reason="it names no general.architecture")
    tokens = metadata.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise GGUFRefused(path=name, reason="it has no vocabulary (tokenizer.ggml.tokens)")
    _check_templates(name, metadata)
    return metadata


def _check_templates(name: str, metadata: dict[str, Any]) -> None:
    """At most ``MAX_TEMPLATES`` chat templates, each a string of ``MAX_TEMPLATE`` bytes at
    most: the engine compiles every one when it opens the file."""
    keys = [k for k in metadata if k == TEMPLATE_KEY or k.startswith(TEMPLATE_KEY + ".")]
    if len(keys) > MAX_TEMPLATES:
        raise GGUFRefused(
            path=name, reason=f"{len(keys)} chat templates: more than {MAX_TEMPLATES}"
        )
    for key in keys:
        value = metadata[key]
        if not isinstance(value, str):
            raise GGUFRefused(path=name, reason=f"its chat template {key!r} is not a string")
        if len(value.encode()) > MAX_TEMPLATE:
            raise GGUFRefused(
                path=name,
                reason=f"its chat template {key!r} is longer than {MAX_TEMPLATE} bytes",
            )


class _Reader:
    def __init__(self, name: str, handle: BinaryIO, limit: int) -> None:
        self.name, self.handle, self.limit = name, handle, limit
        self.key = ""
        self.strings = 0

    def refuse(self, reason: str) -> GGUFRefused:
        where = f" (key {self.key!r})" if self.key else ""
        return GGUFRefused(path=self.name, reason=reason + where)

    def take(self, count: int) -> bytes:
        if self.handle.tell() + count > self.limit:
            raise self.refuse("its header runs past the file's end")
        return self.handle.read(count)

    def skip(self, count: int) -> None:
        if self.handle.tell() + count > self.limit:
            raise self.refuse("its header runs past the file's end")
        self.handle.seek(count, 1)

    def scalar(self, form: str) -> Any:
        return struct.unpack(form, self.take(struct.calcsize(form)))[0]

    def string(self, keep: bool = True) -> str:
        length = self.scalar("<Q")
        if length > MAX_STRING:
            raise self.refuse(f"a string of {length} bytes")
        if not keep:
            self.skip(length)
            return ""
        try:
            return self.take(length).decode("utf-8")
        except UnicodeDecodeError:
            raise self.refuse("a string that is not UTF-8") from None

    def value(self, kind: int, keep: bool = True) -> Any:
        if kind in SCALARS:
            return self.scalar(SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind != ARRAY:
            raise self.refuse(f"a value of unknown type {kind}")
        item, count = self.scalar("<I"), self.scalar("<Q")
        if count > MAX_ITEMS or item == ARRAY or (item not in SCALARS and item != STRING):
            raise self.refuse(f"an array of {count} items of type {item}")
        if item in SCALARS:
            form = SCALARS[item]
            width = struct.calcsize(form)
            if not keep:
                self.skip(width * count)
                return Skipped(item, count)
            return list(struct.unpack(f"<{count}{form[1]}", self.take(width * count)))
        self.strings += count
        if self.strings > MAX_STRINGS:
            raise self.refuse(f"more than {MAX_STRINGS} strings in its arrays")
        items = [self.string(keep) for _ in range(count)]
        return items if keep else Skipped(item, count)
