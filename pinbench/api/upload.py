"""Publishing by upload: a ``multipart/form-data`` body streamed into the blob store.

The body is a part named ``manifest`` (the manifest's YAML or JSON text) followed by one part
named ``file`` per file, whose filename is the file's path in the manifest. Each file is hashed
while it is written into the store's temp area and checked against the manifest as soon as it
ends; nothing becomes visible until every file matched, and a refused upload leaves no blob.
Every declared file must be in the body, even one the store already holds: naming a digest is
not proof of holding its bytes (else the upload would answer "is this blob here?" and let
anyone republish bytes they never had).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio.to_thread
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from pinbench.api.problems import UploadTooLarge
from pinbench.artifacts.store import BlobStore, StagedBlob, StageWriter
from pinbench.errors import UserError
from pinbench.registry.manifest import Manifest, load_manifest_text
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.sourcing import FileProblem, check_md5, needs_completion
from pinbench.registry.yamlsafe import MAX_DOCUMENT_BYTES

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

MANIFEST_MAX_BYTES = MAX_DOCUMENT_BYTES


class BadUpload(UserError):
    """The multipart body is malformed or does not follow the upload's rules."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"bad upload: {reason}")
        self.reason = reason


@dataclass
class Received:
    """What an upload delivered: the manifest, each file checked and staged."""

    manifest: Manifest
    checked: list[tuple[FileEntry, int]] = field(default_factory=list)
    staged: list[StagedBlob] = field(default_factory=list)

    def discard(self, store: BlobStore) -> None:
        for blob in self.staged:
            store.discard(blob)


def boundary_of(content_type: str | None) -> bytes:
    kind, params = parse_options_header(content_type or "")
    if kind != b"multipart/form-data" or not params.get(b"boundary"):
        raise BadUpload(
            f"expected Content-Type multipart/form-data with a boundary, got {content_type!r}"
        )
    return params[b"boundary"]


class _Parts:
    """Receives the parser's callbacks; raises to stop on the first problem."""

    def __init__(
        self,
        store: BlobStore,
        authorize: Callable[[Manifest], None],
    ) -> None:
        self.store = store
        self.authorize = authorize
        self.received: Received | None = None
        self.entries: dict[str, FileEntry] = {}
        self.seen: set[str] = set()
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._headers: dict[bytes, bytes] = {}
        self._name: str | None = None
        self._filename: str | None = None
        self._manifest = bytearray()
        self._writer: StageWriter | None = None
        self.ended = False

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": lambda d, s, e: self._header_field.extend(d[s:e]),
            "on_header_value": lambda d, s, e: self._header_value.extend(d[s:e]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_end": self._end,
        }

    def _end(self) -> None:
        self.ended = True

    def _part_begin(self) -> None:
        self._headers = {}
        self._name = self._filename = None

    def _header_end(self) -> None:
        self._headers[bytes(self._header_field).lower()] = bytes(self._header_value)
        self._header_field.clear()
        self._header_value.clear()

    def _headers_finished(self) -> None:
        _, params = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = params.get(b"name")
        if name is None:
            raise BadUpload("a part has no Content-Disposition name")
        self._name = name.decode("utf-8", "replace")
        filename = params.get(b"filename")
        self._filename = filename.decode("utf-8", "replace") if filename is not None else None
        if self._name == "manifest":
            if self.received is not None:
                raise BadUpload("more than one manifest part")
            return
        if self._name != "file":
            raise BadUpload(f"unknown part {self._name!r}: expected 'manifest' then 'file' parts")
        if self.received is None:
            raise BadUpload("the manifest part must come before the file parts")
        path = self._filename
        if path is None:
            raise BadUpload("a file part has no filename (the file's path in the manifest)")
        if path not in self.entries:
            raise FileProblem(path=path, reason="not declared in the manifest")
        if path in self.seen:
            raise FileProblem(path=path, reason="uploaded twice")
        self.seen.add(path)
        self._writer = self.store.writer()

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._writer is not None:
            self._writer.write(chunk)
        elif self._name == "manifest":
            self._manifest.extend(chunk)
            if len(self._manifest) > MANIFEST_MAX_BYTES:
                raise BadUpload(f"the manifest part is larger than {MANIFEST_MAX_BYTES} bytes")

    def _part_end(self) -> None:
        if self._name == "manifest":
            self._manifest_done()
        elif self._writer is not None:
            assert self.received is not None and self._filename is not None
            entry = self.entries[self._filename]
            writer, self._writer = self._writer, None
            blob = writer.finish(label=entry.path, expected=entry.digest, size=entry.size)
            self.received.staged.append(blob)  # discarded with the rest if the md5 differs
            if entry.md5 is not None:
                check_md5(blob.temp, label=entry.path, expected=entry.md5)
            self.received.checked.append((entry, blob.size))

    def _manifest_done(self) -> None:
        try:
            text = bytes(self._manifest).decode("utf-8")
        except UnicodeDecodeError:
            raise BadUpload("the manifest part is not UTF-8 text") from None
        manifest = load_manifest_text(text, source="(uploaded manifest)")
        if needs_completion(manifest):
            raise BadUpload(
                "the manifest has files or labels without a sha256 or a source not pinned to a "
                "commit: the server does not fetch sources; `pinbench publish` (with "
                "PINBENCH_URL set) fetches and pins them first, then uploads the completed manifest"
            )
        self.authorize(manifest)
        self.entries = {f.path: f for f in manifest.files_list}
        self.received = Received(manifest)

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        if self.received is not None:
            self.received.discard(self.store)


async def receive_upload(
    chunks: AsyncIterator[bytes],
    content_type: str | None,
    *,
    store: BlobStore,
    limit: int,
    authorize: Callable[[Manifest], None],
) -> Received:
    """Parse and stage an upload; every file declared must have arrived, with its bytes.

    ``authorize`` sees the manifest before any file byte is written. On any error every
    staged file is removed and the error raised.
    """
    parts = _Parts(store, authorize)
    parser = MultipartParser(boundary_of(content_type), parts.callbacks())
    total = 0
    try:
        async for chunk in chunks:
            total += len(chunk)
            if total > limit:
                raise UploadTooLarge(limit=limit)
            if chunk:
                await anyio.to_thread.run_sync(_feed, parser, chunk)
        await anyio.to_thread.run_sync(_feed, parser, None)
        if parts.received is None:
            raise BadUpload("no manifest part")
        if not parts.ended:
            raise BadUpload("the body ended before the closing boundary (interrupted upload?)")
        missing = [p for p in parts.entries if p not in parts.seen]
        if missing:
            raise FileProblem(
                path=missing[0],
                reason="declared in the manifest but not uploaded (every file's bytes are "
                "needed, even those the server already holds)",
            )
        return parts.received
    except BaseException:
        parts.abort()
        raise


def _feed(parser: MultipartParser, chunk: bytes | None) -> None:
    """Write a chunk (or finalize, for None); the parser's own errors become BadUpload.

    Called in a worker thread: the callbacks parse the manifest's YAML, query the database
    (``authorize``) and write to disk, none of which may hold up the event loop."""
    try:
        if chunk is None:
            parser.finalize()
        else:
            parser.write(chunk)
    except MultipartParseError as exc:
        raise BadUpload(f"malformed multipart body: {exc}") from None
