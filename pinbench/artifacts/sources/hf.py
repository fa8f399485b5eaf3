"""The Hugging Face Hub through ``huggingface_hub``: a file at a branch, tag or commit is
downloaded into the hub's own cache (offline with ``HF_HUB_OFFLINE=1``: read from it) and the
revision is pinned to the commit the cache files it under. The hub client does not verify the
bytes it returns; the caller hashes them against the pin."""

from __future__ import annotations

import os
from pathlib import Path

from pinbench.artifacts.sources.errors import SourceError, SourceUnavailable
from pinbench.artifacts.sources.uri import COMMIT, HfUri


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def cache_dir() -> Path:
    """The hub cache, read from the environment at call time (the library reads it at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def download(uri: HfUri) -> tuple[Path, str]:
    """Return the file's path in the hub cache and the commit it belongs to."""
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError:
        raise SourceUnavailable(
            source=str(uri), reason="hf:// needs huggingface_hub: pip install 'pinbench[sources]'"
        ) from None
    cache = cache_dir()
    try:
        found = huggingface_hub.hf_hub_download(
            uri.repo_id,
            uri.path,
            revision=uri.revision,
            repo_type=uri.repo_type,
            cache_dir=cache,
            local_files_only=offline(),
        )
    except errors.RevisionNotFoundError:
        raise SourceError(
            source=str(uri),
            reason=f"revision {uri.revision!r} does not exist in {uri.repo_id} "
            "(no branch, tag or commit of that name)",
        ) from None
    except errors.RepositoryNotFoundError:
        raise SourceError(
            source=str(uri),
            reason=f"repository {uri.repo_id} was not found (or it is private: set HF_TOKEN)",
        ) from None
    except errors.LocalEntryNotFoundError:  # a subclass of EntryNotFoundError: first
        raise SourceError(source=str(uri), reason=_not_cached(uri, cache)) from None
    except errors.EntryNotFoundError:
        raise SourceError(
            source=str(uri), reason=f"{uri.path} is not in {uri.repo_id} at {uri.revision}"
        ) from None
    except (errors.HfHubHTTPError, OSError) as exc:
        raise SourceUnavailable(source=str(uri), reason=str(exc).splitlines()[0]) from None
    path = Path(str(found))
    commit = _commit_of(path, cache, uri)
    if uri.pinned and commit != uri.revision:
        raise SourceError(
            source=str(uri), reason=f"the hub returned commit {commit}, not the pinned one"
        )
    return path, commit


def _repo_folder(uri: HfUri, cache: Path) -> Path:
    return cache / f"{uri.repo_type}s--{uri.repo_id.replace('/', '--')}"


def _commit_of(path: Path, cache: Path, uri: HfUri) -> str:
    """The cache keeps files under ``snapshots/COMMIT/PATH``."""
    snapshots = _repo_folder(uri, cache) / "snapshots"
    try:
        commit = path.relative_to(snapshots).parts[0]
    except ValueError:
        commit = ""
    if not COMMIT.fullmatch(commit):
        raise SourceUnavailable(
            source=str(uri), reason=f"cannot tell the commit of {path} (expected it in {snapshots})"
        )
    return commit


def _not_cached(uri: HfUri, cache: Path) -> str:
    """Offline, say whether the revision or the file is what the local cache lacks."""
    folder = _repo_folder(uri, cache)
    known = (folder / "refs" / uri.revision).is_file() or (
        folder / "snapshots" / uri.revision
    ).is_dir()
    where = f"the local Hugging Face cache {cache}" + (
        " (HF_HUB_OFFLINE is set)" if offline() else ""
    )
    if not folder.is_dir():
        return f"repository {uri.repo_id} is not in {where}"
    if not known:
        return (
            f"revision {uri.revision!r} does not exist in {uri.repo_id} as {where} has it "
            "(no branch, tag or commit of that name)"
        )
    return f"{uri.path} is not in {uri.repo_id} at {uri.revision} in {where}"
