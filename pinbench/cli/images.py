"""``pinbench images``: framework images for ``--runner docker`` (build, push, pull). The
Docker client and the image builder are imported by the command that uses them."""

from __future__ import annotations

import click

from pinbench.cli.common import listed, local_registry, progress_lines
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

images_app = click.Group(
    "images",
    help="Framework images for --runner docker: build (and publish), push, pull.",
    no_args_is_help=True,
)


@images_app.command("build")
@click.argument(
    "frameworks",
    type=str,
    nargs=-1,
    required=False,
    callback=listed,
    help=("Frameworks to build: onnxruntime, torch, tensorflow (default: all)."),
)
@click.option(
    "--base",
    "base",
    type=str,
    help=(
        "Base image with CPython 3.11 (e.g. "
        "python:3.11-slim@sha256:...). Default: Debian bookworm built "
        "here with debootstrap and imported (needs root)."
    ),
)
@json_option
def images_build(
    frameworks: list[str] | None = None,
    base: str | None = None,
    as_json: bool = False,
) -> None:
    """Build each framework's evaluation image and publish it as an image artifact.

    Needs a Docker Engine (DOCKER_HOST). The wheels are downloaded on the host by pip from the
    framework's hash-pinned lock; the build itself has no network. An image already published
    for the same requirements, evaluator code and base is reused. Lock requests again after
    building: new lockfiles pin the image's digest.
    """
    from rich.table import Table

    say = progress_lines(quiet=as_json)
    with local_registry() as reg:
        built = reg.images().build(frameworks or (), base=base, say=say)
    if as_json:
        _print_json(
            [
                {
                    "framework": b.framework,
                    "artifact": b.ref,
                    "digest": b.digest,
                    "size_bytes": b.size,
                    "reused": b.reused,
                }
                for b in built
            ]
        )
        return
    table = Table("framework", "image artifact", "digest", "size", "")
    for b in built:
        table.add_row(
            b.framework,
            b.ref,
            b.digest[7:19],
            f"{b.size / 2**20:,.0f} MiB",
            "reused" if b.reused else "built",
        )
    _out().print(table)


_registry_option = click.option(
    "--registry",
    "registry",
    type=str,
    required=True,
    show_default=False,
    help="Registry HOST:PORT, e.g. 127.0.0.1:5000.",
)

_image_argument = click.argument("image", type=str, help="An image artifact, image/NAME@VERSION.")


@images_app.command("push")
@_image_argument
@_registry_option
@json_option
def images_push(
    image: str,
    registry: str,
    as_json: bool = False,
) -> None:
    """Push an image artifact to a registry as REGISTRY/NAME:VERSION; print its digest there."""
    with local_registry() as reg:
        done = reg.images().push(image, registry)
    if as_json:
        _print_json({"reference": done.reference, "image_id": done.image_id})
        return
    _out().print(f"pushed {done.reference} (image {done.image_id[7:19]})")


@images_app.command("pull")
@_image_argument
@_registry_option
@json_option
def images_pull(
    image: str,
    registry: str,
    as_json: bool = False,
) -> None:
    """Pull an image artifact from a registry by digest.

    It is refused unless its image ID is the artifact's pinned digest."""
    with local_registry() as reg:
        done = reg.images().pull(image, registry)
    if as_json:
        _print_json({"reference": done.reference, "image_id": done.image_id})
        return
    _out().print(f"pulled {done.reference} (image {done.image_id[7:19]}, as pinned)")
