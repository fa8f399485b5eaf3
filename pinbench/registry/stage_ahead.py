"""Staging a manifest's large local files while ``pinbench publish`` imports the registry and
checks the manifest.

Importing the registry and SQLAlchemy, and checking the manifest, keep one core busy; copying a
large file into the store can keep the other. ``stages_ahead`` starts, as soon as the
manifest's YAML is read, one child process (``python -I -S`` with nothing but this package's
``artifacts`` modules and the standard library) that stages the files with the same
``BlobStore.stage`` the command uses: copied into the store's temp area while hashed (or
copied by the kernel when the verified-state cache vouches for the file), compared with the
manifest's sha256, fsynced. A thread would not do: an importing main thread holds the GIL
for milliseconds at a time (measured for ``verify``: hashing ran at half speed).

Nothing here is trusted more than the command's own staging: the manifest is read leniently
(what is not as expected is left out, and the real parse reports it), only a file whose
``path`` stays inside the manifest's directory (symlinks resolved, as ``locate`` requires)
is opened, only regular files of ``AHEAD_MIN_BYTES`` or more are staged (a small file's copy
costs less than the child's start), and a staged blob is only *offered*: ``publish`` takes
it for a file it has checked itself, at the path it located itself, for the digest it
expects, and the blob's bytes hashed to that digest as they were written. Anything the child
did not stage (a mismatch, an unreadable file, a child gone) is staged again the usual way,
so errors read as always.

The child keeps its scratch (its owner lock, see ``scratch``) until this process lets it go:
a taken blob is first moved to this process's own scratch name. Leaving the ``with`` block
lets the child go; it removes every blob not taken, and one still copying is stopped with
SIGTERM, which unwinds ``stage`` (its temp file removed); then the dead child's owner lock
(and the scratch of a child that had to be killed) is reclaimed, that owner's only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pinbench.artifacts.digest import Digest, DigestError, Progress
from pinbench.artifacts.scratch import reclaim_owner, scratch_file
from pinbench.artifacts.store import BlobStore, StagedBlob

AHEAD_MIN_BYTES = 16 * 1024 * 1024
"""Smaller files are staged by the command itself."""
AHEAD_MAX_FILES = 64
REPORT_EVERY = 64 * 1024 * 1024
STOP_WAIT_S = 10.0

CHILD = f"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
from pathlib import Path
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.scratch import owner_of
from pinbench.artifacts.store import BlobStore
store, out, made = BlobStore(Path(sys.argv[2])), sys.stdout, []
try:
    out.write(f"owner {{owner_of(store.staging())}}\\n")
    out.flush()
    pairs = sys.argv[3:]
    for source, expected in zip(pairs[::2], pairs[1::2]):
        pending = [0]
        def report(n, pending=pending):
            pending[0] += n
            if pending[0] >= {REPORT_EVERY}:
                out.write(f"+ {{pending[0]}}\\n")
                out.flush()
                pending[0] = 0
        try:
            blob = store.stage(
                Path(source), label=source, expected=Digest(expected), progress=report
            )
        except Exception:
            out.write("!\\n")
            out.flush()
            continue
        made.append(blob.temp)
        out.write(f"= {{blob.digest.hex}} {{blob.size}} {{pending[0]}} {{blob.temp}}\\n")
        out.flush()
    sys.stdin.read()
except (BrokenPipeError, KeyboardInterrupt):  # the parent went away
    pass
finally:  # (SIGTERM, the parent stopping us, passes through here and exits 1)
    for temp in made:
        try:
            temp.unlink()
        except OSError:
            pass
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing left to say: no flush error
"""


def planned(manifest: Path) -> list[tuple[Path, Digest]]:
    """The local files of ``manifest`` worth staging ahead, with their declared digests; read
    leniently (anything unexpected is left out for the real parse to report)."""
    from pinbench.registry.yamlsafe import YamlRefused, load_yaml, read_yaml_file

    try:
        if not stat.S_ISREG(manifest.stat().st_mode):
            return []  # a pipe (``publish /dev/stdin``) can be read once only: the command's
        data: Any = load_yaml(read_yaml_file(manifest))
        base = manifest.parent.resolve()
    except (OSError, UnicodeDecodeError, YamlRefused, RuntimeError):
        return []
    entries = data.get("files") if isinstance(data, dict) else None
    out: list[tuple[Path, Digest]] = []
    for entry in entries if isinstance(entries, list) else []:
        found = _local(entry, base)
        if found is not None and found not in out:
            out.append(found)
        if len(out) == AHEAD_MAX_FILES:
            break
    return out


