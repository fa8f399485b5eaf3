"""A pinned source archive fetched from pip's own indexes and unpacked as data
(``source_builds``).

The archive is looked for by its file name in pip's find-links folders, then in each index's
simple API (PEP 691's JSON, else its HTML page), in pip's order; the first one whose bytes have
the pinned sha256 is taken, and one that differs is named in the refusal, never used. It is
unpacked with tarfile's ``data`` filter: no link out of the folder, no device, no absolute
path, no owner or mode bits beyond a file's.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tarfile
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from pinbench.errors import UserError

DEFAULT_INDEX = "https://pypi.org/simple"
MAX_ARCHIVE = 1 << 30
MAX_PAGE = 64 << 20


class SourceArchiveUnavailable(UserError):
    def __init__(self, *, archive: str, reason: str) -> None:
        super().__init__(f"source archive {archive}: {reason}")
        self.archive = archive
        self.reason = reason


def pip_places() -> tuple[list[str], list[str]]:
    """pip's find-links folders and its indexes (index-url, then extra-index-url)."""
    from pinbench.environments.uv_tools import pip_index_args

    args = pip_index_args()
    pairs = list(zip(args[::2], args[1::2], strict=True))
    links = [v for k, v in pairs if k == "--find-links"]
    index = [v for k, v in pairs if k == "--index-url"] or [DEFAULT_INDEX]
    return links, index + [v for k, v in pairs if k == "--extra-index-url"]


def fetch(archive: str, project: str, sha256: str, into: Path, say: Callable[[str], None]) -> Path:
    """``archive`` (``project``'s file) copied into ``into`` with the pinned ``sha256``."""
    target = into / archive
    links, indexes = pip_places()
    tried: list[str] = []
    for folder in links:
        local = Path(folder.removeprefix("file://")) / archive
        if local.is_file():
            shutil.copyfile(local, target)
            if _matches(target, sha256, tried, str(local)):
                return target
    for index in indexes:
        try:
            url = _link(index.rstrip("/"), project, archive)
        except (OSError, ValueError, AttributeError, TypeError) as exc:  # a page not an index's
            tried.append(f"{index}: {exc}")
            continue
        if url is None:
            tried.append(f"{index}: no {archive}")
            continue
        local_index = index.startswith("file:")
        if urllib.parse.urlsplit(url).scheme == "file" and not local_index:
            tried.append(f"{index}: links {archive} to a local file ({url})")
            continue
        say(f"fetching {archive} from {urllib.parse.urlsplit(url).netloc or index}")
        try:
            _download(url, target)
        except (OSError, ValueError) as exc:
            tried.append(f"{url}: {exc}")
            continue
        if _matches(target, sha256, tried, url):
            return target
    raise SourceArchiveUnavailable(
        archive=archive,
        reason="not found with sha256 " + sha256 + (f" ({'; '.join(tried)})" if tried else ""),
    )


def _matches(path: Path, sha256: str, tried: list[str], where: str) -> bool:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() == sha256:
        return True
    tried.append(f"{where} has sha256 {digest.hexdigest()}, not the pinned one")
    path.unlink()
    return False


def _open(url: str, accept: str) -> object:
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("https", "http", "file"):
        raise ValueError(f"not an index URL ({scheme!r})")
    request = urllib.request.Request(url, headers={"Accept": accept})
    return urllib.request.urlopen(request, timeout=60)  # pip's own index


def _link(index: str, project: str, archive: str) -> str | None:
    """The URL of ``archive`` on ``index``'s page of ``project``, or None."""
    page = f"{index}/{project}/"
    if page.startswith("file:"):
        local = Path(urllib.parse.urlsplit(page).path)
        if not local.is_dir():
            return None
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    with _open(page, accept) as response:  # type: ignore[attr-defined]
        kind = response.headers.get("Content-Type", "")
        body = response.read(MAX_PAGE + 1)
    if len(body) > MAX_PAGE:
        raise ValueError("index page larger than any project's")
    if "json" in kind:
        files = json.loads(body).get("files", [])
        found = [
            f.get("url") for f in files if isinstance(f, dict) and f.get("filename") == archive
        ]
    else:
        hrefs = re.findall(rb'href="([^"]+)"', body)
        found = [
            h.decode() for h in hrefs if h.decode().split("#")[0].rsplit("/", 1)[-1] == archive
        ]
    if not found or not isinstance(found[0], str):
        return None
    return urllib.parse.urljoin(page, found[0]).split("#")[0]


def _download(url: str, target: Path) -> None:
    with _open(url, "*/*") as response, open(target, "wb") as out:  # type: ignore[attr-defined]
        total = 0
        for chunk in iter(lambda: response.read(1 << 20), b""):
            total += len(chunk)
            if total > MAX_ARCHIVE:
                raise ValueError("larger than any source archive")
            out.write(chunk)


def unpack(archive: Path, into: Path) -> Path:
    """``archive`` unpacked into ``into`` as data; returns its one top folder."""
    into.mkdir()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise SourceArchiveUnavailable(
            archive=archive.name, reason=f"not unpacked: {exc}"
        ) from None
    tops = list(into.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise SourceArchiveUnavailable(archive=archive.name, reason="not one top folder")
    return tops[0]
