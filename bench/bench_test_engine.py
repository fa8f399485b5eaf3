"""The test suite's Docker Engine: vfs on disk (before issue 49) against overlay2 on a tmpfs
(now), timing what ``tests/test_runners.py``'s ``stack`` fixture does, then the teardown.

Each configuration starts a private ``dockerd`` (``tests/services.py``), publishes the
digits catalog into a fresh home, imports the base image from a kept root file system
(``--rootfs DIR``; debootstrapped into it on first use), builds the onnxruntime and torch
images, creates and removes one container of the torch image, and stops the engine. Prints
each phase's seconds and the ratio vfs/overlay2 per phase. Needs root, Debian's docker.io and
debootstrap, as ``make test`` installs them; takes about ten minutes on a quiet two-core machine.

Run: ``.venv/bin/python -m bench.bench_test_engine [--rootfs DIR]`` from the repository root.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def _engine(layout: str) -> Iterator[str]:
    """``layout``: ``vfs-disk`` (the old engine) or ``overlay2-tmpfs`` (the tests' now)."""
    import tests.services as services

    if layout == "overlay2-tmpfs":
        with services.docker_engine() as host:
            yield host
        return
    saved = (services._memory_backed, services.storage_driver)
    services._memory_backed = lambda folder: None
    services.storage_driver = lambda folder: "vfs"
    try:
        with services.docker_engine() as host:
            yield host
    finally:
        services._memory_backed, services.storage_driver = saved


def measure(layout: str, rootfs: Path) -> dict[str, float]:
    from pinbench import catalog as builtin
    from pinbench.catalog import frameworks
    from pinbench.config import Settings
    from pinbench.images.base import ensure_base
    from pinbench.images.build import build_image
    from pinbench.images.engine import connect
    from pinbench.registry.manifest import load_manifest
    from pinbench.registry.publish import publish
    from pinbench.workspace import Workspace

    def quiet(_: str) -> None:
        pass

    times: dict[str, float] = {}
    root = Path(tempfile.mkdtemp(prefix="bench-engine-"))
    engine = _engine(layout)
    host = engine.__enter__()
    try:
        os.environ["DOCKER_HOST"] = host
        ws = Workspace(Settings(home=root / "home", database_url=f"sqlite:///{root}/db"))
        ws.init()
        (ws.settings.home / "tmp").mkdir(parents=True, exist_ok=True)
        catalog = root / "cat"
        for path in [*builtin.build(catalog).manifests, frameworks.write(catalog, "torch")]:
            publish(ws, load_manifest(path), manifest_dir=catalog, publisher="bench")
        client: Any = connect()
        started = time.monotonic()
        base = ensure_base(client, rootfs, quiet)
        times["base"] = time.monotonic() - started
        images = {}
        for fw in ("onnxruntime", "torch"):
            started = time.monotonic()
            images[fw] = build_image(ws, client, fw, base, quiet).digest
            times[fw] = time.monotonic() - started
        started = time.monotonic()
        client.containers.create(images["torch"], command=["-c", "pass"]).remove()
        times["container"] = time.monotonic() - started
        ws.close()
    finally:
        started = time.monotonic()
        engine.__exit__(None, None, None)
        times["teardown"] = time.monotonic() - started
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path.home() / ".cache" / "pinbench-tests" / "rootfs" / "bench"
    parser.add_argument("--rootfs", type=Path, default=default)
    args = parser.parse_args()
    args.rootfs.mkdir(parents=True, exist_ok=True)
    results = {layout: measure(layout, args.rootfs) for layout in ("vfs-disk", "overlay2-tmpfs")}
    print(f"{'phase':<10} {'vfs-disk s':>11} {'overlay2-tmpfs s':>17} {'ratio':>7}")
    for phase in results["vfs-disk"]:
        old, new = results["vfs-disk"][phase], results["overlay2-tmpfs"][phase]
        print(f"{phase:<10} {old:>11.1f} {new:>17.1f} {old / new:>7.1f}")


if __name__ == "__main__":
    main()
