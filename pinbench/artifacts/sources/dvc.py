"""DVC repositories through ``dvc.api``: the revision is pinned to a git commit (``git
rev-parse`` in a local repository, ``git ls-remote`` for a remote one) and the file is read at
that commit, from the repository's cache or its DVC remote. DVC's md5 of the file comes back
beside the bytes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from pinbench.artifacts.sources.errors import SourceError, SourceUnavailable
from pinbench.artifacts.sources.uri import COMMIT, DvcUri

GIT_TIMEOUT_S = 120


def resolve_commit(uri: DvcUri) -> str:
    """The commit a branch, tag or (abbreviated) commit names in the repository."""
    if uri.repo.startswith("/"):
        out = _git(
            uri, "-C", uri.repo, "rev-parse", "--verify", "--quiet", f"{uri.revision}^{{commit}}"
        )
        if out.returncode == 0 and COMMIT.fullmatch(out.stdout.strip()):
            return out.stdout.strip()
        if out.returncode == 1:
            raise _no_revision(uri)
        raise SourceUnavailable(source=str(uri), reason=_tail(out) or "not a git repository")
    if uri.pinned:
        return uri.revision
    out = _git(uri, "ls-remote", uri.url, uri.revision)
    if out.returncode != 0:
        raise SourceUnavailable(source=str(uri), reason=_tail(out))
    refs = {}
    for line in out.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        refs[ref] = sha
    rev = uri.revision
    for name in (f"refs/tags/{rev}^{{}}", f"refs/tags/{rev}", f"refs/heads/{rev}"):
        if name in refs:
            return refs[name]
    raise _no_revision(uri)


@contextmanager
def open_file(uri: DvcUri) -> Iterator[tuple[IO[bytes], str | None]]:
    """Open the file at the (pinned) revision; yield it and DVC's md5 (None for a file git
    tracks itself, or one DVC hashed the legacy way)."""
    try:
        from dvc.api import DVCFileSystem
    except ImportError:
        raise SourceUnavailable(
            source=str(uri), reason="dvc:// needs DVC: pip install 'pinbench[sources]'"
        ) from None
    try:
        fs = DVCFileSystem(uri.url, rev=uri.revision)
        info: dict[str, Any] = fs.info(uri.path)
    except FileNotFoundError:
        raise SourceError(
            source=str(uri), reason=f"{uri.path} is not in {uri.repo} at revision {uri.revision}"
        ) from None
    except Exception as exc:  # DVC raises many types; name it and stop
        raise SourceUnavailable(source=str(uri), reason=f"{type(exc).__name__}: {exc}") from None
    if info.get("type") != "file":
        raise SourceError(source=str(uri), reason=f"{uri.path} is a {info.get('type')}, not a file")
    try:
        handle = fs.open(uri.path, mode="rb")
    except Exception as exc:
        raise SourceUnavailable(source=str(uri), reason=f"{type(exc).__name__}: {exc}") from None
    with handle:
        yield handle, _md5(info)


def _md5(info: dict[str, Any]) -> str | None:
    """DVC 3 records a plain md5 of the bytes; the legacy ``md5-dos2unix`` is not comparable."""
    entry = (info.get("dvc_info") or {}).get("entry")
    hash_info = getattr(entry, "hash_info", None)
    if hash_info is None or getattr(hash_info, "name", None) != "md5":
        return None
    value = getattr(hash_info, "value", None)
    return value if isinstance(value, str) else None


GIT_KEPT = (
    "HOME",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
)
"""What of the caller's environment git is given: where it may find its configuration, the
network's proxies and certificate authorities; never ``GIT_SSH_COMMAND``, ``GIT_DIR`` or a
PATH (``programs.clean_environment``)."""


def _git(uri: DvcUri, *args: str) -> subprocess.CompletedProcess[str]:
    from pinbench.programs import ProgramUnavailable, clean_environment, system_program

    try:
        git = str(system_program("git"))
        return subprocess.run(
            [git, *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            env=clean_environment(*GIT_KEPT),
        )
    except ProgramUnavailable as exc:
        raise SourceUnavailable(source=str(uri), reason=f"git: {exc.reason}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceUnavailable(source=str(uri), reason=f"git: {exc}") from None


def _no_revision(uri: DvcUri) -> SourceError:
    return SourceError(
        source=str(uri),
        reason=f"revision {uri.revision!r} does not exist in {uri.repo} "
        "(no branch, tag or commit of that name)",
    )


def _tail(out: subprocess.CompletedProcess[str]) -> str:
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[-1] if lines else ""
