"""What ``Registry`` does with runs beyond reading them (cancel, parity, a bisect of the pins
between two runs, publishing a training run's weights), with keys and attestations (verify,
list, rotate, export), with a lockfile from another registry (adopt) and with files (digest).
A mixin of ``Registry`` (``pinbench.Registry.parity`` and so on), kept apart so that each
module stays small."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.artifacts.digest import Progress
    from pinbench.evaluator.verdicts.bisect import Bisection
    from pinbench.evaluator.verdicts.parity import Parity
    from pinbench.provenance.key_material import KeyRecord, PublicKey
    from pinbench.provenance.verify import BlobBytes, BlobDigest, Verified
    from pinbench.remote import Remote
    from pinbench.sdk.hosting import Hosting
    from pinbench.sdk.records import Published
    from pinbench.sdk.registry import Registry, Say
    from pinbench.sdk.runs import Lockfile, Run
    from pinbench.worker.stop import Stop
    from pinbench.workspace import Workspace

T = TypeVar("T")
REPEAT = 3
"""``bisect``'s default measurements per state (``pinbench.evaluator.verdicts.rerun.REPEAT``)."""
BAND = 0.10
"""``bisect``'s default band (``pinbench.evaluator.verdicts.verdict.BAND``)."""
MIN_EFFECT = 0.05
"""``bisect``'s least change counted (``pinbench.evaluator.verdicts.verdict.MIN_EFFECT``)."""


