"""Wheels pinbench builds from a pinned source archive, once, kept in a cache (issue 87).

llama-cpp-python publishes no Linux wheel on PyPI, only its source archive (llama.cpp's C++
vendored inside). So its requirement is pinned by the archive's sha256 (the lock line of
``environments/llama-cpp-python.txt``), and the wheel is built here from those bytes:

- the archive is fetched from pip's own indexes (a find-links folder, else the index's simple
  API), its sha256 checked before anything reads it;
- the build runs in an environment of its own, built by uv from the hash-pinned build lock
  ``environments/builds/<name>.txt`` (the build backend, CMake and Ninja, each a pinned wheel),
  with the system's C and C++ compilers (``programs.system_program``: never one by PATH), the
  build's options (``SourceBuild.options``) and nothing else of this process's environment;
- the wheel and ``build.json`` (the archive's and the wheel's sha256, the options, the build
  lock's and the compilers' identities, the build's seconds) are kept under
  ``~/.cache/pinbench/wheels/<name>-<version>-<recipe>/`` (``PINBENCH_WHEEL_CACHE`` moves it),
  where ``recipe`` digests everything that makes the build. Later environments, the tests'
  and the venv runner's, install that wheel; nothing is built twice.

    python -m pinbench.environments.source_install   # into this interpreter's environment
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pinbench.errors import UserError
from pinbench.registry.lockfile import LockedEnvironment
from pinbench.registry.manifest import Requirement

CACHE_VARIABLE = "PINBENCH_WHEEL_CACHE"
RECORD = "build.json"
TIMEOUT_S = 3600
LAYOUT = 2
"""The kept source tree's record names this: trees kept before builds ran in a copy (their
libraries written into the tree) are unpacked again."""
Say = Callable[[str], None]
BuiltIn = Callable[[LockedEnvironment], tuple[str, str]]
"""Builds the environment a lock pins, once, and gives its interpreter and digest
(``venv.build_python``: the venv builder, which installs the wheels built here, passes itself
in)."""


@dataclass(frozen=True)
class SourceBuild:
    name: str
    version: str
    archive: str
    """The source archive's file name on the index."""
    sha256: str
    options: dict[str, str] = field(default_factory=dict)
    """The build's environment variables (the build's choices, recorded)."""
    minutes: int = 6
    """About how long it builds on two cores, said before it starts."""


SOURCE_BUILDS = {
    "llama-cpp-python": SourceBuild(
        name="llama-cpp-python",
        version="0.3.36",
        archive="llama_cpp_python-0.3.36.tar.gz",
        sha256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
        options={
            # this CPU's instructions (-march=native, as llama.cpp builds by default: a
            # portable build is plain x86-64, without the AVX2 or AVX-512 the other engines
            # choose at run time), so the recipe names the CPU's flags (``recipe``); no OpenMP
            # thread pool (the run's threads are llama.cpp's own n_threads); the library only
            "CMAKE_ARGS": "-DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF "
            "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF",
        },
    ),
}


class SourceBuildFailed(UserError):
    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(f"could not build {name} from its source archive: {reason}")
        self.name = name
        self.reason = reason


class WheelCacheRefused(UserError):
    def __init__(self, *, path: str, owner: int, mode: int) -> None:
        super().__init__(
            f"the wheel cache {path} belongs to uid {owner} with mode {mode:o}: only its own "
            f"user may write to it (a wheel kept there is installed; {CACHE_VARIABLE} moves it)"
        )
        self.path = path
        self.owner = owner
        self.mode = mode


@dataclass(frozen=True)
class BuiltWheel:
    path: Path
    record: dict[str, object]


def source_built(requirement: Requirement) -> bool:
    """Whether ``requirement`` pins the source archive of a wheel pinbench builds."""
    build = SOURCE_BUILDS.get(requirement.name)
    return (
        build is not None
        and requirement.version == build.version
        and requirement.hashes == [f"sha256:{build.sha256}"]
    )


