"""Hash-pinned evaluation environments: each framework's requirements lock (shipped here as
``<framework>.txt``, written by ``scripts/lock_environments.py``) and the digest that names an
environment built from one."""

from __future__ import annotations

from pathlib import Path

import msgspec

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.registry.lockfile import LockedEnvironment
from pinbench.registry.manifest import Requirement

LOCKS = Path(__file__).resolve().parent


class NoRequirementsLock(UserError):
    def __init__(self, *, framework: str) -> None:
        known = ", ".join(sorted(p.stem for p in LOCKS.glob("*.txt")))
        super().__init__(f"no requirements lock for framework {framework!r} (have: {known})")
        self.framework = framework


def lock_path(framework: str) -> Path:
    path = LOCKS / f"{framework}.txt"
    if not path.is_file():
        raise NoRequirementsLock(framework=framework)
    return path


def parse_lock(text: str) -> list[Requirement]:
    """``name==version --hash=sha256:HEX`` lines (comments and blank lines ignored)."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec, *options = line.split()
        name, _, version = spec.partition("==")
        hashes = [o.removeprefix("--hash=") for o in options if o.startswith("--hash=")]
        out.append(Requirement(name=name, version=version, hashes=hashes))
    return out


def requirements_for(framework: str) -> list[Requirement]:
    return parse_lock(lock_path(framework).read_text(encoding="utf-8"))


def requirements_text(requirements: list[Requirement]) -> str:
    """The pip/uv requirements file for a pinned set (``--require-hashes`` form)."""
    lines = []
    for r in sorted(requirements, key=lambda r: r.name):
        hashes = " ".join(f"--hash={h}" for h in r.hashes)
        lines.append(f"{r.name}=={r.version} {hashes}")
    return "\n".join(lines) + "\n"


def environment_digest(env: LockedEnvironment) -> str:
    """sha256 over what makes the environment: Python line, platform and the pinned set."""
    data = {
        "python": env.python,
        "platform": msgspec.to_builtins(env.platform),
        "requirements": sorted(
            (msgspec.to_builtins(r) for r in env.requirements), key=lambda r: r["name"]
        ),
    }
    return Digest.of_bytes(canonical_json(data)).hex
