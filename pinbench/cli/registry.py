"""The registry's commands: ``publish``, ``yank``, ``list``, ``show``, ``resolve``, ``range``,
``lock``, ``verify``, ``digest`` and ``schema``.

Each command imports the library it calls when it runs: ``range`` needs only the version
algebra, ``list``/``show``/``resolve`` the database but never the evaluator.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinbench.cli.common import (
    force_option,
    listed,
    output_option,
    progress_bars,
    publisher_option,
    registry,
)
from pinbench.console import columns, json_option, to_stderr
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json

if TYPE_CHECKING:
    from pinbench.registry.request import Scenario
    from pinbench.sdk.files import Destination
    from pinbench.sdk.records import Published
    from pinbench.sdk.registry import Registry
    from pinbench.sdk.values import ArtifactRef


@click.command("schema")
@click.argument(
    "out_dir", type=click.Path(path_type=Path), help="Directory to write KIND.schema.json into."
)
@force_option
def schema(
    out_dir: Path,
    force: bool = False,
) -> None:
    """Write the JSON Schema of each manifest kind (for editors)."""
    import json

    from pinbench.sdk.files import destination, folder, write_all
    from pinbench.sdk.values import json_schemas

    docs = json_schemas()
    names = [f"{kind}.schema.json" for kind in docs]
    found = folder(out_dir, option="DIR")  # a new folder holds none of the files yet
    dests = [destination(found / name, option="DIR", force=force) for name in names]
    texts = [(json.dumps(doc, indent=2) + "\n").encode() for doc in docs.values()]
    write_all(list(zip(dests, texts, strict=True)))
    for dest in dests:
        _out().print(f"wrote {dest.given}")


# ---------------------------------------------------------------- registry


@click.command("publish")
@click.argument("manifest", type=click.Path(path_type=Path), help="The artifact's manifest (YAML).")
@click.option(
    "--files",
    "files",
    type=click.Path(path_type=Path),
    help="Directory holding the files (default: the manifest's).",
)
@publisher_option
@json_option
def publish(
    manifest: Path,
    files: Path | None = None,
    publisher: str | None = None,
    as_json: bool = False,
) -> None:
    """Publish one artifact: validate, hash and store its files, record it.

    Files with a remote source (https://, hf://ORG/REPO@REV/PATH, dvc://REPO@REV/PATH) are
    fetched and hashed on the way in; a branch or tag is pinned to its commit and the published
    manifest records the commit and each file's sha256 (checked against any md5 or sha256 the
    manifest gives). A published version never changes: the same manifest again is a no-op,
    another one is refused.
    """
    with registry() as reg:
        info = _publish_with(reg, manifest, files, publisher).to_json()
    if as_json:
        _print_json(info)
    elif info["created"]:
        print(
            f"published {info['ref']} ({info['files']} file(s), {info['bytes']} bytes, "
            f"manifest sha256 {info['manifest_digest'][:12]})"
        )
    else:
        print(f"{info['ref']} is already published with this manifest: nothing to do")


def _publish_with(
    reg: Registry, manifest: Path, files: Path | None, publisher: str | None
) -> Published:
    if reg.remote:
        return reg.publish(manifest, files=files, say=to_stderr)
    with progress_bars() as progress:
        return reg.publish(
            manifest, files=files, publisher=publisher, progress=progress, say=to_stderr
        )


_ref_argument = click.argument("ref", type=str, help="KIND/NAME@VERSION")


@click.command("yank")
@_ref_argument
@click.option("--reason", "reason", type=str, required=True, help="Why (shown to users).")
def yank(
    ref: str,
    reason: str,
) -> None:
    """Mark a version yanked: ranges skip it, exact pins still resolve it."""
    from pinbench.sdk.values import ArtifactRef

    parsed = ArtifactRef.parse(ref)
    with registry() as reg:
        reg.yank(str(parsed), reason)
    print(f"yanked {parsed}: {reason}")


@click.command("list")
@click.argument(
    "kind", type=str, required=False, default=None, help="model, framework, dataset or image"
)
@click.argument("name", type=str, required=False, default=None, help="Artifact name")
@json_option
def list_(
    kind: str | None = None,
    name: str | None = None,
    as_json: bool = False,
) -> None:
    """List published artifacts and versions."""
    with registry() as reg:
        rows = reg.list(kind, name)
    if as_json:
        _print_json(rows)
        return
    if not rows:
        print("no artifacts published")
        return
    sys.stdout.write(
        columns(
            ("kind", "name", "version", "published", "manifest"),
            (
                (
                    r["kind"],
                    r["name"],
                    f"{r['version']} (yanked)" if r["yanked"] else r["version"],
                    r["published_at"][:16].replace("T", " "),
                    r["manifest_digest"][:12],
                )
                for r in rows
            ),
        )
    )


@click.command("show")
@_ref_argument
@click.option(
    "--signature",
    "signature",
    type=click.Path(path_type=Path),
    help=(
        "Also write the model's signature (OpenSSF model-signing, "
        "signed with the registry's model-signing key) to this file, "
        "for `model_signing verify key`."
    ),
)
@force_option
@json_option
def show(
    ref: str,
    signature: Path | None = None,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """Show one artifact version: what it holds, its files with their digests, its yank state.

    A model shows its inputs and outputs (each step with its parameters, an output's task
    section), a dataset its samples, labels and task. --json gives the whole manifest."""
    from rich.text import Text

    from pinbench.cli.manifest_text import manifest_lines
    from pinbench.sdk.files import destination
    from pinbench.sdk.values import ArtifactRef

    parsed = ArtifactRef.parse(ref)
    dest = None if signature is None else destination(signature, option="--signature", force=force)
    with registry() as reg:
        info = reg.show(str(parsed))
        if dest is not None:
            info["signature"] = _write_signature(reg, parsed, dest)
    if as_json:
        _print_json(info)
        return
    out = _out()
    out.print(Text(info["ref"], style="bold"))
    if info["yanked"]:
        out.print(Text(f"yanked: {info['yank_reason']}", style="yellow"))
    out.print(f"manifest sha256 {info['manifest_digest']}")
    out.print(f"published {info['published_at']} by {info['publisher']}")
    desc = info["manifest"].get("description")
    if desc:
        out.print(Text(desc))
    for line in manifest_lines(info["manifest"]):
        out.print(Text(line))
    out.print("files")
    for f in info["files"]:
        source = f.get("source") or ""
        pinned = f"  from {source}" if "://" in source else ""
        out.print(f"  {f['sha256']}  {f['size']:>12}  {f['path']}{pinned}", soft_wrap=True)
    if signature is not None:
        keyid = info["signature"]["keyid"]
        # model_signing skips .git* files on disk unless told not to (HF folders hold one)
        git = any(part.startswith(".git") for f in info["files"] for part in f["path"].split("/"))
        flag = " --no-ignore-git-paths" if git else ""
        out.print(
            f"wrote the model signature to {signature} (model-signing key {keyid[:16]}): "
            f"`pinbench keys export {keyid[:16]} -o key.pem`, then `model_signing verify key "
            f"DIR --signature {signature} --public_key key.pem{flag}` on the files at their "
            "paths",
            soft_wrap=True,
        )


def _write_signature(reg: Registry, ref: ArtifactRef, dest: Destination) -> dict[str, str]:
    """Write ``ref``'s model-signing bundle to ``dest``; its file and key id."""
    from pinbench.sdk.files import write
    from pinbench.sdk.values import bundle_keyid

    body = reg.signature(str(ref))
    write(dest, body)
    return {"file": dest.given, "keyid": bundle_keyid(body)}


