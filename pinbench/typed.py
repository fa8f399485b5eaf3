"""Typed decoding that is safe from many threads at once (decision 288).

msgspec builds a Struct type's field information the first time a decoder or ``convert``
meets the type, partly in Python (``msgspec._utils.get_class_annotations``), and stores it on
the class. Until it is complete, another thread converting to the same type reads it half
built: 32 threads making their first ``parse_manifest`` at once crashed the interpreter
(a segmentation fault in 19 of 20 fresh processes, msgspec 0.22.0, CPython 3.11), and one
call in a single thread first avoided it. So every typed decode goes through here: the first
use of a type builds msgspec's information for it, and for each Struct type it holds, under
one lock (``msgspec.json.Decoder(T)`` builds it all), before any thread converts to it;
later calls take no lock.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_LOCK = threading.Lock()
_READY: set[object] = set()
"""The types whose msgspec information is complete (msgspec keeps it on each type, process
wide; this set says which are done, so that the lock is taken once per type)."""


def prepared(tp: Any) -> None:
    """Make msgspec's information for ``tp`` (and every Struct type it holds) complete, once
    per process, under the lock: before this returns no other thread sees it half built."""
    if tp in _READY:
        return
    with _LOCK:
        if tp not in _READY:
            msgspec.json.Decoder(tp)
            _READY.add(tp)


def convert(data: Any, tp: type[T], *, strict: bool = True) -> T:
    """``msgspec.convert(data, type=tp, strict=strict)``, safe on a type's first use from
    many threads."""
    prepared(tp)
    return msgspec.convert(data, type=tp, strict=strict)


def decode_json(raw: bytes | str, tp: type[T], *, strict: bool = True) -> T:
    """``msgspec.json.decode(raw, type=tp, strict=strict)``, safe on a type's first use
    from many threads."""
    prepared(tp)
    return msgspec.json.decode(raw, type=tp, strict=strict)


def decode_msgpack(raw: bytes, tp: type[T]) -> T:
    """``msgspec.msgpack.decode(raw, type=tp)``, safe on a type's first use from many
    threads."""
    prepared(tp)
    return msgspec.msgpack.decode(raw, type=tp)
