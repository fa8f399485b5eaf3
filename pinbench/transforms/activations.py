"""Peak bytes autograd holds for backward: what micro-batching exists to reduce.

PyTorch's CPU allocator keeps no peak counter and a process's peak RSS (``ru_maxrss``) only
ever rises, so neither shows a smaller micro-batch in one process. ``SavedBytes`` counts,
through ``torch.autograd.graph.saved_tensors_hooks``, the bytes of the tensors autograd saves
for backward while they are alive: a storage saved twice counts once, the weights it saves
(a convolution's kernel) count too, and a tensor is released when the graph holding it is
freed (after its backward). ``peak`` is the most held at once: with k micro-batches, the
largest micro-batch's activations plus the weights.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class SavedBytes:
    """Live and peak bytes of tensors saved for backward while ``measure()`` is active."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self._live: dict[int, list[int]] = {}  # storage address -> [bytes, references]

    @contextlib.contextmanager
    def measure(self) -> Iterator[SavedBytes]:
        import torch

        with torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack):
            yield self

    def _pack(self, tensor: Any) -> _Saved:
        storage = tensor.untyped_storage()
        key = int(storage.data_ptr())
        entry = self._live.get(key)
        if entry is None:
            entry = self._live[key] = [int(storage.nbytes()), 0]
            self.current += entry[0]
            self.peak = max(self.peak, self.current)
        entry[1] += 1
        return _Saved(tensor, self, key)

    def release(self, key: int) -> None:
        entry = self._live.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self._live[key]


class _Saved:
    """A saved tensor; its release (the graph freed) is the meter's."""

    __slots__ = ("key", "meter", "tensor")

    def __init__(self, tensor: Any, meter: SavedBytes, key: int) -> None:
        self.tensor = tensor
        self.meter = meter
        self.key = key

    def __del__(self) -> None:
        self.meter.release(self.key)


def _unpack(saved: _Saved) -> Any:
    return saved.tensor
