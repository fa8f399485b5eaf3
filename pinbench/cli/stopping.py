"""A command's evaluation stops safely on Ctrl-C or SIGTERM: the run is recorded as
interrupted and the command exits 130 or 143 (``run``, ``rerun``, ``bisect``, ``ops``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pinbench.console import err as _err
from pinbench.errors import PinbenchError

if TYPE_CHECKING:
    from pinbench.sdk.values import Stop


@contextmanager
def stopped_safely() -> Iterator[Stop]:
    """Ctrl-C / SIGTERM stop the evaluation safely and record it interrupted (exit 130 /
    143); a LoadGen test left running on its thread ends the process without teardown."""
    from pinbench.sdk.values import Stop, stop_on_signals

    with stop_on_signals(Stop()) as stop:
        try:
            yield stop
        except PinbenchError as exc:
            if stop.left_running:  # recorded; LoadGen's thread must not see a teardown
                _exit_now(exc)
            raise


def _exit_now(exc: PinbenchError) -> None:
    """Print the error and end the process at once, skipping interpreter teardown: a stopped
    LoadGen test still running on its thread would crash in it (``pinbench.worker.stop``)."""
    from rich.text import Text

    _err().print(Text.assemble(("error: ", "bold red"), str(exc)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.exit_code)
