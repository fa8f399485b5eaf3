"""Fetch a file from its source into the blob store's temp area: pin the source, hash the bytes
as they arrive, check them against every digest known for them (the pinned sha256, a legacy
md5, DVC's md5, the size). Nothing becomes a blob here: the caller commits what comes back, or
discards it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pinbench.artifacts.digest import CHUNK_SIZE, Digest, Progress
from pinbench.artifacts.scratch import scratch_file
from pinbench.artifacts.sources.errors import (
    DownloadInterrupted,
    Md5Mismatch,
    SourceError,
    SourceUnavailable,
)
from pinbench.artifacts.sources.sink import Sink, SinkBusy
from pinbench.artifacts.sources.uri import DvcUri, HfUri, HttpsUri, parse_source
from pinbench.artifacts.store import BlobStore, ChecksumMismatch, SizeMismatch, StagedBlob

if TYPE_CHECKING:  # a scheme's client (HTTP, DVC, the Hub) is imported when it fetches
    import tarfile
    import zipfile

ProgressFactory = Callable[[str, int], Progress]
"""Given a label and a total size (0 when unknown), return a progress callback."""


@dataclass(frozen=True, slots=True)
class Fetched:
    pinned: str
    """The source URI at a commit (``hf://``, ``dvc://``); an https URL as it was."""
    digest: Digest
    size: int
    md5: str | None
    """The legacy md5 to record: the declared one, or DVC's."""
    staged: StagedBlob | None
    """New bytes for the store; None when the store already holds them."""


class Fetcher:
    """Fetches for one publish or verification; archives downloaded for several of their
    members are kept until ``close``."""

    def __init__(
        self,
        store: BlobStore,
        *,
        progress: ProgressFactory | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.progress = progress
        self.say = say
        self._archives: dict[str, StagedBlob] = {}

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for archive in self._archives.values():
            archive.temp.unlink(missing_ok=True)
        self._archives.clear()

    def fetch(
        self,
        source: str,
        *,
        label: str,
        sha256: Digest | None = None,
        md5: str | None = None,
        size: int | None = None,
    ) -> Fetched:
        """Fetch ``source`` for the file ``label``; raise (leaving nothing staged) when any
        known digest or the size disagrees with the bytes."""
        uri = parse_source(source)
        if isinstance(uri, HfUri):
            return self._hf(uri, label=label, sha256=sha256, md5=md5, size=size)
        if isinstance(uri, DvcUri):
            from pinbench.artifacts.sources import dvc

            commit = dvc.resolve_commit(uri)
            pinned = uri.at(commit)
            with dvc.open_file(pinned) as (handle, dvc_md5):
                staged, got_md5 = self._copy(handle, label, size)
            self._check(staged, label=label, sha256=sha256, size=size)
            self._check_md5(staged, label, got_md5, md5, "the manifest")
            self._check_md5(staged, label, got_md5, dvc_md5, f"DVC ({pinned})")
            return Fetched(str(pinned), staged.digest, staged.size, md5 or dvc_md5, staged)
        return self._https(uri, label=label, sha256=sha256, md5=md5, size=size)

    # ------------------------------------------------------------ per scheme

    def _hf(
        self, uri: HfUri, *, label: str, sha256: Digest | None, md5: str | None, size: int | None
    ) -> Fetched:
        from pinbench.artifacts.sources import hf

        path, commit = hf.download(uri)
        pinned = str(uri.at(commit))
        if sha256 is not None and self.store.has(sha256) and md5 is None:
            actual, got, _ = self.store.cache.digest(path)
            if actual != sha256:
                raise ChecksumMismatch(path=f"{label} ({pinned})", expected=sha256, actual=actual)
            self._check_size(label, size, got)
            return Fetched(pinned, actual, got, None, None)
        with path.open("rb") as handle:
            staged, got_md5 = self._copy(handle, label, size)
        self._check(staged, label=f"{label} ({pinned})", sha256=sha256, size=size)
        self._check_md5(staged, label, got_md5, md5, "the manifest")
        return Fetched(pinned, staged.digest, staged.size, md5, staged)

    def _https(
        self, uri: HttpsUri, *, label: str, sha256: Digest | None, md5: str | None, size: int | None
    ) -> Fetched:
        if sha256 is not None and self.store.has(sha256):
            return Fetched(str(uri), sha256, self.store.local(sha256).stat().st_size, md5, None)
        if uri.member is None:
            staged, got_md5 = self._download(uri.url, label, size)
        else:
            archive = self._archive(uri.url)
            with _Member(archive.temp, uri) as handle:
                staged, got_md5 = self._copy(handle, label, size)
        self._check(staged, label=label, sha256=sha256, size=size)
        self._check_md5(staged, label, got_md5, md5, "the manifest")
        return Fetched(str(uri), staged.digest, staged.size, md5, staged)

    def _download(self, url: str, label: str, size: int | None) -> tuple[StagedBlob, str]:
        from pinbench.artifacts.sources import https

        part = https.part_path(self.store.staging(), url)
        try:
            sink = Sink(part, resume=True, progress=self._bar(label, size))
        except SinkBusy:
            raise SourceUnavailable(
                source=url, reason=f"another process is downloading it into {part}; try again"
            ) from None
        if sink.size and self.say is not None:
            self.say(f"resuming {url} from {sink.size} bytes already downloaded")
        try:
            https.download(url, sink, say=self.say)
        except DownloadInterrupted:
            sink.close()  # kept for the next fetch to resume from
            raise
        except BaseException:
            sink.abort()
            raise
        md5 = sink.md5
        staged = sink.finish()
        return self._restage(staged), md5

    def _archive(self, url: str) -> StagedBlob:
        if url not in self._archives:
            staged, _ = self._download(url, url.rsplit("/", 1)[-1], None)
            self._archives[url] = staged
        return self._archives[url]

    # ------------------------------------------------------------ bytes and checks

    def _temp(self) -> Path:
        fd, name = scratch_file(self.store.staging(), "fetch")
        os.close(fd)
        return name

    def _restage(self, staged: StagedBlob) -> StagedBlob:
        """Move a completed download off its resumable name, so a later fetch of the same URL
        starts afresh instead of resuming a finished file."""
        temp = self._temp()
        os.replace(staged.temp, temp)
        return StagedBlob(temp, staged.digest, staged.size)

    def _copy(self, handle: IO[bytes], label: str, size: int | None) -> tuple[StagedBlob, str]:
        sink = Sink(self._temp(), progress=self._bar(label, size))
        try:
            while chunk := handle.read(CHUNK_SIZE):
                sink.write(chunk)
                if size is not None and sink.size > size:
                    raise SizeMismatch(path=label, expected=size, actual=sink.size)
        except BaseException:
            sink.abort()
            raise
        md5 = sink.md5
        return sink.finish(), md5

    def _bar(self, label: str, size: int | None) -> Progress | None:
        return self.progress(label, size or 0) if self.progress is not None else None

    def _check(
        self, staged: StagedBlob, *, label: str, sha256: Digest | None, size: int | None
    ) -> None:
        try:
            if sha256 is not None and staged.digest != sha256:
                raise ChecksumMismatch(path=label, expected=sha256, actual=staged.digest)
            self._check_size(label, size, staged.size)
        except BaseException:
            self.store.discard(staged)
            raise

    def _check_md5(
        self, staged: StagedBlob, label: str, actual: str, expected: str | None, by: str
    ) -> None:
        if expected is not None and actual != expected:
            self.store.discard(staged)
            raise Md5Mismatch(path=label, expected=expected, actual=actual, declared_by=by)

    @staticmethod
    def _check_size(label: str, expected: int | None, actual: int) -> None:
        if expected is not None and actual != expected:
            raise SizeMismatch(path=label, expected=expected, actual=actual)


class _Member:
    """Open one member of a tar (any compression) or zip archive for reading."""

    def __init__(self, archive: Path, uri: HttpsUri) -> None:
        self.archive = archive
        self.uri = uri
        self._closers: list[IO[bytes] | tarfile.TarFile | zipfile.ZipFile] = []

    def __enter__(self) -> IO[bytes]:
        import tarfile
        import zipfile

        name = self.uri.member or ""
        if zipfile.is_zipfile(self.archive):
            zf = zipfile.ZipFile(self.archive)
            self._closers.append(zf)
            names = zf.namelist()
            if name not in names:
                raise self._missing(names)
            handle: IO[bytes] = zf.open(name)
        elif tarfile.is_tarfile(self.archive):
            tf = tarfile.open(self.archive, "r:*")
            self._closers.append(tf)
            member = next((m for m in tf.getmembers() if m.name.lstrip("./") == name), None)
            if member is None or not member.isfile():
                raise self._missing([m.name for m in tf.getmembers() if m.isfile()])
            extracted = tf.extractfile(member)
            assert extracted is not None
            handle = extracted
        else:
            raise SourceError(
                source=str(self.uri), reason=f"{self.uri.url} is not a tar or zip archive"
            )
        self._closers.append(handle)
        return handle

    def __exit__(self, *exc: object) -> None:
        for closer in reversed(self._closers):
            closer.close()

    def _missing(self, names: list[str]) -> SourceError:
        shown = ", ".join(sorted(names)[:10]) + (" …" if len(names) > 10 else "")
        return SourceError(
            source=str(self.uri),
            reason=f"the archive has no file {self.uri.member!r} (it has: {shown})",
        )
