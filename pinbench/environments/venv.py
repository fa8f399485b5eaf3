"""Virtual environments built by uv from a hash-pinned requirements set, cached by digest.

uv does not read pip's configuration, so the index settings pip uses here (``pip config
list``: index-url, extra-index-url, find-links) are passed to uv explicitly, with
``--index-strategy unsafe-best-match`` so a wheel in a local folder or extra index is found.
Every package is installed with ``--require-hashes --no-deps --only-binary :all:``: exactly the
pinned wheels, nothing resolved, nothing built; with their bytecode compiled, as pip compiles
it, so that a worker which may not write ``.pyc`` files does not compile its imports at each
start (issue 49: 0.5 s of CPU per start in the ONNX Runtime environment).
"""

from __future__ import annotations

import fcntl
import hashlib
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from pinbench.environments import environment_digest, requirements_text
from pinbench.environments.uv_tools import build_env, pip_index_args, uv_binary
from pinbench.errors import UserError
from pinbench.registry.lockfile import LockedEnvironment
from pinbench.registry.manifest import Requirement

COMPLETE = ".pinbench-complete"
BUILT_AS = "files copied (uv --link-mode copy)"
"""How an environment's files were placed, written in ``COMPLETE`` after its digest: each file
its own copy. uv links files from its cache by default (hard links on Linux): one inode was then
shared by uv's cache and every environment holding the wheel, so a run's code that changed a
file of its environment changed it in all of them and in the wheels uv installs next (issue 63).
An environment built otherwise (before this) is built again."""
Say = Callable[[str], None]


class EnvironmentBuildFailed(UserError):
    def __init__(self, *, digest: str, reason: str) -> None:
        super().__init__(f"could not build environment {digest[:12]}: {reason}")
        self.digest = digest
        self.reason = reason


@dataclass(frozen=True, slots=True)
class VirtualEnv:
    path: Path
    digest: str
    built: bool
    """True when this call built it, False when it came from the cache."""

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def base_python(wanted: str | None) -> str:
    """An interpreter of the Python line the environment pins (``3.11``): this one if it
    matches, else the system's ``python3.11`` (``pinbench.programs``: never one by PATH)."""
    from pinbench.programs import ProgramUnavailable, system_program

    here = platform.python_version()
    if wanted is None or here == wanted or here.startswith(wanted + "."):
        return sys.executable
    try:
        return str(system_program(f"python{wanted}"))
    except ProgramUnavailable as exc:
        raise UserError(
            f"the environment pins Python {wanted}; this one is {here}, and python{wanted} is "
            f"{exc.reason}"
        ) from None


def materialise(
    cache: Path, env: LockedEnvironment, say: Say, own: list[Requirement] | None = None
) -> VirtualEnv:
    """The environment for ``env``, built once under ``cache/<digest>`` and reused after;
    with ``own``, a model's own requirements beside the framework's (``model_wheels``: read
    before they are installed), the digest naming both."""
    if not env.requirements:
        raise UserError(
            f"the lockfile pins no requirements for {env.framework} {env.version}, "
            "so there is nothing to build a virtual environment from"
        )
    framework = env
    if own:
        env = msgspec.structs.replace(env, requirements=[*env.requirements, *own])
    digest = environment_digest(env)
    built_as = _built_as(env)
    marker = f"{digest}\n{built_as}\n"
    # named by the lock's digest; where pinbench builds a wheel of it, by the recipe too: an
    # environment in use is never made again in its place for another compiler or CPU
    name = digest if built_as == BUILT_AS else hashlib.sha256(marker.encode()).hexdigest()
    path = cache / name[:32]
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{name[:32]}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if _complete(path, marker):
            return VirtualEnv(path, digest, built=False)
        shutil.rmtree(path, ignore_errors=True)
        say(f"building environment {digest[:12]} ({len(env.requirements)} pinned wheels, uv)")
        started = time.monotonic()
        _build(path, framework, digest, own or [], say)
        (path / COMPLETE).write_text(marker)
        say(f"environment {digest[:12]} ready in {time.monotonic() - started:.1f} s")
        return VirtualEnv(path, digest, built=True)


