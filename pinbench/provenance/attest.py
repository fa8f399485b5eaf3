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
    from pinbench.artifacts.digest import Digest
    from pinbench.db.plain import Rows
    from pinbench.db.run_record import Also, RunRecord
    from pinbench.registry.lockfile import Lockfile
    from pinbench.workspace import Workspace

FINISHED = ("succeeded", "failed", "interrupted", "cancelled")


class NotAttestable(UserError):
    def __init__(self, *, run: str, reason: str) -> None:
        super().__init__(f"run {run} cannot be attested: {reason}")
        self.run = run
        self.reason = reason


def attest_run(ws: Workspace, run_id: str, *, after_the_fact: bool) -> bytes:
    """Sign and record a new attestation of the finished run ``run_id`` (id or prefix);
    its envelope as one ``.intoto.jsonl`` line. The run is read in one snapshot, the statement
    signed and its blobs stored outside any transaction, and the attestation's row written in
    a short one: no database write lock is held while the store's lock is waited for (as
    ``attestation_of_record``, decision 270)."""
    from pinbench.db.run_row import read_run
    from pinbench.evaluator.records.run_view import RunNotFound, locate
    from pinbench.provenance.dsse import sign
    from pinbench.provenance.key_material import public_of
    from pinbench.provenance.keys import signing_key
    from pinbench.provenance.statement import statement_for
    from pinbench.registry.lockfile import Lockfile

    private = signing_key(ws)
    keyid = public_of(private).keyid
    with ws.reads() as rows:
        run = read_run(rows, str(locate(rows, run_id)[0]))
        assert run is not None  # located in this snapshot
        if run.status not in FINISHED:
            raise NotAttestable(run=run.id, reason=f"it is {run.status}, not finished")
        digest = run.lockfile_digest
        ((body,),) = rows("SELECT body FROM lockfiles WHERE digest = :d", {"d": digest})
    lock = Lockfile.from_bytes(str(body).encode(), source=f"lockfile {digest[:12]}")
    payload = statement_for(ws, run, lock, after_the_fact=after_the_fact)  # stores results.json
    line = sign(payload, private, keyid).line()
    blob = ws.store.put_bytes(line)
    with ws.writes() as rows:
        if not rows("SELECT id FROM runs WHERE id = :id", {"id": run.id}):
            raise RunNotFound(run=run.id)  # deleted meanwhile: its blobs wait for gc
        add_attestation(rows, run.id, blob.hex, keyid, after_the_fact, datetime.now(UTC))
    return line


def add_attestation(
    rows: Rows, run_id: str, envelope: str, keyid: str, after_the_fact: bool, at: datetime
) -> None:
    """Record run ``run_id``'s attestation: the envelope's blob (sha256 ``envelope``)."""
    rows(
        "INSERT INTO attestations (run_id, envelope_sha256, keyid, after_the_fact, created_at) "
        "VALUES (:run, :envelope, :keyid, :after, :at)",
        {"run": run_id, "envelope": envelope, "keyid": keyid, "after": after_the_fact, "at": at},
    )


def attestation_of_record(
    ws: Workspace,
    record: RunRecord,
    lock: Lockfile,
    say: Callable[[str], None],
    put: Callable[[bytes], Digest] | None = None,
) -> Callable[[], Also | None]:
    """The attestation of a run about to be recorded, for ``records.recording.record_run``:
    called before each try of the record's transaction, outside it, it signs the statement
    and stores its blobs (once: a later try reuses them) and returns what adds the
    attestation's row to that transaction, so that no reader ever sees the run finished and
    not yet attested (decision 270). Nothing here holds the database's write lock while it
    waits for the store's. A key that cannot be had, or signing that fails, is said and gives
    None: the record is written without it (``pinbench runs attest`` makes one later). The
    database's own errors pass: the record waits for the database, and its attestation with
    it. ``put`` stores its blobs (a run's waits out a blob-store outage, decision 284; unset:
    ``ws.store.put_bytes``)."""
    from pinbench.db.errors import from_the_database
    from pinbench.db.run_row import RunRow, queued_columns
    from pinbench.provenance.dsse import sign
    from pinbench.provenance.key_material import public_of
    from pinbench.provenance.keys import signing_key
    from pinbench.provenance.statement import statement_for

    made: list[Also | None] = []

    def prepare() -> Also | None:
        if made:
            return made[0]
        try:
            private = signing_key(ws)
            keyid = public_of(private).keyid
            store = put or ws.store.put_bytes
            with ws.reads() as rows:  # what its queued row holds (who queued it, a retry's)
                queued = queued_columns(rows, record.id)
            run = RunRow.of_record(record, queued)
            payload = statement_for(ws, run, lock, after_the_fact=False, put=store)
            blob = store(sign(payload, private, keyid).line())
        except Exception as exc:  # the run is recorded all the same; attested later
            if from_the_database(exc):
                raise
            say(
                f"run {record.id[:8]} is recorded without an attestation ({exc}); "
                "`pinbench runs attest` makes one"
            )
            made.append(None)
            return None
        created = datetime.now(UTC)

        def add(rows: Rows, run_id: str) -> None:
            add_attestation(rows, run_id, blob.hex, keyid, False, created)

        made.append(add)
        return add

    return prepare


def recorded_attestation(ws: Workspace, run_id: str) -> bytes | None:
    """The newest recorded attestation of run ``run_id`` (id or prefix), or None."""
    from pinbench.artifacts.digest import Digest
    from pinbench.evaluator.records.run_view import locate

    with ws.reads() as rows:
        found = rows(
            "SELECT envelope_sha256 FROM attestations WHERE run_id = :run "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            {"run": str(locate(rows, run_id)[0])},
        )
    if not found:
        return None
    digest = str(found[0][0])
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