def _local(entry: object, base: Path) -> tuple[Path, Digest] | None:
    if not isinstance(entry, dict) or entry.get("source") is not None:
        return None
    rel, sha256 = entry.get("path"), entry.get("sha256")
    if not isinstance(rel, str) or not isinstance(sha256, str):
        return None
    if not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel:
        return None
    try:
        digest = Digest(sha256)
        real = (base / rel).resolve()
        if not real.is_relative_to(base):
            return None
        info = real.stat()
    except (DigestError, OSError, RuntimeError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size < AHEAD_MIN_BYTES:
        return None
    return real, digest


@dataclass
class _File:
    source: Path
    digest: Digest
    copied: int = 0
    shown: Progress | None = None
    staged: StagedBlob | None = None
    done: threading.Event = field(default_factory=threading.Event)


class StagesAhead:
    def __init__(self, store: BlobStore) -> None:
        self._store = store
        self._files: dict[tuple[Path, str], _File] = {}
        self._child: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()
        self._owner: str | None = None
        """The child's scratch owner id (its first line)."""

    def start(self, files: list[tuple[Path, Digest]]) -> None:
        queued = [_File(source, digest) for source, digest in files if not self._store.has(digest)]
        if not queued or not self._store.tmp.is_dir():
            return
        self._files = {(f.source, f.digest.hex): f for f in queued}
        root = str(Path(__file__).resolve().parents[2])
        args = [a for f in queued for a in (str(f.source), f.digest.hex)]
        self._child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", CHILD, root, str(self._store.root), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._child.stdout is not None
        self._reader = threading.Thread(
            target=self._read,
            args=(self._child.stdout, queued),
            name="pinbench-stage-ahead",
            daemon=True,
        )
        self._reader.start()

    def take(self, source: Path, digest: Digest, progress: Progress | None) -> StagedBlob | None:
        """The blob staged ahead for this file (already located and checked by the caller) and
        digest, moved to this process's scratch; None: stage it the usual way."""
        found = self._files.pop((source, digest.hex), None)
        if found is None:
            return None
        with self._lock:
            found.shown = progress
            if progress is not None and found.copied:
                progress(found.copied)
        found.done.wait()
        staged = found.staged
        if staged is None or staged.digest != digest:
            return None
        fd, mine = scratch_file(self._store.staging(), "stage")
        os.close(fd)
        try:
            os.replace(staged.temp, mine)
        except OSError:
            mine.unlink(missing_ok=True)
            return None
        return StagedBlob(mine, staged.digest, staged.size)

    def stop(self) -> None:
        """Let the child go: it removes what was not taken; one still staging is stopped."""
        child = self._child
        if child is None:
            return
        finished = self._reader is None or not self._reader.is_alive()
        if not finished:
            child.terminate()
        try:
            assert child.stdin is not None
            child.stdin.close()
        except OSError:
            pass
        try:
            child.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if self._reader is not None:
            self._reader.join()
        if self._owner is not None:  # the child's owner lock, and its scratch if it was killed
            with contextlib.suppress(OSError):  # (a leftover for a later reclaim, no error)
                reclaim_owner(self._store.staging(), self._owner)

    def _read(self, lines: IO[str], queued: list[_File]) -> None:
        """Take the child's reports in order; a file not reported is not staged ahead."""

        def copied(f: _File, n: int) -> None:
            with self._lock:
                f.copied += n
                if f.shown is not None:
                    f.shown(n)

        try:
            first = lines.readline()
            if not first.startswith("owner "):
                return  # the child is gone
            self._owner = first[6:].strip()
            for f in queued:
                while (line := lines.readline()).startswith("+ "):
                    copied(f, int(line[2:]))
                if line == "!\n":
                    f.done.set()
                    continue
                if not line.startswith("= "):
                    return  # the child is gone
                hexdigest, size, pending, temp = line[2:].rstrip("\n").split(" ", 3)
                copied(f, int(pending))
                if Path(temp).parent == self._store.staging():  # never move anything else
                    f.staged = StagedBlob(Path(temp), Digest(hexdigest), int(size))
                f.done.set()
        except (OSError, ValueError, DigestError):
            return
        finally:
            for f in queued:
                f.done.set()


@contextmanager
def stages_ahead(store: BlobStore, files: list[tuple[Path, Digest]]) -> Iterator[StagesAhead]:
    ahead = StagesAhead(store)
    try:
        ahead.start(files)
        yield ahead
    finally:
        ahead.stop()
