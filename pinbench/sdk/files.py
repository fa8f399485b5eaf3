"""Where a file the API or a command writes may go (decision 289): ``destination`` checks a
path once (a regular file replaced only with ``force``, ``-`` or a descriptor, a character
device or a FIFO written through in place, anything else ``DestinationRefused``), ``folder``
a folder written into; ``write``, ``write_all`` and ``staged`` put the bytes there whole.
The mechanism is ``pinbench.artifacts.destination`` (standard library only: cheap to
import)."""

from pinbench.artifacts.destination import (
    Destination,
    DestinationRefused,
    destination,
    distinct,
    folder,
    staged,
    write,
    write_all,
)

__all__ = [
    "Destination",
    "DestinationRefused",
    "destination",
    "distinct",
    "folder",
    "staged",
    "write",
    "write_all",
]
