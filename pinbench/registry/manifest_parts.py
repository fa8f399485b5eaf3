"""The pieces every manifest kind shares: the strict struct base, file entries with their
sha256 and sources, constraints on other artifacts, platforms, and the common fields."""

from __future__ import annotations

import posixpath
import re
from typing import Annotated, Literal

import msgspec

from pinbench import bounds as b
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.sources.uri import parse_source
from pinbench.errors import InvalidDocument, UserError
from pinbench.registry.explain import VersionText
from pinbench.registry.names import check_name
from pinbench.registry.ranges import Range
from pinbench.registry.versions import parse_version

_SHA256 = re.compile(r"[0-9a-f]{64}")
_MD5 = re.compile(r"[0-9a-f]{32}")
REMOTE_SCHEMES = ("https://", "http://", "hf://", "dvc://")
"""Sources whose bytes are fetched (and pinned) at publish; see ``pinbench.artifacts.sources``."""
_IMAGE_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_RELEASE = re.compile(r"[0-9]+(\.[0-9]+)*[0-9A-Za-z.]*")


class ManifestError(InvalidDocument):
    what = "manifest"


class _Strict(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Unknown fields are errors, values are immutable."""


def _check_range(text: str) -> None:
    try:
        Range.parse(text)
    except UserError as exc:
        raise ValueError(str(exc)) from None


PATH_MAX_LENGTH = 1000
"""The database's column for a file path (``artifact_files.path``)."""


def check_relative_path(path: str) -> str:
    """A file path inside an artifact: relative, normalised, never escaping the artifact."""
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        raise ValueError(f"file path {path!r} must be a relative POSIX path inside the artifact")
    if posixpath.normpath(path) != path or path.split("/")[0] == "..":
        raise ValueError(f"file path {path!r} must be normalised and must not contain '..'")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ValueError(f"file path {path!r} must name a file: no empty, '.' or '..' part")
    if len(path) > PATH_MAX_LENGTH:
        raise ValueError(
            f"file path {path[:40]!r}... is {len(path)} characters: at most {PATH_MAX_LENGTH}"
        )
    return path


# ---------------------------------------------------------------- shared parts


class FileEntry(_Strict, frozen=True, kw_only=True):
    path: str
    sha256: str | None = None
    """Required, except for a file with a remote source: publishing fetches it, computes the
    sha256 and stores the manifest with it filled in."""
    size: Annotated[int, b.FILE_SIZE.meta] | None = None
    source: str | None = None
    """Where the bytes come from: ``file:REL`` (relative to the manifest) or a URI
    (``https://``, ``hf://ORG/REPO@REV/PATH``, ``dvc://REPO@REV/PATH``)."""
    md5: str | None = None
    """A legacy digest (MLModelScope manifests, DVC): checked when the bytes are fetched and
    kept beside the sha256. Never a substitute for it."""

    def __post_init__(self) -> None:
        check_relative_path(self.path)
        if self.sha256 is None:
            if not self.remote:
                raise ValueError(
                    f"sha256 of {self.path!r} is required (it may be left out only for a file "
                    f"with a remote source: {', '.join(REMOTE_SCHEMES)})"
                )
        elif not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"sha256 of {self.path!r} must be 64 lowercase hex digits")
        if self.remote:
            assert self.source is not None
            try:
                parse_source(self.source)
            except UserError as exc:
                raise ValueError(str(exc)) from None
        if self.md5 is not None and not _MD5.fullmatch(self.md5):
            raise ValueError(f"md5 of {self.path!r} must be 32 lowercase hex digits")

    @property
    def remote(self) -> bool:
        return self.source is not None and self.source.startswith(REMOTE_SCHEMES)

    @property
    def digest(self) -> Digest:
        if self.sha256 is None:
            raise UserError(
                f"file {self.path!r} has no sha256 yet: publish fetches it from {self.source}"
            )
        return Digest(self.sha256)


class Constraint(_Strict, frozen=True, kw_only=True):
    """A constraint on another artifact: its name and an npm-style range."""

    name: str
    range: VersionText = "*"

    def __post_init__(self) -> None:
        check_name(self.name)
        _check_range(self.range)


class Platform(_Strict, frozen=True, kw_only=True):
    arch: Literal["amd64", "arm64"] = "amd64"
    device: Literal["cpu", "cuda", "rocm"] = "cpu"

    def key(self) -> str:
        return f"{self.arch}/{self.device}"


Scalar = str | int | float | bool


class _Common(_Strict, frozen=True, kw_only=True):
    name: str
    version: VersionText
    description: str = ""
    license: str | None = None
    references: list[str] = msgspec.field(default_factory=list)
    attributes: dict[str, Scalar] = msgspec.field(default_factory=dict)

    def _check_identity(self) -> None:
        check_name(self.name)
        try:
            parse_version(self.version)
        except UserError as exc:
            raise ValueError(str(exc)) from None
        for key, value in self.attributes.items():
            if isinstance(value, int) and not isinstance(value, bool):
                b.ATTRIBUTE_INT.check(f"attributes.{key}", value)

    @property
    def files_list(self) -> list[FileEntry]:
        return list(getattr(self, "files", []))


def _check_files(files: list[FileEntry], *, required: bool) -> None:
    if required and not files:
        raise ValueError("files must list at least one file")
    seen: set[str] = set()
    for f in files:
        if f.path in seen:
            raise ValueError(f"file path {f.path!r} is listed twice")
        seen.add(f.path)