class Inquiries:
    if TYPE_CHECKING:  # Registry's, which these methods use

        def _local(self, operation: str) -> Workspace: ...

        def either(self, there: Callable[[Remote], T], here: Callable[[Workspace], T]) -> T: ...

        def hosting(self) -> Hosting: ...

    def cancel(self, run_id: str, *, wait: bool = True, say: Say | None = None) -> Run:
        """Cancel a queued run (it never starts) or a running one (its runner stops it):
        recorded ``cancelled``; a finished run is refused. ``wait``: until it has stopped.
        Through a server, for the runs its token's user submitted (admins: any)."""
        from pinbench.evaluator.records.run_view import show_run
        from pinbench.sdk.runs import Run

        quiet: Say = say or (lambda _: None)

        def there(remote: Remote) -> dict[str, Any]:
            info = remote.cancel(run_id)
            return remote.wait(info["id"], quiet) if wait else info

        def here(ws: Workspace) -> dict[str, Any]:
            from pinbench.evaluator.cancel import Canceller, request_cancel, wait_finished

            found, _ = request_cancel(ws, run_id, Canceller(None))
            return wait_finished(ws, found, quiet) if wait else show_run(ws, found)

        return Run(self.either(there, here), cast("Registry", self))

    def systems(self, cluster: str | None = None) -> list[dict[str, Any]]:
        """Every registered system: ``name``, ``facts`` (hardware, as its agent reported),
        ``node_id``, ``registered_at``, ``seen_at``, ``runs``, ``alive``. With ``cluster`` (a
        Ray address) each is asked of the cluster and its facts refreshed; without, alive is
        None (unknown). Local registries only."""
        hosted = self.hosting()
        return hosted.systems(hosted.refresh_systems(cluster) if cluster else None)

    def system(self, name: str, cluster: str | None = None) -> dict[str, Any]:
        """One system, as ``systems`` lists it."""
        hosted = self.hosting()
        return hosted.system(name, hosted.refresh_systems(cluster) if cluster else None)

    def parity(self, reference: str, others: Sequence[str]) -> list[Parity]:
        """Accuracy runs on one dataset compared with ``reference`` by what their task
        scores: one row per run (the reference first), each saying whether it agrees by the
        task's rule. Local registries only."""
        from pinbench.evaluator.verdicts.parity import parity

        return parity(self._local("parity"), reference, list(others))

    def bisect(
        self,
        good: str,
        bad: str,
        *,
        metric: str = "p50",
        repeat: int = REPEAT,
        runner: str | None = None,
        band: float = BAND,
        say: Say | None = None,
        stop: Stop | None = None,
        min_effect: float = MIN_EFFECT,
    ) -> Bisection:
        """The first pin between two runs' lockfiles at which ``metric`` changes: each state
        locked by this registry, run ``repeat`` times (or its recorded runs reused) and judged
        against ``good`` and ``bad`` within ``band``; a latency change smaller than
        ``min_effect`` (a fraction of the median) is no change. Local registries only."""
        from pinbench.evaluator.verdicts.bisect import bisect

        return bisect(
            self._local("bisect"),
            good,
            bad,
            metric=metric,
            repeat=repeat,
            runner=runner,
            say=say or (lambda _: None),
            stop=stop,
            band=band,
            min_effect=min_effect,
        )

    def verify_attestation(
        self,
        data: bytes,
        *,
        source: str = "(attestation)",
        key: str | None = None,
        key_source: str = "the key given",
        blobs: Path | None = None,
    ) -> list[Verified]:
        """Check every attestation in ``data`` (DSSE envelopes, one per line): the
        signature, each subject's bytes against its sha256, and the lockfile in the predicate
        against its id; raise ``AttestationRefused`` naming the part that failed. ``key``: a
        public key's text (hex or PEM) to trust instead of this registry's (a server's keys
        show consistency, not independence), read as ``key_source``; ``blobs``: a folder
        holding the subjects by sha256, instead of the registry's store."""
        from pinbench.provenance.blobs import folder_blobs, remote_blobs, store_blobs
        from pinbench.provenance.dsse import read_envelopes
        from pinbench.provenance.key_material import parse_public
        from pinbench.provenance.verify import verify_envelope

        envelopes = read_envelopes(data, source=source)
        given = [parse_public(key, source=key_source)] if key is not None else None

        def check(keys: list[PublicKey], digest_of: BlobDigest, read: BlobBytes) -> list[Any]:
            return [verify_envelope(e, given or keys, digest_of, read) for e in envelopes]

        if blobs is not None and given:
            return check([], *folder_blobs(blobs))
        if blobs is not None:
            return self.either(
                lambda remote: check(_remote_keys(remote), *folder_blobs(blobs)),
                lambda ws: check(_local_keys(ws), *folder_blobs(blobs)),
            )

        def here(ws: Workspace) -> list[Verified]:
            from pinbench.provenance.records import record_agrees

            verified = check(_local_keys(ws) if not given else [], *store_blobs(ws))
            for envelope, done in zip(envelopes, verified, strict=True):
                record_agrees(ws, done.run, envelope.payload)
            return verified

        return self.either(
            lambda remote: check(_remote_keys(remote) if not given else [], *remote_blobs(remote)),
            here,
        )

    def keys(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """This registry's public keys (a server's: from GET /api/v1/keys), by purpose, oldest
        first; and, locally, what is wrong with each purpose's key file (a fresh registry's
        keys are made here)."""
        from pinbench.provenance.keys import key_problems, key_records

        def here(ws: Workspace) -> tuple[list[dict[str, Any]], dict[str, str]]:
            problems = key_problems(ws)
            return [k.to_json() for k in key_records(ws)], problems

        return self.either(lambda remote: (server_key_rows(remote), {}), here)

    def digest(self, path: Path, *, progress: Progress | None = None) -> tuple[str, int]:
        """A file's sha256 and size, through this registry's hash cache (a file unchanged
        since it was last hashed is not read again). Local registries only."""
        d, size, _ = self._local("digest").store.cache.digest(path, progress=progress)
        return d.hex, size

    def publish_trained(
        self, run: str, target: str, *, publisher: str | None = None, say: Say | None = None
    ) -> Published:
        """Publish a training run's final weights as ``target`` (``model/NAME@VERSION``): the
        trained model's manifest with the weights replaced and ``trained_by`` naming the run,
        a claim publishing checks against the recorded run. Local registries only."""
        from pinbench.evaluator.records.trained_model import publish_trained
        from pinbench.sdk.hosting import published_of

        ws = self._local("publishing a run's weights")
        result = publish_trained(ws, run, target, publisher=publisher, say=say or (lambda _: None))
        return published_of(result)

    def check_trained_target(self, target: str, *, taken: bool = False) -> None:
        """Refuse a target for a training run's weights (``publish_trained``) that is not
        ``model/NAME@VERSION``, or, with ``taken``, whose version is published here already:
        before a training run spends its time."""
        from pinbench.evaluator.records.trained_model import check_target, target_ref

        ref = target_ref(target)
        if taken:
            check_target(self._local("publish-as"), ref)

    def adopt(
        self, lockfile: Lockfile, from_url: str, *, token: str | None, publisher: str
    ) -> list[Any]:
        """Trust the registry at ``from_url`` for exactly the versions ``lockfile`` pins and
        publish them here: each manifest must hash to its pinned digest, each file to its
        sha256, and the lockfile must then re-derive here byte for byte; otherwise nothing is
        published. One record (``ref``, ``created``, ``format``) per artifact. Local only."""
        from pinbench.registry.adopt import adopt
        from pinbench.remote import Remote

        ws = self._local("importing a lockfile")
        remote = Remote(from_url, token)
        try:
            return adopt(ws, lockfile.body, remote, publisher=publisher)
        finally:
            remote.close()

    def rotate_keys(self, kind: str = "all") -> list[dict[str, Any]]:
        """Make a new key active for ``kind`` (``attestation``, ``model-signing`` or ``all``)
        and retire the one it replaces: ``purpose``, ``retired`` (or None) and ``active``
        each. Local registries only (a server's keys are rotated on its machine)."""
        from pinbench.provenance.key_material import PURPOSES
        from pinbench.provenance.keys import rotate

        if kind != "all" and kind not in PURPOSES:
            raise UserError(f"--kind {kind!r}: expected one of {', '.join(PURPOSES)} or all")
        ws = self._local("keys rotate")
        done: list[dict[str, Any]] = []
        for purpose in PURPOSES if kind == "all" else (kind,):
            old, new = rotate(ws, purpose)
            done.append({"purpose": purpose, "retired": old.to_json() if old else None,
                         "active": new.to_json()})  # fmt: skip
        return done

    def public_key(self, keyid: str) -> tuple[dict[str, Any], str]:
        """A key (an id or its first 8+ hex digits; active or retired) as ``keys()`` lists
        it, and its public key as PEM."""
        from pinbench.provenance.key_material import find_key, public_pem
        from pinbench.provenance.keys import key_records

        def there(remote: Remote) -> tuple[KeyRecord, dict[str, Any]]:
            rows = server_key_rows(remote)
            found = find_key([_record_of(r) for r in rows], keyid)
            return found, next(r for r in rows if r["keyid"] == found.keyid)

        def here(ws: Workspace) -> tuple[KeyRecord, dict[str, Any]]:
            found = find_key(key_records(ws), keyid)
            return found, found.to_json()

        record, row = self.either(there, here)
        info = {"keyid": record.keyid, "purpose": record.purpose, "state": record.state}
        return info, str(row.get("pem") or public_pem(record.purpose, record.public))


def _record_of(row: dict[str, Any]) -> KeyRecord:
    from datetime import datetime

    from pinbench.provenance.key_material import ATTESTATION, KeyRecord

    retired = row.get("retired_at")
    created = row.get("created_at")
    return KeyRecord(
        keyid=str(row["keyid"]),
        purpose=str(row.get("purpose", ATTESTATION)),
        algorithm=str(row.get("algorithm", "")),
        public=str(row.get("public", "")),
        owner=str(row.get("owner", "")),
        created_at=datetime.fromisoformat(created) if isinstance(created, str) else datetime.min,
        retired_at=datetime.fromisoformat(retired) if isinstance(retired, str) else None,
    )


def _local_keys(ws: Workspace) -> list[PublicKey]:
    from pinbench.provenance.keys import known_keys

    return known_keys(ws)


def _remote_keys(remote: Remote) -> list[PublicKey]:
    """A server's attestation keys, each retired one with its date (a server from before
    rotation lists every key as an active attestation key)."""
    from datetime import datetime

    from pinbench.provenance.key_material import ATTESTATION, PublicKey

    keys = []
    for k in server_key_rows(remote):
        if k.get("purpose", ATTESTATION) != ATTESTATION:
            continue
        retired = k.get("retired_at")
        when = datetime.fromisoformat(retired) if isinstance(retired, str) else None
        keys.append(PublicKey(bytes.fromhex(k["public"]), k.get("owner", ""), when))
    return keys


def server_key_rows(remote: Remote) -> list[dict[str, Any]]:
    """GET /api/v1/keys, checked to be a list of objects."""
    rows = remote.pages("/api/v1/keys", {}, lambda k: str(k["keyid"]))
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise UserError(f"{remote.url} /api/v1/keys: not a list of keys")
    return rows
