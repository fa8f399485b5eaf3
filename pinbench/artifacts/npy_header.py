"""An ``.npy`` file's shape from its header alone, as ``np.load(path, mmap_mode="r",
allow_pickle=False)`` would find it, without mapping the file: a dataset of 100,000 one-sample
arrays is checked in a second, not a minute (``np.load`` builds a memory map per file).

The same files are refused: a header numpy does not read (``numpy.lib.format``), an object
dtype (a pickle), a file shorter than its header says. Identical headers (every sample of a
dataset, usually) are parsed once.
"""

from __future__ import annotations

import functools
import io
import math
import os
from pathlib import Path
from typing import BinaryIO

MAGIC = b"\x93NUMPY"
MAX_HEADER_BYTES = 65_536 + 12
"""A version 1 header is at most 65,535 bytes after its 10-byte preamble; larger ones (version
2 and 3) are refused here as numpy refuses headers past 10,000 bytes by default."""


def npy_shape(path: Path) -> tuple[int, ...]:
    """The array's shape; ``ValueError`` saying what is wrong otherwise."""
    with path.open("rb") as handle:
        return npy_shape_of(handle)


def npy_shape_of(handle: BinaryIO) -> tuple[int, ...]:
    """``npy_shape`` of a file open for reading (read from its start)."""
    handle.seek(0)
    preamble = handle.read(12)
    if len(preamble) < 10 or not preamble.startswith(MAGIC):
        raise ValueError("not an .npy file (no NUMPY magic)")
    major = preamble[6]
    if major == 1:
        end = 10 + int.from_bytes(preamble[8:10], "little")
    elif major in (2, 3) and len(preamble) == 12:
        end = 12 + int.from_bytes(preamble[8:12], "little")
    else:
        raise ValueError(f"unknown .npy format version {major}.{preamble[7]}")
    if end > MAX_HEADER_BYTES:
        raise ValueError(f"its header is {end} bytes: at most {MAX_HEADER_BYTES}")
    header = preamble + handle.read(end - len(preamble))
    size = os.fstat(handle.fileno()).st_size
    if len(header) < end:
        raise ValueError("the file ends inside its header")
    shape, itemsize = _parse(header)
    if size < end + math.prod(shape) * itemsize:
        raise ValueError("mmap length is greater than file size")
    return shape


@functools.lru_cache(maxsize=64)
def _parse(header: bytes) -> tuple[tuple[int, ...], int]:
    import numpy as np

    stream = io.BytesIO(header)
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    else:  # 3.0: a UTF-8 header, read by numpy's own (private) reader as np.load reads it
        shape, _, dtype = np.lib.format._read_array_header(stream, version)  # type: ignore[attr-defined]
    if dtype.hasobject:
        raise ValueError("Array can't be memory-mapped: Python objects in dtype.")
    return tuple(int(d) for d in shape), int(dtype.itemsize)
