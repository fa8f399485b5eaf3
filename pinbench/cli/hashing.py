"""``pinbench verify`` and ``pinbench digest``: bytes checked against their sha256, on this
machine's store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.common import listed, lockfile_argument, progress_bars, workspace
from pinbench.console import err as _err
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pinbench.artifacts.ahead import HashesAhead
    from pinbench.artifacts.digest import Progress as ProgressCallback
    from pinbench.sdk.registry import Registry


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
    """Check every byte the lockfile pins against its sha256 (unchanged files are not re-read;
    --rehash reads them all).

    First the lockfile itself is checked against this registry: every section is re-derived
    from the manifests it pins and must be identical (a field that differs is named); an
    artifact not published here is refused (adopt it deliberately with `pinbench lockfile
    import LOCKFILE --from URL`). A file missing from the store is fetched from its pinned
    source (https://, or hf:// and dvc:// at the commit the lockfile names) and kept only if
    it matches the pin.
    """
    from pinbench.artifacts.ahead import hashes_ahead, pins_of

    raw: bytes | None
    try:
        raw = lockfile.read_bytes()
    except OSError:
        raw = None  # Lockfile.read names the problem
    from pinbench.sdk.registry import Registry as Here

    with (
        Here() as reg,  # this machine's store, also when PINBENCH_URL names a server
        progress_bars() as progress,
        hashes_ahead(reg.workspace().store, pins_of(raw or b""), rehash=rehash) as ahead,
    ):
        ahead.show(progress)
        # the pinned blobs are being hashed while the lockfile is checked
        _verify_here(reg, lockfile, raw, ahead, progress=progress, rehash=rehash, as_json=as_json)


def _verify_here(
    reg: Registry,
    lockfile: Path,
    raw: bytes | None,
    ahead: HashesAhead,
    *,
    progress: Callable[[str, int], ProgressCallback],
    rehash: bool,
    as_json: bool,
) -> None:
    from pinbench.registry.lockfile import Lockfile
    from pinbench.registry.verify import VerificationFailed
    from pinbench.sdk.runs import Lockfile as Pinned

    source = str(lockfile)
    lock = Lockfile.read(lockfile) if raw is None else Lockfile.from_bytes(raw, source=source)
    try:
        checks = Pinned(lock, reg).verify(
            progress=progress,
            say=lambda text: _err().print(text),
            rehash=rehash,
            ahead=ahead,
        )
    except VerificationFailed as exc:
        if as_json:
            failures = [c.error for c in exc.failures]
            _print_json({"digest": lock.digest.hex, "ok": False, "failures": failures})
        raise
    if as_json:
        _print_json({"digest": lock.digest.hex, "ok": True, "checked": len(checks)})
    else:
        nbytes = sum(c.size for c in checks)
        _out().print(
            f"verified lockfile {lock.digest.short}: "
            f"{len(checks)} item(s), {nbytes} bytes, all match"
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
    with workspace() as ws, progress_bars() as progress:
        for f in files:
            if not f.is_file():
                raise UserError(f"{f}: not a file")
            bar = progress(str(f), f.stat().st_size)
            d, size, _ = ws.store.cache.digest(f, progress=bar)
            if as_json:  # printed whole once every file is hashed
                hashed.append({"path": str(f), "size": size, "sha256": d.hex})
            else:
                sys.stdout.write(f"{d.hex}  {size}  {f}\n")
    if as_json:
        total = {"files": len(hashed), "size": sum(h["size"] for h in hashed)}
        _print_json({"files": hashed, "total": total})
