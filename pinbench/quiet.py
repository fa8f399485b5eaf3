"""Silencing what native code writes straight to file descriptor 2 (TensorFlow as it loads);
no import of its own, so it can wrap the import of a heavy library."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Point fd 2 at /dev/null for the block; Python exceptions still propagate normally."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
