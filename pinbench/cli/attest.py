"""Signed provenance on the command line: ``runs attest``, ``attest verify``, ``keys list``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pinbench.cli.common import remote_or_here, write_atomic
from pinbench.console import JsonOpt
from pinbench.console import err as _err
from pinbench.console import out as _out
from pinbench.console import print_json as _print_json
from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.provenance.keys import PublicKey
    from pinbench.provenance.verify import BlobBytes, BlobDigest
    from pinbench.remote import Remote
    from pinbench.workspace import Workspace

attest_app = typer.Typer(
    help="Check signed provenance: `attest verify FILE` (see `runs attest`).",
    no_args_is_help=True,
)
keys_app = typer.Typer(help="The public keys that sign run attestations.", no_args_is_help=True)


def runs_attest(
    run: Annotated[str, typer.Argument(help="A run id (or a unique prefix).")],
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Where to write the envelope (.intoto.jsonl).")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Write a run's signed provenance: a DSSE envelope (Ed25519) over an in-toto Statement v1
    whose predicate is SLSA Provenance v1.

    Subjects are the run's outputs by sha256 (raw latencies, outputs, trace, final weights,
    results.json); the predicate holds the lockfile (digest and text), the request, the
    builder, start and finish, runner, environment digest and host facts. A run is attested
    when it is recorded; a run recorded before that is attested now, marked "after the fact".
    With PINBENCH_URL: the server's attestation, signed with the server's key.
    """

    def there(remote: Remote) -> tuple[bytes, bool]:
        from pinbench.remote import RemoteRefused

        path = f"/api/v1/runs/{run}/attestation"
        try:
            return remote.call("GET", path).content, False
        except RemoteRefused as exc:
            if exc.status != 404:
                raise
        return remote.call("POST", path).content, True

    def here(ws: Workspace) -> tuple[bytes, bool]:
        from pinbench.provenance.attest import attestation_for

        return attestation_for(ws, run)

    line, made = remote_or_here(there, here)
    write_atomic(output, line)
    info = {"output": str(output), "sha256": hashlib.sha256(line).hexdigest(), "made_now": made}
    if as_json:
        _print_json(info)
        return
    note = " (attested now, after the fact)" if made else ""
    _out().print(f"wrote {output}{note}; check it with `pinbench attest verify {output}`")


@attest_app.command("verify")
def verify(
    file: Annotated[Path, typer.Argument(help="An .intoto.jsonl file (`runs attest` wrote it).")],
    key: Annotated[
        Path | None,
        typer.Option(
            "--key",
            help="The signer's public key (PEM, or the 64 hex digits `keys list` shows), "
            "obtained apart from whoever serves the attestation. Without it: the keys this "
            "registry (or PINBENCH_URL's server) lists.",
        ),
    ] = None,
    blobs: Annotated[
        Path | None,
        typer.Option(
            "--blobs",
            help="A folder holding each subject as a file named like the subject "
            "(latencies.npy, results.json, ...). Without it: this registry's store, or "
            "PINBENCH_URL's blobs (downloaded and hashed here).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check an attestation: its signature, every subject's bytes against its sha256, and that
    the lockfile in the predicate hashes to its id. Exit 1 naming the part that failed."""
    from pinbench.provenance.blobs import folder_blobs, remote_blobs, store_blobs
    from pinbench.provenance.dsse import read_envelopes
    from pinbench.provenance.keys import parse_public
    from pinbench.provenance.verify import verify_envelope

    try:
        data = file.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {file}: {exc}") from None
    envelopes = read_envelopes(data, source=str(file))
    given = None
    if key is not None:
        try:
            given = [parse_public(key.read_text(), source=str(key))]
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read key {key}: {exc}") from None

    def check(keys: list[PublicKey], digest_of: BlobDigest, read: BlobBytes) -> list[Any]:
        return [verify_envelope(e, given or keys, digest_of, read) for e in envelopes]

    if blobs is not None:
        results = check([], *folder_blobs(blobs)) if given else _with_registry_keys(check, blobs)
    else:
        results = remote_or_here(
            lambda remote: check(_remote_keys(remote) if not given else [], *remote_blobs(remote)),
            lambda ws: check(_local_keys(ws) if not given else [], *store_blobs(ws)),
        )
    import os

    source = "given" if given else "server" if os.environ.get("PINBENCH_URL") else "registry"
    if as_json:
        _print_json([r.to_json() | {"key_source": source} for r in results])
        return
    for r in results:
        when = "after the fact" if r.after_the_fact else "when recorded"
        _out().print(
            f"verified: run {r.run} ({r.status}), lockfile {r.lockfile[:12]}, signed by key "
            f"{r.keyid[:12]}"
            + (f" ({r.owner})" if r.owner else "")
            + f", attested {when}; subjects match: {', '.join(r.subjects)}"
        )
    if source == "server":
        _err().print(
            "note: the key came from the server that served the attestation, so this shows "
            "it is consistent, not independent: pass --key with a key obtained apart"
        )


def _with_registry_keys(check: Any, blobs: Path) -> list[Any]:
    from pinbench.provenance.blobs import folder_blobs

    found: list[Any] = remote_or_here(
        lambda remote: check(_remote_keys(remote), *folder_blobs(blobs)),
        lambda ws: check(_local_keys(ws), *folder_blobs(blobs)),
    )
    return found


def _local_keys(ws: Workspace) -> list[PublicKey]:
    from pinbench.provenance.keys import known_keys

    return known_keys(ws)


def _remote_keys(remote: Remote) -> list[PublicKey]:
    from pinbench.provenance.keys import PublicKey

    return [
        PublicKey(bytes.fromhex(k["public"]), k.get("owner", ""))
        for k in remote.json("GET", "/api/v1/keys")
    ]


@keys_app.command("list")
def keys_list(as_json: JsonOpt = False) -> None:
    """The public keys that sign this registry's attestations (PINBENCH_URL: the server's)."""
    rows: list[dict[str, Any]] = remote_or_here(
        lambda remote: list(remote.json("GET", "/api/v1/keys")),
        lambda ws: [k.to_json() for k in _signing_keys(ws)],
    )
    if as_json:
        _print_json(rows)
        return
    if not rows:
        print("no signing keys yet: `pinbench init` creates this registry's")
        return
    for row in rows:
        print(f"{row['keyid'][:16]}  {row['algorithm']}  {row['public']}  {row['owner']}")


def _signing_keys(ws: Workspace) -> list[PublicKey]:
    from pinbench.provenance.keys import known_keys, signing_key

    signing_key(ws)  # this registry's own is listed even before its first attestation
    return known_keys(ws)
