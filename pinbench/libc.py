"""The C library's own functions pinbench calls where Python has no wrapper (``syncfs``,
``sync_file_range``), looked up once, when first called for: in the symbols the interpreter
already has loaded (``dlopen(NULL)``), never by ``ctypes.util.find_library``, which starts
``ldconfig`` (a publish of one small file spent more CPU in it than in its hashing)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any


@cache
def libc_function(name: str, *argtypes: str) -> Callable[..., int] | None:
    """The C library's ``name`` taking ``argtypes`` (ctypes' names: ``c_int``...), errno
    kept; None where this C library has no such function."""
    import ctypes

    func: Any = getattr(ctypes.CDLL(None, use_errno=True), name, None)
    if func is None:
        return None
    func.argtypes = [getattr(ctypes, t) for t in argtypes]
    return func  # type: ignore[no-any-return]
