"""Signed provenance on the command line: ``runs attest``, ``attest verify``, and this
registry's keys: ``keys list``, ``keys rotate``, ``keys export``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinbench.cli.common import output_option, registry, run_argument
from pinbench.console import err as _err
from pinbench.console import json_option
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    pass

attest_app = click.Group(
    "attest",
    help="Check signed provenance: `attest verify FILE` (see `runs attest`).",
    no_args_is_help=True,
)
keys_app = click.Group(
    "keys",
    help="This registry's signing keys: attestation (Ed25519) and model-signing (EC P-256).",
    no_args_is_help=True,
)


@click.command("attest")
@run_argument
@output_option("Where to write the envelope (.intoto.jsonl).")
@json_option
def runs_attest(
    run: str,
    output: Path,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """Write a run's signed provenance: an in-toto Statement of SLSA Provenance in a DSSE envelope.

    The envelope is signed with Ed25519; the statement is in-toto v1, its predicate SLSA
    Provenance v1.

    Subjects are the run's outputs by sha256 (raw latencies, outputs, trace, final weights,
    an optimized graph, LoadGen's logs, results.json); the predicate holds the lockfile
    (digest and text), the request, the builder, start and finish, runner, environment digest
    and host facts.
    A run is attested when it is recorded; a run recorded before that is attested now, marked
    "after the fact".
    With PINBENCH_URL: the server's attestation, signed with the server's key.
    """

    from pinbench.sdk.files import destination, write

    dest = destination(output, option="-o", force=force)
    with registry() as reg:
        line, made = reg.attest(run)
    write(dest, line)
    info = {"output": str(output), "sha256": hashlib.sha256(line).hexdigest(), "made_now": made}
    if as_json:
        _print_json(info)
        return
    note = " (attested now, after the fact)" if made else ""
    _out().print(f"wrote {output}{note}; check it with `pinbench attest verify {output}`")


@attest_app.command("verify")
@click.argument(
    "file", type=click.Path(path_type=Path), help="An .intoto.jsonl file (`runs attest` wrote it)."
)
@click.option(
    "--key",
    "key",
    type=click.Path(path_type=Path),
    help=(
        "The signer's public key (PEM: `keys export KEYID -o FILE` "
        "writes it; or the 64 hex digits `keys list --json` shows as "
        "public), obtained apart from whoever serves the attestation. "
        "Without it: the keys this registry (or PINBENCH_URL's "
        "server) lists."
    ),
)
@click.option(
    "--blobs",
    "blobs",
    type=click.Path(path_type=Path),
    help=(
        "A folder holding each subject as a file named like the "
        "subject (latencies.npy, results.json, ...). Without it: this "
        "registry's store, or PINBENCH_URL's blobs (downloaded and "
        "hashed here)."
    ),
)
@json_option
def verify(
    file: Path,
    key: Path | None = None,
    blobs: Path | None = None,
    as_json: bool = False,
) -> None:
    """Check an attestation: its signature, every subject's bytes, and its lockfile's digest.

    Every subject's bytes are checked against its sha256, and the lockfile in the predicate
    must hash to its id. Exit 1 naming the part that failed."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {file}: {exc}") from None
    given = None
    if key is not None:
        try:
            given = key.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read key {key}: {exc}") from None
    with registry() as reg:
        results = reg.verify_attestation(
            data, source=str(file), key=given, key_source=str(key), blobs=blobs
        )
    import os

    source = "given" if given else "server" if os.environ.get("PINBENCH_URL") else "registry"
    if as_json:
        _print_json([r.to_json() | {"key_source": source} for r in results])
        return
    for r in results:
        when = "after the fact" if r.after_the_fact else "when recorded"
        retired = (
            f", retired on {r.key_retired_at} (after this attestation)" if r.key_retired_at else ""
        )
        _out().print(
            f"verified: run {r.run} ({r.status}), lockfile {r.lockfile[:12]}, signed by key "
            f"{r.keyid[:12]}"
            + (f" ({r.owner})" if r.owner else "")
            + retired
            + f", attested {when}; subjects match: {', '.join(r.subjects)}"
        )
    if source == "server":
        _err().print(
            "note: the key came from the server that served the attestation, so this shows "
            "it is consistent, not independent: pass --key with a key obtained apart"
        )


