"""``pinbench verify`` and ``pinbench digest``: bytes checked against their sha256, on this
machine's store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from pinbench.cli.common import listed, local_registry, lockfile_argument, progress_bars
from pinbench.console import err as _err
from pinbench.console import json_option
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError


@click.command("verify")
@lockfile_argument
@click.option(
    "--rehash",
    "rehash",
    is_flag=True,
    default=False,
    help=("Read every file's bytes again, ignoring the verified-state cache."),
)
@json_option
def verify(
    lockfile: Path,
    rehash: bool = False,
    as_json: bool = False,
) -> None:
    """Check every byte the lockfile pins against its sha256.

    Files unchanged since they were last hashed are not read again; --rehash reads them all.

    First the lockfile itself is checked against this registry: every section is re-derived
    from the manifests it pins and must be identical (a field that differs is named); an
    artifact not published here is refused (adopt it deliberately with `pinbench lockfile
    import LOCKFILE --from URL`). A file missing from the store is fetched from its pinned
    source (https://, or hf:// and dvc:// at the commit the lockfile names) and kept only if
    it matches the pin.
    """
    from pinbench.sdk.errors import VerificationFailed

    with local_registry() as reg, progress_bars() as progress:  # PINBENCH_URL or not
        lock = reg.lockfile(lockfile)
        try:
            checks = lock.verify(
                progress=progress, say=lambda text: _err().print(text), rehash=rehash
            )
        except VerificationFailed as exc:
            if as_json:
                failures = [c.error for c in exc.failures]
                _print_json({"digest": lock.digest, "ok": False, "failures": failures})
            raise
    if as_json:
        _print_json({"digest": lock.digest, "ok": True, "checked": len(checks)})
    else:
        nbytes = sum(c.size for c in checks)  # one plain line: Rich is not imported for it
        sys.stdout.write(
            f"verified lockfile {lock.digest[:12]}: {len(checks)} item(s), {nbytes} bytes, "
            "all match\n"
        )


@click.command("digest")
@click.argument(
    "files",
    type=click.Path(path_type=Path),
    nargs=-1,
    required=True,
    callback=listed,
    help="Files to hash.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    default=False,
    help=(
        'Print JSON instead of text: {"files": [{"path", "size", '
        '"sha256"}, ...], "total": {"files", "size"}}.'
    ),
)
def digest(
    files: list[Path],
    as_json: bool = False,
) -> None:
    """Print the sha256 and size of files (for writing manifests): one `SHA256  SIZE  PATH`
    line per file."""
    hashed: list[dict[str, Any]] = []
    with local_registry() as reg, progress_bars() as progress:
        for f in files:
            if not f.is_file():
                raise UserError(f"{f}: not a file")
            sha, size = reg.digest(f, progress=progress(str(f), f.stat().st_size))
            if as_json:  # printed whole once every file is hashed
                hashed.append({"path": str(f), "size": size, "sha256": sha})
            else:
                sys.stdout.write(f"{sha}  {size}  {f}\n")
    if as_json:
        total = {"files": len(hashed), "size": sum(h["size"] for h in hashed)}
        _print_json({"files": hashed, "total": total})
