"""Reading a safetensors file's header without a framework: is this file what it says it is?

The format (huggingface/safetensors): 8 bytes, a little-endian unsigned length N; N bytes of
UTF-8 JSON, an object mapping each tensor's name to ``{"dtype", "shape", "data_offsets":
[begin, end]}`` (plus an optional ``"__metadata__"`` of strings); then the data. The header is
read strictly (``jsonsafe``): a tensor named twice is refused (Python and Rust's serde keep the
last, other readers the first), as is nesting past the bound or an integer of thousands of
digits, each of which was a traceback; so is a tensor's name over ``MAX_NAME_BYTES`` or
``MAX_NAME_PARTS`` dotted parts (what reads the names stays linear in them). Offsets are
relative to the data's start; the tensors' byte ranges, in order, must tile the data exactly:
the first begins at 0, each begins where the one before ended, the last ends at the end of the
file, and each range holds exactly its shape's elements. Only the header is read; nothing in
the file is executed or unpickled. A file that is a pickle (``torch.save``) or a PyTorch zip
archive is recognised, so that the error can say what it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.artifacts.jsonsafe import JsonRefused, load_json
from pinbench.errors import UserError

MAX_HEADER_BYTES = 100_000_000
"""The safetensors library's own limit on the header."""
MAX_NAME_BYTES = 1024
"""Bytes (UTF-8) of one tensor's name: transformers' longest are under 200."""
MAX_NAME_PARTS = 64
"""Dotted parts of one tensor's name (``model.layers.0.mlp.experts.7.w``: 7)."""

DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}
"""Every dtype the format names, with its width in bits."""

PICKLE_PROTOCOLS = range(2, 6)


class NotSafetensors(UserError):
    """The bytes are not a well-formed safetensors file; ``kind`` names what they are when
    that is recognised (``pickle``, ``torchscript``, ``torch-export``), else None."""

    def __init__(self, *, reason: str, kind: str | None = None) -> None:
        super().__init__(f"not a safetensors file: {reason}")
        self.reason = reason
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Header:
    tensors: dict[str, tuple[str, tuple[int, ...]]]
    """Each tensor's name: its dtype and shape."""
    metadata: dict[str, str]
    data_bytes: int


def read_header(path: Path) -> Header:
    """The parsed and fully checked header of the safetensors file at ``path``; a file that
    is not one, and is one of PyTorch's own formats, is named as such."""
    try:
        return _read(path)
    except NotSafetensors:
        kind = recognise(path)
        if kind is None:
            raise
        raise NotSafetensors(reason=KINDS[kind], kind=kind) from None


def _read(path: Path) -> Header:
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise NotSafetensors(reason=f"{size} bytes, shorter than the 8-byte header length")
        length = int.from_bytes(head, "little")
        if length > MAX_HEADER_BYTES:
            raise NotSafetensors(
                reason=f"the header length says {length} bytes, over the format's "
                f"{MAX_HEADER_BYTES}-byte limit"
            )
        if 8 + length > size:
            raise NotSafetensors(
                reason=f"the header length says {length} bytes, past the end of the "
                f"{size}-byte file"
            )
        raw = f.read(length)
    try:
        doc = load_json(raw)
    except JsonRefused as exc:  # not JSON, a key twice, nesting past the bound, a huge integer
        reason = f"the header is not UTF-8 JSON pinbench accepts: {exc.reason}"
        raise NotSafetensors(reason=reason) from None
    if not isinstance(doc, dict):
        raise NotSafetensors(reason="the header is not a JSON object")
    return _checked(doc, size - 8 - length)


def _checked(doc: dict[str, Any], data_bytes: int) -> Header:
    metadata = doc.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise NotSafetensors(reason="__metadata__ must map strings to strings")
    ranges: list[tuple[int, int, str]] = []
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, info in doc.items():
        dtype, shape, begin, end = _entry(name, info)
        bits = math.prod(shape) * DTYPE_BITS[dtype]
        if bits % 8 or end - begin != bits // 8:
            raise NotSafetensors(
                reason=f"tensor {name!r} ({dtype} {list(shape)}) needs {bits / 8:g} bytes, "
                f"its data_offsets [{begin}, {end}] hold {end - begin}"
            )
        ranges.append((begin, end, name))
        tensors[name] = (dtype, shape)
    at = 0
    for begin, end, name in sorted(ranges):
        if begin != at:
            problem = "overlaps the one before" if begin < at else f"leaves bytes {at}-{begin}"
            raise NotSafetensors(reason=f"tensor {name!r} begins at {begin}: {problem}")
        at = end
    if at != data_bytes:
        raise NotSafetensors(
            reason=f"the tensors cover {at} bytes of data, the file holds {data_bytes}"
        )
    return Header(tensors, dict(metadata), data_bytes)


def _entry(name: str, info: Any) -> tuple[str, tuple[int, ...], int, int]:
    _named(name)
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise NotSafetensors(
            reason=f"tensor {name!r} must have exactly dtype, shape and data_offsets"
        )
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if dtype not in DTYPE_BITS:
        raise NotSafetensors(
            reason=f"tensor {name!r} has dtype {dtype!r}; one of {', '.join(DTYPE_BITS)}"
        )
    if not isinstance(shape, list) or not all(_count(d) for d in shape):
        raise NotSafetensors(reason=f"tensor {name!r}: shape must be a list of integers >= 0")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_count(o) for o in offsets)):
        raise NotSafetensors(reason=f"tensor {name!r}: data_offsets must be [begin, end]")
    begin, end = offsets
    if end < begin:
        raise NotSafetensors(reason=f"tensor {name!r}: data_offsets [{begin}, {end}] end first")
    return dtype, tuple(shape), begin, end


def _named(name: str) -> None:
    """A tensor's name bounded: what reads the names (``hf_shapes``' numbered stacks) is then
    linear in the header, however the names are made."""
    if len(name) > MAX_NAME_BYTES or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise NotSafetensors(
            reason=f"a tensor's name {name[:60]!r}... is over {MAX_NAME_BYTES} bytes "
            f"({len(name.encode('utf-8', 'surrogatepass'))})"
        )
    parts = name.count(".") + 1
    if parts > MAX_NAME_PARTS:
        raise NotSafetensors(
            reason=f"tensor {name[:60]!r}... has {parts} dotted parts, over {MAX_NAME_PARTS}"
        )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


KINDS = {
    "pickle": "this is a pickle (PyTorch's torch.save)",
    "torchscript": "this is a TorchScript archive (torch.jit.save)",
    "torch-export": "this is a torch.export archive (torch.export.save)",
}


def recognise(path: Path) -> str | None:
    """What a file that is not safetensors is, when it is one of PyTorch's own formats."""
    with path.open("rb") as f:
        head = f.read(4)
    if len(head) < 2:
        return None
    if head[0] == 0x80 and head[1] in PICKLE_PROTOCOLS:
        return "pickle"  # a bare pickle, or torch.save's legacy format
    if not head.startswith(b"PK\x03\x04"):
        return None
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if any(n.endswith(("archive_format", "/serialized_exported_program.json")) for n in names):
        return "torch-export"
    if any("/code/" in n for n in names) and any(n.endswith("/data.pkl") for n in names):
        return "torchscript"
    if any(n.endswith("data.pkl") for n in names):
        return "pickle"  # torch.save's zip format: a pickle and its tensors' storages
    return None