@click.command("resolve")
@click.argument(
    "specs",
    type=str,
    nargs=-1,
    required=True,
    callback=listed,
    help="KIND/NAME@RANGE, e.g. 'model/vision/lenet@^1'",
)
@click.option("--arch", "arch", type=str, default="amd64", help="Target architecture.")
@click.option("--device", "device", type=str, default="cpu", help="Target device.")
@json_option
def resolve_cmd(
    specs: list[str],
    arch: str = "amd64",
    device: str = "cpu",
    as_json: bool = False,
) -> None:
    """Pick the highest version of each artifact so that every constraint holds."""
    with registry() as reg:
        refs = reg.resolve(specs, arch=arch, device=device)
    if as_json:
        _print_json(refs)
    else:
        # plain lines: Rich is not imported for them
        sys.stdout.write("".join(f"{r['kind']}/{r['name']}@{r['version']}\n" for r in refs))


@click.command("range")
@click.argument("range_text", type=str, metavar="RANGE", help="An npm-style range.")
@click.argument(
    "versions", type=str, nargs=-1, required=False, metavar="VERSION...", callback=listed
)
@click.option(
    "--include-prerelease",
    "-p",
    "include_prerelease",
    is_flag=True,
    default=False,
    help="Let prereleases match any range.",
)
def range_cmd(
    range_text: str,
    versions: list[str] | None = None,
    include_prerelease: bool = False,
) -> None:
    """Print the given versions that satisfy RANGE, one a line (like node-semver's `semver -r`).

    With no versions, print the range in normalised form. Exits 1 when no version satisfies.
    """
    from pinbench.sdk.values import Range, parse_version, satisfying

    rng = Range.parse(range_text)
    if not versions:
        _out().print(str(rng))
        return
    matching = satisfying(
        [parse_version(v) for v in versions], rng, include_prerelease=include_prerelease
    )
    for v in matching:
        sys.stdout.write(f"{v}\n")
    if not matching:
        raise SystemExit(1)


