"""A run's recorded outputs copied out as an ``.npy`` file (``pinbench runs outputs``), or
one of LoadGen's own logs the run kept (``--log``: ``loadgen_files``, as LoadGen wrote it).

An accuracy run records the array its task keeps of the model's outputs (class scores,
embeddings, a detector's raw output...) as a blob, its sha256 in ``details.outputs_sha256``
and the output's name in ``details.outputs_name``. Here the blob's bytes, from this home's
store or a server's (``GET /api/v1/blobs/{sha256}``), are hashed while they are written to a
temp file beside the destination; only bytes whose sha256 is the one the run recorded, and
that make a plain ``.npy`` array (never a pickle: an object dtype is refused), reach the
destination, through ``pinbench.artifacts.destination`` as every file a command writes
(decision 289): an existing file is replaced only when asked (``force``), a device such as
``/dev/null`` or a pipe is written through, never replaced; anything refused leaves nothing
behind.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pinbench.artifacts.destination import Destination, destination, staged
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import BlobMissing, BlobStore, ChecksumMismatch
from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

CHUNK = 1 << 20


class NoOutputs(UserError):
    """The run recorded no outputs: not a succeeded accuracy run, or its task keeps none."""

    def __init__(self, *, run: str, status: str, mode: str) -> None:
        if status != "succeeded":
            why = f"its status is {status}; only a succeeded accuracy run records its outputs"
        elif mode != "accuracy":
            why = f"it is a {mode} run; only accuracy runs record their outputs"
        else:
            why = "its task kept none of the model's outputs"
        super().__init__(f"run {run[:8]} recorded no outputs: {why}")
        self.run = run
        self.status = status
        self.mode = mode


class NoLog(UserError):
    """The run kept no such LoadGen log."""

    def __init__(self, *, run: str, log: str, status: str) -> None:
        if status != "succeeded":
            why = f"its status is {status}; a succeeded run keeps the logs of its LoadGen test"
        else:
            why = (
                "its test was not LoadGen's (an operator, a training run), or it was recorded "
                "before runs kept LoadGen's logs"
            )
        super().__init__(f"run {run[:8]} kept no LoadGen {log} log: {why}")
        self.run = run
        self.log = log
        self.status = status


class OutputsRefused(UserError):
    """The outputs cannot be written where asked, or are not a plain ``.npy`` array."""

    def __init__(self, *, run: str, path: str, reason: str) -> None:
        super().__init__(f"outputs of run {run[:8]} not written to {path}: {reason}")
        self.run = run
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Exported:
    run: str
    path: Path
    sha256: str
    size: int
    shape: tuple[int, ...] | None
    """The array's shape; None for a log."""
    name: str | None
    """The model output the array holds (``details.outputs_name``), when recorded; a log's
    file name as LoadGen wrote it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "path": str(self.path),
            "sha256": self.sha256,
            "size": self.size,
            "shape": None if self.shape is None else list(self.shape),
            "name": self.name,
        }


def recorded_digest(info: dict[str, Any], log: str | None = None) -> str:
    """The sha256 of the outputs the run ``info`` (as ``show_run`` gives it) recorded, or of
    its LoadGen ``log`` (a name of ``loadgen_files.LOGS``)."""
    details = info.get("details") or {}
    if log is not None:
        logs = details.get("loadgen_logs")
        digest = logs.get(log) if isinstance(logs, dict) else None
        if not isinstance(digest, str) or not digest:
            raise NoLog(run=info["id"], log=log, status=info["status"])
        return Digest(digest).hex
    digest = details.get("outputs_sha256")
    if not isinstance(digest, str) or not digest:
        raise NoOutputs(run=info["id"], status=info["status"], mode=str(info.get("mode")))
    return Digest(digest).hex


def export_outputs(
    info: dict[str, Any],
    read: Callable[[str], Iterable[bytes]],
    dest: Path | Destination,
    *,
    force: bool = False,
    log: str | None = None,
) -> Exported:
    """Write the outputs run ``info`` recorded to ``dest`` (a path is checked here, with
    ``force``; ``pinbench.artifacts.destination``), or its LoadGen ``log`` (``loadgen_files``);
    ``read(sha256)`` gives the blob's bytes in chunks (unchecked: they are checked here,
    before anything reaches ``dest``)."""
    from pinbench.worker.loadgen_files import LOGS

    run = str(info["id"])
    if log is not None and log not in LOGS:
        raise UserError(f"no LoadGen log {log!r}: one of {', '.join(LOGS)}")
    digest = recorded_digest(info, log)
    what = f"the outputs of run {run[:8]}" if log is None else f"the {log} log of run {run[:8]}"
    if not isinstance(dest, Destination):
        dest = destination(dest, option="", force=force)
    with staged(dest) as out:
        hasher, size = hashlib.sha256(), 0
        for chunk in read(digest):
            hasher.update(chunk)
            out.write(chunk)
            size += len(chunk)
        actual = Digest(hasher.hexdigest())
        if actual.hex != digest:
            raise ChecksumMismatch(path=what, expected=Digest(digest), actual=actual)
        shape = _plain_array(out, run, dest.given) if log is None else None
    path = Path(dest.given)
    if log is not None:
        return Exported(run, path, digest, size, None, LOGS[log])
    name = (info.get("details") or {}).get("outputs_name")
    return Exported(run, path, digest, size, shape, name if isinstance(name, str) else None)


def export_here(
    ws: Workspace, run: str, dest: Path, *, force: bool = False, log: str | None = None
) -> Exported:
    """``export_outputs`` of run ``run`` of this home, from its store."""
    from pinbench.evaluator.records.run_view import show_run

    read = functools.partial(stored_chunks, ws.store)
    return export_outputs(show_run(ws, run), read, dest, force=force, log=log)


def stored_chunks(store: BlobStore, digest: str) -> Iterator[bytes]:
    """A blob of this home's store, read in chunks (``export_outputs`` checks them)."""
    try:
        blob = store.local(Digest(digest)).open("rb")
    except FileNotFoundError:
        raise BlobMissing(path="the recorded outputs", digest=Digest(digest)) from None
    with blob:
        while chunk := blob.read(CHUNK):
            yield chunk


def _plain_array(out: BinaryIO, run: str, path: str) -> tuple[int, ...]:
    from pinbench.artifacts.npy_header import npy_shape_of

    try:
        return npy_shape_of(out)
    except (ValueError, OSError) as exc:
        reason = f"the recorded outputs are not a plain .npy array ({exc})"
        raise OutputsRefused(run=run, path=path, reason=reason) from None
