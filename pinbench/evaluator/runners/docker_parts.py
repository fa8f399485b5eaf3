"""What every evaluator container gets, cold or warm (``docker``, ``docker_warm``): where its
files are seen, its confinement, how its files are linked in, and what a container killed
for memory says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.errors import UserError
from pinbench.evaluator.runners.store_files import model_folder, stage_folders, store_paths
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.job import ROLES
from pinbench.worker.model_folder import link_or_copy
from pinbench.workspace import Workspace

IN = "/pinbench"
NOBODY = "65534:65534"
TMPFS = "rw,nosuid,nodev,size=256m,mode=1777"


class OutOfMemory(UserError):
    def __init__(self, *, memory_mb: int) -> None:
        super().__init__(
            f"the container exceeded its memory limit ({memory_mb} MiB, limits.memory_mb in the "
            "lockfile) and was killed"
        )
        self.memory_mb = memory_mb


Inside = dict[str, dict[str, str]]


def link_files(ws: Workspace, lock: Lockfile, files: Path, inside_at: str) -> Inside:
    """Link the pinned files into ``files`` (seen in the container at ``inside_at``): the
    model's at their artifact paths in a folder of their own (``files/model``, where it is
    loaded from), the datasets' as numbered files."""
    inside: Inside = {}
    for role in ROLES:
        folder = files / role
        if role == "model":
            placed = model_folder(ws, lock, folder)
            inside[role] = {path: f"{inside_at}/{role}/{path}" for path in placed}
            continue
        inside[role] = {}
        folder.mkdir(parents=True)
        for i, (path, host) in enumerate(sorted(store_paths(ws, lock, role).items())):
            link_or_copy(host, folder / str(i))
            inside[role][path] = f"{inside_at}/{role}/{i}"
        folder.chmod(0o755)
    files.chmod(0o755)
    return inside


def link_stages(ws: Workspace, lock: Lockfile, files: Path, inside_at: str) -> Inside:
    """A chain's stages' files (``stage_folders``), each stage's in ``files/stages/<name>``;
    where each file is seen in the container, by stage name. None without a chain."""
    placed = stage_folders(ws, lock, files / "stages")
    if placed:
        (files / "stages").chmod(0o755)
    return {
        name: {path: f"{inside_at}/stages/{name}/{path}" for path in paths}
        for name, paths in placed.items()
    }


def confined(lock: Lockfile) -> dict[str, Any]:
    """What every evaluator container gets: no network, a read-only root, nobody, no
    capabilities, no new privileges, and the lockfile's memory and CPU limits."""
    limits = lock.body.limits
    return {
        "network_mode": "none",
        "read_only": True,
        "user": NOBODY,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "tmpfs": {"/tmp": TMPFS},
        "mem_limit": f"{limits.memory_mb}m",
        "memswap_limit": f"{limits.memory_mb}m",
        "nano_cpus": int(limits.cpus * 1e9) if limits.cpus else None,
        "pids_limit": 512,
    }