def build_lock(name: str) -> Path:
    from pinbench.environments import LOCKS

    return LOCKS / "builds" / f"{name}.txt"


def compiler(name: str) -> dict[str, str]:
    """The system's compiler ``name`` (``gcc``, ``g++``): its path, sha256 and version."""
    from pinbench.programs import identity, system_program

    return identity(system_program(name)).to_json()


def compilers() -> dict[str, dict[str, str]]:
    """The system's C and C++ compilers the build uses, by their identities."""
    return {name: compiler(name) for name in ("gcc", "g++")}


def recipe(build: SourceBuild) -> str:
    """sha256 over everything that makes the wheel: the archive, the options, the build lock,
    the Python line, the machine and the compilers."""
    made_of = {
        "archive": build.sha256,
        "options": build.options,
        "build_lock": hashlib.sha256(build_lock(build.name).read_bytes()).hexdigest(),
        "python": ".".join(platform.python_version_tuple()[:2]),
        "machine": platform.machine(),
        "cpu_flags": cpu_flags(),
        "compilers": {k: v["sha256"] for k, v in compilers().items()},
    }
    return hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()


def cpu_flags() -> list[str]:
    """The CPU's instruction-set flags (``/proc/cpuinfo``), which a native build compiles for."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return sorted(set(line.partition(":")[2].split()))
    except OSError:
        pass
    return []


def cache_root() -> Path:
    """The wheel cache, made where missing; refused where another user than this one owns it
    or may write to it (a wheel kept there is installed, a script kept there run)."""
    from pinbench.config import env_folder

    root = env_folder(CACHE_VARIABLE, "~/.cache/pinbench/wheels")
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = root.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise WheelCacheRefused(path=str(root), owner=info.st_uid, mode=info.st_mode & 0o777)
    return root


def built_wheel(name: str, say: Say, built_in: BuiltIn) -> BuiltWheel:
    """``name``'s wheel, built from its pinned archive on first use (in the environment
    ``built_in`` gives) and kept after."""
    build = SOURCE_BUILDS[name]
    folder = cache_root() / f"{name}-{build.version}-{recipe(build)[:16]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        kept = _kept(folder, build)
        if kept is not None:
            return kept
        shutil.rmtree(folder, ignore_errors=True)
        with _work_folder(folder) as work:
            built = _build(build, work, say, built_in)
            os.replace(work, folder)
            os.mkdir(work)  # for the context's cleanup
        return BuiltWheel(folder / built.path.name, built.record)


@contextmanager
def _work_folder(folder: Path) -> Iterator[Path]:
    """A new folder beside ``folder`` to make it in (the caller moves it into place), with
    ``folder``'s lock held: the folders a killed maker left under the same name are removed
    first (no other process makes ``folder`` while the lock is held)."""
    prefix = f".{folder.name}-"
    for stale in folder.parent.glob(f"{prefix}*"):
        shutil.rmtree(stale, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=prefix) as work:
        yield Path(work)


def _kept(folder: Path, build: SourceBuild) -> BuiltWheel | None:
    """The wheel kept in ``folder`` where its record is ``build``'s and its bytes the
    record's."""
    try:
        record = json.loads((folder / RECORD).read_text())
        wheel = folder / record["wheel"]
        own = (record["archive_sha256"], record["options"], wheel.parent)
        if own != (build.sha256, build.options, folder) or wheel.is_symlink():
            return None
        if hashlib.sha256(wheel.read_bytes()).hexdigest() == record["wheel_sha256"]:
            return BuiltWheel(wheel, record)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _build(build: SourceBuild, work: Path, say: Say, built_in: BuiltIn) -> BuiltWheel:
    from pinbench.programs import clean_environment

    python, environment = built_in(build_environment(build))
    # a copy of the kept tree: the build writes into its source folder (llama-cpp-python's
    # CMake installs its libraries beside its Python files), the kept one stays the archive's
    source = work / "source"
    shutil.copytree(source_tree(build.name, say), source, symlinks=True)

    env = clean_environment() | build.options
    env |= {
        "PATH": f"{Path(python).parent}:{env['PATH']}",  # the build lock's cmake and ninja
        "CC": compiler("gcc")["path"],
        "CXX": compiler("g++")["path"],
        "CMAKE_BUILD_PARALLEL_LEVEL": str(len(os.sched_getaffinity(0))),
        "HOME": str(work),
        "TMPDIR": str(work),
    }
    out = work / "wheel"
    out.mkdir()
    say(
        f"building {build.name} {build.version} from its source archive (about "
        f"{build.minutes} min on two cores, once; kept in {cache_root()})"
    )
    started = time.monotonic()
    code = "import sys; from scikit_build_core.build import build_wheel as b; b(sys.argv[1])"
    with open(work / "build.log", "w") as log:
        proc = subprocess.Popen(
            [python, "-c", code, str(out)],
            cwd=source,
            env=env,
            stdout=log,
            stderr=log,
            start_new_session=True,  # its compilers end with it (``os.killpg``)
        )
        while proc.poll() is None:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed > TIMEOUT_S:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    raise SourceBuildFailed(
                        name=build.name, reason=f"still building after {TIMEOUT_S} s"
                    ) from None
                say(f"  still building {build.name} ({elapsed / 60:.0f} min)")
    seconds = time.monotonic() - started
    wheels = list(out.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        tail = (work / "build.log").read_text(errors="replace").strip().splitlines()[-8:]
        raise SourceBuildFailed(
            name=build.name, reason=f"exit status {proc.returncode}: " + " | ".join(tail)
        )
    wheel = work / wheels[0].name
    wheels[0].rename(wheel)
    shutil.rmtree(out)
    shutil.rmtree(source)
    record: dict[str, object] = {
        "name": build.name,
        "version": build.version,
        "archive": build.archive,
        "archive_sha256": build.sha256,
        "options": build.options,
        "build_environment": environment,
        "compilers": compilers(),
        "cpu_flags": cpu_flags(),
        "wheel": wheel.name,
        "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "seconds": round(seconds, 1),
    }
    (work / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    say(f"built {wheel.name} in {seconds / 60:.1f} min")
    return BuiltWheel(wheel, record)


def build_environment(build: SourceBuild) -> LockedEnvironment:
    """The environment ``build`` runs in: its build lock's wheels."""
    from pinbench.environments import parse_lock
    from pinbench.registry.manifest_parts import Platform

    return LockedEnvironment(
        framework=f"build-{build.name}",
        version=build.version,
        platform=Platform(),
        image=None,
        requirements=parse_lock(build_lock(build.name).read_text(encoding="utf-8")),
        python=".".join(platform.python_version_tuple()[:2]),
    )


def source_tree(name: str, say: Say) -> Path:
    """``name``'s pinned source archive unpacked (its one top folder), once, kept beside its
    wheels: the catalog runs a converter script it holds (llama.cpp's ``convert_hf_to_gguf``)."""
    from pinbench.environments.source_archive import fetch, unpack

    build = SOURCE_BUILDS[name]
    folder = cache_root() / f"{name}-{build.version}-source-{build.sha256[:16]}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            record = json.loads((folder / RECORD).read_text())
            kept = (record["archive_sha256"], record.get("layout")) == (build.sha256, LAYOUT)
        except (OSError, ValueError, KeyError, TypeError):
            kept = False
        if not kept:
            shutil.rmtree(folder, ignore_errors=True)
            with _work_folder(folder) as work:
                archive = fetch(build.archive, build.name, build.sha256, work, say)
                top = unpack(archive, work / "tree")
                archive.unlink()
                record = {
                    "archive": build.archive,
                    "archive_sha256": build.sha256,
                    "top": top.name,
                    "layout": LAYOUT,
                }
                (work / RECORD).write_text(json.dumps(record, indent=1) + "\n")
                os.replace(work, folder)
                os.mkdir(work)  # for the context's cleanup
        top = json.loads((folder / RECORD).read_text())["top"]
    return folder / "tree" / str(top)
