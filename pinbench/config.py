"""Where pinbench keeps its state: ``PINBENCH_HOME``, ``PINBENCH_DATABASE_URL`` and, when the
blobs are in object storage, ``PINBENCH_BLOBS``, ``PINBENCH_S3_ENDPOINT`` and
``PINBENCH_CACHE_MAX``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pinbench.errors import UserError


def env_folder(variable: str, default: str, environ: Mapping[str, str] | None = None) -> Path:
    """The folder the environment variable ``variable`` names, else ``default``, ``~``
    expanded (a machine with no home still takes a variable set without one); made absolute
    here, where it is read: the processes pinbench starts work in folders of their own, where
    a relative name would be another place."""
    env = os.environ if environ is None else environ
    return Path(env.get(variable) or default).expanduser().absolute()


def shared_cache(environ: Mapping[str, str] | None = None) -> Path:
    """The runners' environments, named by their digest so that every home can share them:
    ``PINBENCH_CACHE``, default ``XDG_CACHE_HOME/pinbench`` (``~/.cache/pinbench``)."""
    env = os.environ if environ is None else environ
    if env.get("PINBENCH_CACHE"):
        return env_folder("PINBENCH_CACHE", "", env)
    return env_folder("XDG_CACHE_HOME", "~/.cache", env) / "pinbench"


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    database_url: str
    blobs: str | None = None
    """``PINBENCH_BLOBS``: ``s3://BUCKET[/PREFIX]`` keeps the blobs in object storage (decision
    151); unset, in the home's ``blobs`` folder."""
    s3_endpoint: str | None = None
    """``PINBENCH_S3_ENDPOINT``: the S3 endpoint URL (unset: AWS's own)."""
    cache_max: str | None = None
    """``PINBENCH_CACHE_MAX``: the most bytes of local copies a store on object storage keeps
    (``20G``, ``500M``; unset: 20 GiB; decision 210), parsed when the store is opened."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        home = env_folder("PINBENCH_HOME", "~/.local/share/pinbench", env)
        url = env.get("PINBENCH_DATABASE_URL") or f"sqlite:///{home.resolve() / 'pinbench.db'}"
        return cls(
            home=home,
            database_url=url,
            blobs=env.get("PINBENCH_BLOBS") or None,
            s3_endpoint=env.get("PINBENCH_S3_ENDPOINT") or None,
            cache_max=env.get("PINBENCH_CACHE_MAX") or None,
        )


def check_home(home: Path) -> None:
    """Refuse a home that is not a folder and cannot become one: a file, or a path under a
    file (issue 72: ``init`` ended in a ``FileExistsError`` traceback, ``restore`` in a
    ``NotADirectoryError`` one, ``list`` blamed the database's schema)."""
    at = home
    while True:
        if at.is_dir():
            return
        if at.exists() or at.is_symlink():
            raise HomeNotAFolder(home=home, blocker=at)
        if at.parent == at:
            return
        at = at.parent


class HomeNotAFolder(UserError):
    def __init__(self, *, home: Path, blocker: Path) -> None:
        what = (
            "is not a folder" if blocker == home else f"is under {blocker}, which is not a folder"
        )
        super().__init__(
            f"PINBENCH_HOME {home} {what}: set PINBENCH_HOME to a folder (it is made if it does "
            "not exist)"
        )
        self.home = str(home)
        self.blocker = str(blocker)
