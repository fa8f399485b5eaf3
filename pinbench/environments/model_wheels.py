"""A model's own requirements, checked as data before they join its environment (issue 73,
item 8; ``registry.model_requirements``).

A framework's requirements are the registry's; a model's are its publisher's, so their wheels
are read before anything of them is installed or run. Each is downloaded by pip (hash-pinned,
``--no-deps --only-binary :all:``: nothing built, nothing run) and its archive's names are
read: a wheel is refused when it would run at an interpreter's start or write outside its own
packages — a top-level ``.pth`` file, ``sitecustomize``/``usercustomize``, anything under its
``.data`` folder (scripts, headers, data: files placed anywhere in the environment, its
``pyvenv.cfg`` included), a module named as one of Python's own, a name that is not a plain
relative path — and, once the framework's wheels are installed, when a top-level name it
installs is already there (a model's wheel may not replace the framework's files: one version
of each package, the registry's). Only then are the same files installed, from that folder,
with no index. uv and pip run with their own settings alone (``uv_tools.build_env``).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

from pinbench.errors import UserError

STARTUP = frozenset({"sitecustomize", "usercustomize"})
"""Modules an interpreter imports as it starts, where found."""


class ModelWheelRefused(UserError):
    """A wheel of a model's own requirements that could run or replace what is not its own."""

    def __init__(self, *, wheel: str, reason: str) -> None:
        super().__init__(f"the model's requirement {wheel} is refused: {reason}")
        self.wheel = wheel
        self.reason = reason


def download(requirements: Path, into: Path, env: dict[str, str]) -> list[Path]:
    """The wheels of ``requirements`` (``name==version --hash=...`` lines) fetched by pip into
    ``into`` (its own index settings), hash-checked; raises ``UserError`` with pip's words."""
    argv = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--only-binary", ":all:", "--require-hashes",
        "-r", str(requirements), "-d", str(into),
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
        raise UserError(f"could not fetch the model's requirements:\n{tail}")
    return sorted(into.glob("*.whl"))


def top_level(wheel: Path) -> set[str]:
    """The top-level names ``wheel`` installs beside its own ``.dist-info`` (a package's
    folder, a module's file), each read from the archive's names; refused as
    ``ModelWheelRefused`` where one could run at start-up or land outside site-packages."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelWheelRefused(wheel=wheel.name, reason=f"not a wheel: {exc}") from None
    found: set[str] = set()
    for name in names:
        path = PurePosixPath(name)
        if name.startswith("/") or "\\" in name or ".." in path.parts or not path.parts:
            raise ModelWheelRefused(wheel=wheel.name, reason=f"{name[:200]!r} is not a plain path")
        first = path.parts[0]
        if first.endswith(".dist-info"):
            continue
        if first.endswith(".data"):
            raise ModelWheelRefused(
                wheel=wheel.name,
                reason=f"{name[:200]!r} is under its .data folder, which places files "
                "anywhere in the environment (scripts, headers, data)",
            )
        if len(path.parts) == 1 and first.endswith(".pth"):
            raise ModelWheelRefused(
                wheel=wheel.name, reason=f"{first[:200]!r} is a .pth file, run at every start"
            )
        module = first.removesuffix(".py").split(".")[0]
        if module.lower() in STARTUP:
            raise ModelWheelRefused(
                wheel=wheel.name, reason=f"{first[:200]!r} is imported at every start"
            )
        if module in sys.stdlib_module_names:
            raise ModelWheelRefused(
                wheel=wheel.name, reason=f"{first[:200]!r} has the name of Python's own {module}"
            )
        found.add(first)
    return found


def check_beside(wheels: list[Path], site_packages: Path) -> None:
    """No top-level name of the model's wheels is already in ``site_packages`` (the
    framework's): refused naming it."""
    present = {p.name.lower() for p in site_packages.iterdir()}
    for wheel in wheels:
        clash = sorted(n for n in top_level(wheel) if n.lower() in present)
        if clash:
            raise ModelWheelRefused(
                wheel=wheel.name,
                reason=f"it installs {', '.join(clash[:5])}, which the framework's environment "
                "has: a model's requirement may not replace the framework's files",
            )