# ---------------------------------------------------------------- lockfiles


@click.command("lock")
@click.argument("request", type=click.Path(path_type=Path), help="An evaluation request (YAML).")
@output_option("Where to write the lockfile.")
@json_option
def lock_cmd(
    request: Path,
    output: Path,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """Resolve a request and write its lockfile (canonical JSON; its sha256 is its id).

    A request whose batch_size is a list is a sweep: one lockfile per batch size, written
    next to OUTPUT as NAME.bsN.lock and grouped by the request's sha256.
    """
    from pinbench.sdk.files import write_all

    dests = _lock_destinations(request, output, force)  # refused before anything is locked
    with registry() as reg:
        points = [(lock.body, lock.new) for lock in reg.lock(request)]
    is_sweep = points[0][0].body.sweep is not None  # set on every point of a sweep only
    written, writes = [], []
    for lockfile, created in points:
        size = lockfile.body.batch_size if is_sweep else None
        dest = dests.get(size) or _lock_destination(output, size, force)
        writes.append((dest, lockfile.canonical + b"\n"))
        written.append({"digest": lockfile.digest.hex, "path": dest.given, "new": created})
    write_all(writes)
    _invalid_ahead(points[0][0].body.scenario)
    pinned = [a.ref for a in points[0][0].body.artifacts]
    if as_json:
        if is_sweep:
            sweep = points[0][0].body.sweep
            _print_json({"sweep": sweep, "points": written, "artifacts": pinned})
        else:
            _print_json({**written[0], "artifacts": pinned})
        return
    for ref in pinned:  # plain lines: no style, written as they are
        print(f"pinned {ref}")
    for point in written:
        print(f"wrote {point['path']} (lockfile sha256 {point['digest']})")


def _invalid_ahead(scenario: Scenario) -> None:
    """What the scenario asks for that LoadGen will call INVALID, on stderr before any run."""
    from pinbench.registry.scenario_notes import invalid_ahead

    for note in invalid_ahead(scenario):
        sys.stderr.write(f"note: {note}\n")


def _lock_destinations(request: Path, output: Path, force: bool) -> dict[int | None, Destination]:
    """Where ``lock`` writes: OUTPUT, or for a sweep (its batch sizes read from the request
    ahead of locking) NAME.bsN.lock beside it, each checked (``pinbench.sdk.files``)."""
    from pinbench.sdk.values import YamlRefused, load_yaml, read_yaml_file

    try:
        data = load_yaml(read_yaml_file(request))
    except (OSError, UnicodeDecodeError, YamlRefused):  # `lock` itself says why
        data = None
    sizes = data.get("batch_size") if isinstance(data, dict) else None
    if not isinstance(sizes, list):
        return {None: _lock_destination(output, None, force)}
    return {n: _lock_destination(output, n, force) for n in sizes if isinstance(n, int)}


def _lock_destination(output: Path, size: int | None, force: bool) -> Destination:
    """OUTPUT, or a sweep's point ``size`` beside it (OUTPUT then must name a file)."""
    from pinbench.sdk.files import destination

    if size is None:
        return destination(output, option="-o", force=force)
    base = destination(output, option="-o", force=True)
    if base.kind != "file":
        raise base.refused("a sweep writes a lockfile per batch size beside OUTPUT: name a file")
    return destination(
        output.with_name(f"{output.stem}.bs{size}{output.suffix}"), option="-o", force=force
    )
