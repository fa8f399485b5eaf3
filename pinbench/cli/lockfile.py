"""``pinbench lockfile``: lockfiles made elsewhere. ``import`` adopts the artifacts a lockfile
pins from another pinbench registry, deliberately (``pinbench.registry.adopt``)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import click

from pinbench.console import err, json_option, out, print_json

lockfile_app = click.Group(
    "lockfile",
    help="Lockfiles made elsewhere: import the artifacts they pin from another registry.",
    no_args_is_help=True,
)


def _token_for(url: str) -> str | None:
    """PINBENCH_FROM_TOKEN; PINBENCH_TOKEN only for the server PINBENCH_URL names (a token
    is never sent to a server it was not made for)."""
    own = os.environ.get("PINBENCH_URL", "").rstrip("/")
    if os.environ.get("PINBENCH_FROM_TOKEN"):
        return os.environ["PINBENCH_FROM_TOKEN"]
    if own and own == url.rstrip("/"):
        return os.environ.get("PINBENCH_TOKEN") or None
    return None


@lockfile_app.command("import")
@click.argument(
    "lockfile", type=click.Path(path_type=Path), help="A lockfile made by another registry."
)
@click.option(
    "--from",
    "from_url",
    type=str,
    required=True,
    help=(
        "The pinbench server that holds its artifacts. Sent as its "
        "token: PINBENCH_FROM_TOKEN, or PINBENCH_TOKEN when URL is "
        "PINBENCH_URL."
    ),
)
@click.option(
    "--publisher", "publisher", type=str, help="Recorded as the publisher here (default: you)."
)
@json_option
def import_(
    lockfile: Path,
    from_url: str,
    publisher: str | None = None,
    as_json: bool = False,
) -> None:
    """Trust another registry for exactly the versions LOCKFILE pins, and publish them here.

    A lockfile runs only against the registry that holds what it pins: one made elsewhere is
    refused ("not published here"). Importing is your decision to adopt those versions. Each
    manifest is read from --from and must hash to the lockfile's pinned digest; every file's
    bytes must hash to their sha256; the lockfile must then re-derive byte for byte from the
    adopted manifests. Only then is anything published; otherwise nothing is. A pickled model
    (torch-pickle) still runs only with `pinbench run --allow-pickle`.
    """
    from pinbench.sdk.registry import Registry

    with Registry() as reg:  # this machine's registry, PINBENCH_URL or not
        lock = reg.lockfile(lockfile)
        adopted = reg.adopt(
            lock, from_url, token=_token_for(from_url), publisher=publisher or getpass.getuser()
        )
    if as_json:
        print_json(
            {
                "lockfile": lock.digest,
                "artifacts": [
                    {"ref": a.ref, "created": a.created, "format": a.format} for a in adopted
                ],
            }
        )
        return
    for a in adopted:
        out().print(f"{'imported' if a.created else 'already here'}  {a.ref}")
        if a.format == "torch-pickle":
            err().print(
                f"{a.ref} is a pickle: it runs only with `pinbench run --allow-pickle`, "
                "and only if you trust its publisher"
            )
    out().print(f"lockfile {lock.digest[:12]} now verifies here: pinbench verify {lockfile}")
