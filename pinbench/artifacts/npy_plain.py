"""A one-dimensional ``.npy`` array of numbers read into a plain list, without NumPy: what a
gate reads of a run's raw latencies (importing NumPy would be most of the command's cost).

It reads what ``np.save`` writes for an integer or float array of one dimension (format
versions 1 to 3, either byte order, items of 4 or 8 bytes, C order); anything else is refused
with ``ValueError`` naming what it is, as is a file whose length is not what its header says.
The header must be the dictionary ``np.save`` writes for such an array, to the character
(``HEADER``): nothing in it is evaluated.
"""

from __future__ import annotations

import array
import re
import sys
from pathlib import Path

from pinbench.artifacts.npy_header import MAGIC, MAX_HEADER_BYTES

HEADER = re.compile(
    r"\{'descr': '(?P<descr>[<>|=][a-z]\d+)', 'fortran_order': (?:False|True), "
    r"'shape': \((?P<length>\d{1,19}),\), \} *\n"
)
"""What ``numpy.lib.format`` writes for a one-dimensional array of a plain dtype."""
_TYPECODES = {
    ("i", 4): "i",
    ("i", 8): "q",
    ("u", 4): "I",
    ("u", 8): "Q",
    ("f", 4): "f",
    ("f", 8): "d",
}


def numbers_of(path: Path) -> list[float]:
    """The values of the 1-D array in ``path``, as floats."""
    data = path.read_bytes()
    if not data.startswith(MAGIC) or len(data) < 12:
        raise ValueError("not an .npy file (no NUMPY magic)")
    major = data[6]
    if major == 1:
        start, end = 10, 10 + int.from_bytes(data[8:10], "little")
    elif major in (2, 3):
        start, end = 12, 12 + int.from_bytes(data[8:12], "little")
    else:
        raise ValueError(f"unknown .npy format version {major}.{data[7]}")
    if end > min(len(data), MAX_HEADER_BYTES):
        raise ValueError(f"its header ({end} bytes) is longer than the file or {MAX_HEADER_BYTES}")
    header = data[start:end].decode("utf-8" if major == 3 else "latin1")
    fields = HEADER.fullmatch(header)
    if fields is None:
        raise ValueError(f"its header {header.strip()[:80]!r} is not a 1-D array of numbers")
    descr, length = fields["descr"], int(fields["length"])
    size = int(descr[2:])
    code = _TYPECODES.get((descr[1], size))
    if code is None or array.array(code).itemsize != size:
        raise ValueError(f"its dtype {descr!r} is not an integer or float of 4 or 8 bytes")
    values = array.array(code)
    body = data[end:]
    if len(body) != length * values.itemsize:
        raise ValueError(f"it holds {len(body)} bytes of data, not {length} x {values.itemsize}")
    values.frombytes(body)
    native = "<" if sys.byteorder == "little" else ">"
    if descr[0] in "<>" and descr[0] != native:
        values.byteswap()
    return [float(v) for v in values]
