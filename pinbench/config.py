"""Where pinbench keeps its state: ``PINBENCH_HOME``, ``PINBENCH_DATABASE_URL`` and, when the
blobs are in object storage, ``PINBENCH_BLOBS`` and ``PINBENCH_S3_ENDPOINT``."""

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
        )
