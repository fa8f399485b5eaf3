"""Where pinbench keeps its state: ``PINBENCH_HOME`` and ``PINBENCH_DATABASE_URL``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    database_url: str

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        home = Path(
            env.get("PINBENCH_HOME") or Path.home() / ".local" / "share" / "pinbench"
        ).expanduser()
        url = env.get("PINBENCH_DATABASE_URL") or f"sqlite:///{home.resolve() / 'pinbench.db'}"
        return cls(home=home, database_url=url)