def build_python(say: Say) -> Callable[[LockedEnvironment], tuple[str, str]]:
    """A source build's environment (``source_builds.BuiltIn``): built here, under the wheel
    cache, once."""
    from pinbench.environments.source_builds import cache_root

    def built(env: LockedEnvironment) -> tuple[str, str]:
        made = materialise(cache_root() / "build-environments", env, say)
        return str(made.python), made.digest

    return built


def _built_as(env: LockedEnvironment) -> str:
    """How the environment is made, as its marker says: its files copied, and each wheel that
    pinbench builds from a pinned source archive by the recipe that builds it here
    (``source_builds.recipe``): another compiler or CPU makes the environment again, with the
    wheel built for it, where the lock alone would keep the old one."""
    from pinbench.environments.source_builds import SOURCE_BUILDS, recipe, source_built

    built = [
        f"{r.name}: recipe {recipe(SOURCE_BUILDS[r.name])}"
        for r in env.requirements
        if source_built(r)
    ]
    return "\n".join([BUILT_AS, *built])


def _complete(path: Path, marker: str) -> bool:
    try:
        return (path / COMPLETE).read_text() == marker
    except (OSError, UnicodeDecodeError):
        return False


def _build(
    path: Path, env: LockedEnvironment, digest: str, own: list[Requirement], say: Say
) -> None:
    """The framework's wheels installed, then those pinbench builds from a pinned source
    archive (``source_builds``: the lock pins the archive), then the model's own (``own``),
    each read first."""
    import tempfile

    from pinbench.environments.source_builds import built_wheel, source_built

    uv = uv_binary()
    built = [r for r in env.requirements if source_built(r)]
    requirements = path.parent / f"{path.name}.requirements.txt"
    requirements.write_text(requirements_text([r for r in env.requirements if r not in built]))
    install = [
        uv, "pip", "install", "--quiet", "--no-config",
        "--python", str(path / "bin" / "python"),
        "--require-hashes", "--no-deps", "--only-binary", ":all:",
        "--index-strategy", "unsafe-best-match", "--compile-bytecode",
        "--link-mode", "copy",
    ]  # fmt: skip
    _step(path, digest, [uv, "venv", "--quiet", "--no-config", "--python",
                         base_python(env.python), str(path)])  # fmt: skip
    _step(path, digest, [*install, *pip_index_args(), "-r", str(requirements)])
    for requirement in built:  # its wheel's sha256 is in the build's record, not the lock
        wheel = built_wheel(requirement.name, say, build_python(say)).path
        _step(path, digest, [*install[:7], "--no-deps", "--no-index", "--link-mode", "copy",
                             "--compile-bytecode", str(wheel)])  # fmt: skip
    if not own:
        return
    from pinbench.environments.model_wheels import check_beside, download, top_level

    theirs = path.parent / f"{path.name}.model-requirements.txt"
    theirs.write_text(requirements_text(own))
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".wheels-") as folder:
        try:
            wheels = download(theirs, Path(folder), build_env())
            for wheel in wheels:
                top_level(wheel)  # refused before anything of it is installed
            site = next((path / "lib").glob("python*/site-packages"))
            check_beside(wheels, site)
        except UserError:
            shutil.rmtree(path, ignore_errors=True)
            raise
        local = ["--no-index", "--find-links", folder]
        _step(path, digest, [*install, *local, "-r", str(theirs)])


def _step(path: Path, digest: str, argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=build_env())
    if proc.returncode != 0:
        shutil.rmtree(path, ignore_errors=True)
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
        raise EnvironmentBuildFailed(digest=digest, reason=f"{argv[1]} failed:\n{tail}")
