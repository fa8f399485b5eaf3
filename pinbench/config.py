"""Where pinbench keeps its state: ``PINBENCH_HOME``, ``PINBENCH_DATABASE_URL`` and, when the
blobs are in object storage, ``PINBENCH_BLOBS``, ``PINBENCH_S3_ENDPOINT`` and
``PINBENCH_CACHE_MAX``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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
        home = Path(
            env.get("PINBENCH_HOME") or Path.home() / ".local" / "share" / "pinbench"
        ).expanduser()
        url = env.get("PINBENCH_DATABASE_URL") or f"sqlite:///{home.resolve() / 'pinbench.db'}"
        return cls(
            home=home,
            database_url=url,
            blobs=env.get("PINBENCH_BLOBS") or None,
            s3_endpoint=env.get("PINBENCH_S3_ENDPOINT") or None,
            cache_max=env.get("PINBENCH_CACHE_MAX") or None,
        )
