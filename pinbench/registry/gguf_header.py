"""A GGUF file's header read as data, every count bounded where it is read (issue 87).

GGUF (llama.cpp's format) is ``GGUF``, a version, the tensor and key counts, then each
metadata key with its typed value, then the tensors' descriptions and data. pinbench reads
the metadata only: to refuse at publish what it does not load (a file split over others, a
header past its file's end, no architecture) and to compare the file's vocabulary with the
artifact's ``tokenizer.json`` when the model opens. The engine parses the rest in the sandbox.
"""

from __future__ import annotations

import struct
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
MAX_HEADER = 512 << 20
SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
    12: "<d",
}  # fmt: skip
STRING, ARRAY = 8, 9
SPLIT_KEYS = ("split.count", "split.no", "split.tensors.count")


class GGUFRefused(FileProblem):
    """A GGUF file pinbench does not load."""


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
            if key in metadata:
                raise GGUFRefused(path=name, reason=f"key {key!r} is given twice")
            metadata[key] = reader.value(reader.scalar("<I"))
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
    if not isinstance(tokens, list) or not tokens:
        raise GGUFRefused(path=name, reason="it has no vocabulary (tokenizer.ggml.tokens)")
    return metadata


class _Reader:
    def __init__(self, name: str, handle: BinaryIO, limit: int) -> None:
        self.name, self.handle, self.limit = name, handle, limit

    def take(self, count: int) -> bytes:
        if self.handle.tell() + count > self.limit:
            raise GGUFRefused(path=self.name, reason="its header runs past the file's end")
        return self.handle.read(count)

    def scalar(self, form: str) -> Any:
        return struct.unpack(form, self.take(struct.calcsize(form)))[0]

    def string(self) -> str:
        length = self.scalar("<Q")
        if length > MAX_STRING:
            raise GGUFRefused(path=self.name, reason=f"a string of {length} bytes")
        try:
            return self.take(length).decode("utf-8")
        except UnicodeDecodeError:
            raise GGUFRefused(path=self.name, reason="a string that is not UTF-8") from None

    def value(self, kind: int) -> Any:
        if kind in SCALARS:
            return self.scalar(SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind != ARRAY:
            raise GGUFRefused(path=self.name, reason=f"a value of unknown type {kind}")
        item, count = self.scalar("<I"), self.scalar("<Q")
        if count > MAX_ITEMS or item == ARRAY:
            raise GGUFRefused(path=self.name, reason=f"an array of {count} items of type {item}")
        if item in SCALARS:
            form = SCALARS[item]
            width = struct.calcsize(form)
            return list(struct.unpack(f"<{count}{form[1]}", self.take(width * count)))
        return [self.value(item) for _ in range(count)]