@keys_app.command("list")
@json_option
def keys_list(
    as_json: bool = False,
) -> None:
    """This registry's keys (PINBENCH_URL: the server's), each with its kind and state.

    `active` signs now; `retired DATE` (by `keys rotate`) verifies only what it signed before.
    A key file that does not hold the active key is said (the key is not used)."""
    with registry() as reg:
        rows, problems = reg.keys()
    if as_json:
        _print_json(
            [r | {"problem": problems[r["purpose"]]} if _broken(r, problems) else r for r in rows]
        )
        return
    if not rows:
        print("no signing keys yet: `pinbench init` creates this registry's")
        return
    for row in rows:
        purpose = row.get("purpose", "attestation")
        state = row.get("state", "active")
        if state == "retired" and row.get("retired_at"):
            state = f"retired {str(row['retired_at'])[:10]}"
        print(
            f"{row['keyid'][:16]}  {purpose:<13}  {row['algorithm']:<10}  {state:<18}  "
            f"{row['owner']}"
        )
    for problem in problems.values():
        _err().print(f"warning: {problem}", soft_wrap=True)


def _broken(row: dict[str, Any], problems: dict[str, str]) -> bool:
    return row.get("state") == "active" and row.get("purpose", "") in problems


@keys_app.command("rotate")
@click.option(
    "--kind",
    "kind",
    type=str,
    default="all",
    help="Which key: attestation, model-signing, or all (both).",
)
@json_option
def keys_rotate(
    kind: str = "all",
    as_json: bool = False,
) -> None:
    """Make a new key active and retire the one it replaces, on this machine's registry.

    That is PINBENCH_HOME's; a server's keys are rotated on its machine.

    The retired key is kept, dated, for verifying: attestations it made before its retirement
    still verify (said so), any it signs after are refused. Its private key file is
    overwritten. The way out of a lost, leaked or replaced key file: nothing else makes a key.
    """
    import os

    if os.environ.get("PINBENCH_URL"):
        raise UserError(
            "keys rotate changes this machine's registry (PINBENCH_HOME): unset PINBENCH_URL "
            "(a server's keys are rotated on its machine)"
        )
    with registry() as reg:
        done = reg.rotate_keys(kind)
    if as_json:
        _print_json(done)
        return
    for d in done:
        old_text = (
            f"retired {d['retired']['keyid'][:16]} ({d['retired']['retired_at']})"
            if d["retired"]
            else "no key before"
        )
        _out().print(f"{d['purpose']}: {old_text}; active now {d['active']['keyid'][:16]}")


@keys_app.command("export")
@click.argument("keyid", type=str, help="A key id, or its first 8+ hex digits.")
@output_option("Where to write the public key (PEM).")
@json_option
def keys_export(
    keyid: str,
    output: Path,
    force: bool = False,
    as_json: bool = False,
) -> None:
    """Write a public key as PEM (SubjectPublicKeyInfo), to verify with another tool.

    A model-signing key for `model_signing verify key --public_key`, an attestation key for
    `attest verify --key`. Active or retired; PINBENCH_URL: the server's (obtain it apart from
    the server to trust it independently)."""
    from pinbench.sdk.files import destination, write

    dest = destination(output, option="-o", force=force)
    with registry() as reg:
        record, pem = reg.public_key(keyid)
    write(dest, pem.encode())
    info = {"output": str(output), **record}
    if as_json:
        _print_json(info)
        return
    _out().print(
        f"wrote {output}: {record['purpose']} key {record['keyid'][:16]} ({record['state']}), PEM"
    )
