"""Source URIs, parsed and printed: ``https://…[#path=MEMBER]``, ``hf://[datasets/]ORG/REPO@REV/
PATH``, ``dvc://REPO@REV/PATH``. A parsed URI prints back to its canonical text; ``pinned``
returns the same URI at a commit."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, replace

from pinbench.errors import InvalidValue

COMMIT = re.compile(r"[0-9a-f]{40}")
HF_REPO_TYPES = {"datasets": "dataset", "spaces": "space"}


class SourceUriError(InvalidValue):
    what = "source"


@dataclass(frozen=True, slots=True)
class HttpsUri:
    url: str
    """Without the fragment."""
    member: str | None = None
    """A file inside the archive (tar, tar.gz, zip) at ``url``: ``#path=MEMBER``."""

    def __str__(self) -> str:
        if self.member is None:
            return self.url
        return f"{self.url}#path={urllib.parse.quote(self.member, safe='/')}"

    @property
    def pinned(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class HfUri:
    repo_id: str
    revision: str
    path: str
    repo_type: str = "model"

    def __str__(self) -> str:
        prefix = next((k + "/" for k, v in HF_REPO_TYPES.items() if v == self.repo_type), "")
        rev = urllib.parse.quote(self.revision, safe="")
        return f"hf://{prefix}{self.repo_id}@{rev}/{self.path}"

    @property
    def pinned(self) -> bool:
        return bool(COMMIT.fullmatch(self.revision))

    def at(self, commit: str) -> HfUri:
        return replace(self, revision=commit)


@dataclass(frozen=True, slots=True)
class DvcUri:
    repo: str
    """As written: an absolute path to a local repository, or ``host/path`` (git over https)."""
    revision: str
    path: str

    def __str__(self) -> str:
        rev = urllib.parse.quote(self.revision, safe="")
        return f"dvc://{self.repo}@{rev}/{self.path}"

    @property
    def url(self) -> str:
        """What git and DVC are given."""
        return self.repo if self.repo.startswith("/") else f"https://{self.repo}"

    @property
    def pinned(self) -> bool:
        return bool(COMMIT.fullmatch(self.revision))

    def at(self, commit: str) -> DvcUri:
        return replace(self, revision=commit)


SourceUri = HttpsUri | HfUri | DvcUri


def parse_source(text: str) -> SourceUri:
    """Parse a remote source URI; ``SourceUriError`` names what is wrong."""
    if text.startswith(("https://", "http://")):
        return _https(text)
    if text.startswith("hf://"):
        return _hf(text)
    if text.startswith("dvc://"):
        return _dvc(text)
    raise SourceUriError(text=text, reason="expected https://, hf:// or dvc://")


def _https(text: str) -> HttpsUri:
    url, _, fragment = text.partition("#")
    if not urllib.parse.urlsplit(url).hostname:
        raise SourceUriError(text=text, reason="no host")
    if not fragment:
        return HttpsUri(url)
    params = urllib.parse.parse_qs(fragment, strict_parsing=False)
    members = params.get("path", [])
    if set(params) != {"path"} or len(members) != 1 or not members[0]:
        raise SourceUriError(
            text=text, reason="the only fragment understood is #path=MEMBER (a file in an archive)"
        )
    return HttpsUri(url, members[0])


def _split_at_revision(text: str, body: str) -> tuple[str, str, str]:
    """``WHERE@REV/PATH`` → (WHERE, REV, PATH), splitting at the last '@'."""
    where, at, rest = body.rpartition("@")
    if not at or not where:
        raise SourceUriError(text=text, reason="expected …@REVISION/PATH (a branch, tag or commit)")
    rev, slash, path = rest.partition("/")
    if not rev or not slash or not path:
        raise SourceUriError(text=text, reason="expected a revision and a path after '@'")
    rev = urllib.parse.unquote(rev)
    if path.startswith("/") or ".." in path.split("/"):
        raise SourceUriError(text=text, reason=f"path {path!r} must be relative, without '..'")
    return where, rev, path


def _hf(text: str) -> HfUri:
    body = text.removeprefix("hf://")
    repo_type = "model"
    first, _, rest = body.partition("/")
    if first in HF_REPO_TYPES:
        repo_type, body = HF_REPO_TYPES[first], rest
    where, rev, path = _split_at_revision(text, body)
    if where.count("/") != 1 or not all(where.split("/")):
        raise SourceUriError(text=text, reason=f"repository {where!r} must be ORG/NAME")
    return HfUri(where, rev, path, repo_type)


def _dvc(text: str) -> DvcUri:
    where, rev, path = _split_at_revision(text, text.removeprefix("dvc://"))
    return DvcUri(where.rstrip("/"), rev, path)
