"""Copy a file into the store while hashing it: one read of the source, hashing and writing
overlapped.

The calling thread reads chunks into a small pool of buffers and hashes them; a writer thread
writes each chunk and asks the kernel to start writing it back to disk at once
(``sync_file_range(SYNC_FILE_RANGE_WRITE)`` on Linux), so the final ``fsync`` has little
left to wait for. SHA-256 updates and file writes both release the GIL, so on two cores the
copy costs about as much as the slower of hashing and writing rather than their sum.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable
from functools import cache
from typing import BinaryIO

from pinbench.artifacts.digest import CHUNK_SIZE, Digest, Prefetcher, Progress

PIPELINE_DEPTH = 4
SYNC_FILE_RANGE_WRITE = 2


@cache
def _sync_file_range() -> Callable[[int, int, int], None]:
    """Start asynchronous write-back of a range (Linux); a no-op where unavailable."""
    from pinbench.libc import libc_function

    func = libc_function("sync_file_range", "c_int", "c_longlong", "c_longlong", "c_uint")
    if func is None:
        return lambda fd, offset, length: None

    def start(fd: int, offset: int, length: int) -> None:
        func(fd, offset, length, SYNC_FILE_RANGE_WRITE)

    return start


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        written = os.write(fd, view)
        view = view[written:]


def copy_hashing(
    src: BinaryIO, dst_fd: int, *, progress: Progress | None = None
) -> tuple[Digest, int]:
    """Copy ``src`` to ``dst_fd`` (then fsync it); return the sha256 and size of the bytes."""
    free: queue.Queue[bytearray] = queue.Queue()
    full: queue.Queue[tuple[bytearray, int] | None] = queue.Queue()
    for _ in range(PIPELINE_DEPTH):
        free.put(bytearray(CHUNK_SIZE))
    failure: list[BaseException] = []
    writeback = _sync_file_range()

    def writer() -> None:
        offset = 0
        while (item := full.get()) is not None:
            buf, n = item
            if not failure:
                try:
                    _write_all(dst_fd, memoryview(buf)[:n])
                    writeback(dst_fd, offset, n)
                    offset += n
                except BaseException as exc:  # handed to the reading thread
                    failure.append(exc)
            free.put(buf)

    thread = threading.Thread(target=writer, name="pinbench-blob-writer", daemon=True)
    thread.start()
    hasher = hashlib.sha256()
    total = 0
    prefetch = Prefetcher(src)
    try:
        while not failure:
            buf = free.get()
            prefetch.before_read(total)
            n = src.readinto(buf)  # type: ignore[attr-defined]
            if not n:
                free.put(buf)
                break
            hasher.update(memoryview(buf)[:n])
            full.put((buf, n))
            total += n
            if progress is not None:
                progress(n)
    finally:
        full.put(None)
        thread.join()
    if failure:
        raise failure[0]
    os.fsync(dst_fd)
    return Digest(hasher.hexdigest()), total


COPY_CHUNK = 64 * 1024 * 1024


def copy_plain(src_fd: int, dst_fd: int, *, progress: Progress | None = None) -> int:
    """Copy bytes whose digest is already known, inside the kernel (``copy_file_range``, else
    ``sendfile``), starting write-back as it goes, then fsync; return the size. No hashing and
    no pass through Python's memory: the caller vouches for the digest."""
    total = 0
    copy = _kernel_copy()
    writeback = _sync_file_range()
    while True:
        n = copy(src_fd, dst_fd, total)
        if n == 0:
            break
        writeback(dst_fd, total, n)
        total += n
        if progress is not None:
            progress(n)
    os.fsync(dst_fd)
    return total


def _kernel_copy() -> Callable[[int, int, int], int]:
    """One chunk from ``offset``: copy_file_range where the kernel has it, else sendfile."""
    state = {"range": hasattr(os, "copy_file_range")}

    def copy(src_fd: int, dst_fd: int, offset: int) -> int:
        if state["range"]:
            try:
                return os.copy_file_range(src_fd, dst_fd, COPY_CHUNK, offset, offset)
            except OSError:  # ENOSYS, EXDEV (across filesystems on older kernels), EINVAL
                state["range"] = False
        os.lseek(dst_fd, offset, os.SEEK_SET)
        return os.sendfile(dst_fd, src_fd, offset, COPY_CHUNK)

    return copy
