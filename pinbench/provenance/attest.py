"""Attesting runs: the statement signed by this registry's key, kept as a blob and recorded.

A run is attested when it is recorded (``evaluator.run``); a run recorded before is attested
on request (``runs attest``), and its statement says so (``internalParameters.attested:
"after the fact"``). Attesting never changes the run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pinbench.errors import UserError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from sqlalchemy.orm import Session

    from pinbench.db.models import Run
    from pinbench.workspace import Workspace

FINISHED = ("succeeded", "failed", "interrupted", "cancelled")


class NotAttestable(UserError):
    def __init__(self, *, run: str, reason: str) -> None:
        super().__init__(f"run {run} cannot be attested: {reason}")
        self.run = run
        self.reason = reason


def attest_run(ws: Workspace, run_id: str, *, after_the_fact: bool) -> bytes:
    """Sign and record a new attestation of the finished run ``run_id`` (id or prefix);
    its envelope as one ``.intoto.jsonl`` line."""
    from pinbench.evaluator.history import find_run
    from pinbench.provenance.keys import signing_key

    private = signing_key(ws)  # before the transaction: a new registry's key is recorded
    with ws.transaction() as session:
        run = find_run(session, run_id)
        return attest_in(ws, session, run, private, after_the_fact=after_the_fact)


def attest_in(
    ws: Workspace, session: Session, run: Run, private: Ed25519PrivateKey, *, after_the_fact: bool
) -> bytes:
    """Sign ``run``'s statement with ``private`` and add its attestation row to ``session``'s
    transaction; the envelope line. Nothing is added when signing fails."""
    from pinbench.db.models import Attestation
    from pinbench.provenance.dsse import sign
    from pinbench.provenance.key_material import public_of
    from pinbench.provenance.statement import statement_of

    if run.status not in FINISHED:
        raise NotAttestable(run=run.id, reason=f"it is {run.status}, not finished")
    keyid = public_of(private).keyid
    payload = statement_of(ws, session, run, after_the_fact=after_the_fact)
    line = sign(payload, private, keyid).line()
    blob = ws.store.put_bytes(line)
    session.add(
        Attestation(
            run_id=run.id,
            envelope_sha256=blob.hex,
            keyid=keyid,
            after_the_fact=after_the_fact,
            created_at=datetime.now(UTC),
        )
    )
    return line


def attest_with_record(
    ws: Workspace, say: Callable[[str], None]
) -> Callable[[Session, str], None] | None:
    """What ``db.run_record.write`` calls in the transaction that writes a run's record: the
    run's attestation, committed with the record, so that no reader ever sees the run
    finished and not yet attested (a client that asked for it in between got one made "after
    the fact"). The key is read before the record's transaction (a new registry records its
    key), or in it when the database was away then. A key that cannot be had (None), or
    signing that fails, is said and the record is written without it (``pinbench runs
    attest`` makes one later); the database's own errors pass, and the record is retried."""
    from sqlalchemy.exc import SQLAlchemyError

    from pinbench.db.errors import DatabaseUnavailable
    from pinbench.db.models import Run
    from pinbench.provenance.keys import signing_key

    database = (SQLAlchemyError, DatabaseUnavailable)
    private: Ed25519PrivateKey | None = None
    try:
        private = signing_key(ws)
    except database:  # an outage: the record waits for the database, the key with it
        pass
    except Exception as exc:
        say(f"runs are recorded but not attested ({exc}); `pinbench runs attest` can")
        return None

    def attest(session: Session, run_id: str) -> None:
        run = session.get(Run, run_id)
        assert run is not None  # written just before, in this transaction
        unattested = f"run {run_id[:8]} recorded but not attested"
        try:  # on another connection: never this transaction's error
            key = private if private is not None else signing_key(ws)
        except Exception as exc:
            say(f"{unattested} ({exc}); `pinbench runs attest` can")
            return
        try:
            attest_in(ws, session, run, key, after_the_fact=False)
        except database:
            raise
        except Exception as exc:  # the run is recorded; its attestation can be made later
            say(f"{unattested} ({exc}); `pinbench runs attest` can")

    return attest


def recorded_attestation(ws: Workspace, run_id: str) -> bytes | None:
    """The newest recorded attestation of run ``run_id`` (id or prefix), or None."""
    from sqlalchemy import select

    from pinbench.artifacts.digest import Digest
    from pinbench.db.models import Attestation
    from pinbench.evaluator.history import find_run

    with ws.transaction() as session:
        run = find_run(session, run_id)
        row = session.scalars(
            select(Attestation)
            .where(Attestation.run_id == run.id)
            .order_by(Attestation.created_at.desc(), Attestation.id.desc())
            .limit(1)
        ).first()
        if row is None:
            return None
        digest = row.envelope_sha256
    return ws.store.verify(Digest(digest), label=f"attestation {digest[:12]}").read_bytes()


def attestation_for(ws: Workspace, run_id: str) -> tuple[bytes, bool]:
    """The run's recorded attestation, or a new one made after the fact; (line, made now)."""
    line = recorded_attestation(ws, run_id)
    if line is not None:
        return line, False
    return attest_run(ws, run_id, after_the_fact=True), True


def attest_recorded(ws: Workspace, run_id: str, say: Callable[[str], None]) -> None:
    """Attest a run just recorded; a failure is said and the run stands (never raised)."""
    try:
        attest_run(ws, run_id, after_the_fact=False)
    except Exception as exc:  # the run is recorded; its attestation can be made later
        say(f"run {run_id[:8]} recorded but not attested ({exc}); `pinbench runs attest` can")
