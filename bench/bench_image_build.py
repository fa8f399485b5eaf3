"""How long ``pinbench images build`` takes to build a framework image: the Dockerfile build it
replaced (decision 34's multi-stage recipe, kept here verbatim as the baseline) against a
container of the base committed as the image (``pinbench.images.build``, decision 269).

One private ``dockerd`` (``tests/services.py``: overlay2 on a tmpfs where it mounts) and one
build context (the framework's pinned wheels, downloaded once, and the evaluator's source) for
both ways; the base image is imported from the tests' cached root file system. The two ways
alternate round by round; each image is removed after its round, and the Dockerfile is built
with ``nocache``, so every build starts from the base. Printed: each build's wall time and
image size, the median of ``--rounds`` rounds both ways and the ratio. The engine's and the
build container's CPU are not this process's, so wall time on a quiet machine is the measure.
Needs root, Debian's docker.io and debootstrap, as ``make test`` installs them.

Run: ``.venv/bin/python -m bench.bench_image_build [--framework torch] [--rounds 3]`` from the
repository root.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

DOCKERFILE = """\
ARG BASE
FROM ${BASE} AS build
COPY . /build
RUN python3 -m venv /opt/pinbench/venv \\
 && /opt/pinbench/venv/bin/python -m pip install --no-index --find-links /build/wheels \\
      --require-hashes --no-deps --only-binary :all: --quiet --disable-pip-version-check \\
      -r /build/requirements.txt \\
 && /opt/pinbench/venv/bin/python -m pip uninstall --yes --quiet pip setuptools \\
 && mv /build/evaluator /opt/pinbench/lib \\
 && /opt/pinbench/venv/bin/python -m compileall -q /opt/pinbench/lib

FROM ${BASE}
ENV PYTHONPATH=/opt/pinbench/lib \\
    PYTHONNOUSERSITE=1 \\
    PYTHONDONTWRITEBYTECODE=1 \\
    HOME=/tmp \\
    TF_CPP_MIN_LOG_LEVEL=2
USER 65534:65534
WORKDIR /tmp
ENTRYPOINT ["/opt/pinbench/venv/bin/python", "-s", "-m", "pinbench.worker.main"]
COPY --from=build /opt/pinbench /opt/pinbench
"""
"""The recipe ``pinbench/images/Dockerfile`` held until decision 269."""


def _quiet(_: str) -> None:
    pass


def _dockerfile_build(client: Any, context: Path, base: str) -> str:
    (context / "Dockerfile").write_text(DOCKERFILE)
    try:
        image, _ = client.images.build(
            path=str(context), buildargs={"BASE": base}, tag="bench/dockerfile:build",
            rm=True, forcerm=True, network_mode="none", pull=False, nocache=True,
        )  # fmt: skip
    finally:
        (context / "Dockerfile").unlink()
    return str(image.id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", default="torch", choices=["onnxruntime", "torch"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from filelock import FileLock

    from pinbench.environments import lock_path, parse_lock
    from pinbench.images import build
    from pinbench.images.base import ensure_base
    from pinbench.images.engine import connect
    from tests.services import docker_engine, rootfs_cache

    times: dict[str, list[float]] = {"dockerfile": [], "commit": []}
    with tempfile.TemporaryDirectory(prefix="bench-image-") as tmp, docker_engine() as host:
        os.environ["DOCKER_HOST"] = host
        client = connect()
        cache = rootfs_cache()
        with FileLock(str(cache / "lock")):
            base = ensure_base(client, cache, _quiet)
        context = Path(tmp) / "context"
        context.mkdir()
        requirements = parse_lock(lock_path(args.framework).read_text(encoding="utf-8"))
        build._context(context, args.framework, requirements, Path(tmp) / "wheelhouse", _quiet)

        def once(way: str) -> None:
            started = time.monotonic()
            if way == "dockerfile":
                digest = _dockerfile_build(client, context, base)
            else:
                digest = build._docker_build(
                    client, context, base, "bench/commit:build", args.framework, _quiet
                )
            seconds = time.monotonic() - started
            size = int(client.images.get(digest).attrs.get("Size", 0))
            client.images.remove(digest, force=True)
            times[way].append(seconds)
            print(f"{way:10s} {seconds:6.1f} s  {size / 2**20:6.0f} MiB", flush=True)

        for r in range(args.rounds):
            for way in ("dockerfile", "commit") if r % 2 == 0 else ("commit", "dockerfile"):
                once(way)
    old = statistics.median(times["dockerfile"])
    new = statistics.median(times["commit"])
    print(f"the {args.framework} image, median of {args.rounds}:")
    print(f"  Dockerfile, multi-stage (baseline): {old:6.1f} s")
    print(f"  a container committed:              {new:6.1f} s")
    print(f"  ratio committed / Dockerfile:       {new / old:6.3f}")


if __name__ == "__main__":
    main()
