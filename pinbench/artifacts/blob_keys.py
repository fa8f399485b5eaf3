"""Which keys of a run's ``details`` name stored blobs: the host's list, never the details'
own say (DESIGN 15, issue 63 item 6).

A run's details hold many digests: of the blobs the host stored as it recorded the run, and of
things never stored (inline processing code and a chain stage's inline code, whose text is in
the lockfile; the graph digest runs recorded before decision 180), beside whatever an isolated
worker's ``result.json`` wrote. Only the paths ``RUN_BLOBS`` lists are blob references: ``fsck``,
``gc --blobs`` and ``backup`` read them (``db.upkeep.referenced``), and a worker's claim to any
of them is dropped before the host records its own (``worker.results``). A blob the host
comes to store for a run is added here with the code that stores it.

The artifacts layer (digests, the blob store) holds the list so that ``db.upkeep`` can read it
(the evaluator is a layer above); it imports nothing of pinbench, and an isolated worker's
``worker.results`` reads it without the database.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

BlobKey = tuple[str, ...]
"""A key's path in a run's details: ``("training", "weights_sha256")`` is
``details["training"]["weights_sha256"]``."""

RUN_BLOBS: tuple[BlobKey, ...] = (
    ("outputs_sha256",),  # an accuracy run's outputs (evaluator.run)
    ("postprocess_latencies_sha256",),  # postprocess code's times (run_blobs.save_postprocess)
    ("training", "weights_sha256"),  # a training run's final weights (run_blobs.save_weights)
    ("generation", "tokens_sha256"),  # a generation run's token times (run_blobs.save_tokens)
    ("transform", "optimized_graph_sha256"),  # the optimized graph (run_blobs.store_graph)
    ("loadgen_logs", "summary"),  # LoadGen's own logs (run_blobs.save_logs)
    ("loadgen_logs", "detail"),
    ("loadgen_logs", "accuracy"),
)
"""Every key of a run's details whose value the host stores as a blob when it records the run,
by its path in the details. The run's latencies and trace are columns of their own."""

_HEX = re.compile(r"[0-9a-f]{64}")


def blobs_in(details: object) -> Iterator[tuple[str, str]]:
    """The ``(path, digest)`` of each blob a run's details name: the value at each path of
    ``RUN_BLOBS`` that is a sha256 in hex (``training.weights_sha256``). Any other value there
    is passed over, as the run recorded it."""
    for path in RUN_BLOBS:
        value = _value(details, path)
        if isinstance(value, str) and _HEX.fullmatch(value):
            yield ".".join(path), value


def drop(details: dict[str, Any], paths: Iterable[BlobKey]) -> None:
    """Remove the key at each of ``paths`` from ``details``, where it is."""
    for *parents, key in paths:
        parent = _value(details, tuple(parents))
        if isinstance(parent, dict):
            parent.pop(key, None)


def _value(details: object, path: BlobKey) -> object:
    for key in path:
        if not isinstance(details, dict):
            return None
        details = details.get(key)
    return details
