"""Which object-store failures are an outage a run's blobs wait out, and which are refusals
that fail the run (decision 284), as ``Bucket._fail`` tells them apart; and the bytes a run
kept in the home for a store that stayed away are read back only as what they claim to be.
The waits themselves, against a real SeaweedFS stopped and started, are in
tests/test_store_outage_runs.py."""

from __future__ import annotations

import os
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from s3transfer.exceptions import S3UploadFailedError

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.objects import (
    Bucket,
    Location,
    ObjectStoreFailure,
    ObjectStoreUnavailable,
)
from pinbench.db import pending
from pinbench.db.run_record import RunRecord
from pinbench.evaluator import instances
from pinbench.evaluator import run as run_module
from pinbench.workspace import Workspace
from tests.test_record_waits import _record, _rows, _runs


def _answered(status: int, code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutObject",
    )


def _wrapped(cause: Exception) -> S3UploadFailedError:
    """s3transfer's upload error, raised while handling the client's (as boto3 raises it)."""
    try:
        raise cause
    except Exception:
        try:
            raise S3UploadFailedError(f"Failed to upload x: {cause}")
        except S3UploadFailedError as exc:
            return exc


def _during(url: str) -> ClientError:
    """A 403 answered to a retry, raised while handling the connection the first try lost:
    the answer decides, not what it was raised beside."""
    try:
        raise ConnectionClosedError(endpoint_url=url)
    except ConnectionClosedError:
        try:
            raise _answered(403, "AccessDenied")
        except ClientError as exc:
            return exc


URL = "http://127.0.0.1:9"
CASES: list[tuple[str, Exception, bool]] = [
    ("no server listening", EndpointConnectionError(endpoint_url=URL), True),
    ("connecting timed out", ConnectTimeoutError(endpoint_url=URL), True),
    ("an answer that never came", ReadTimeoutError(endpoint_url=URL), True),
    ("the connection cut mid-answer", ConnectionClosedError(endpoint_url=URL), True),
    ("503 Slow Down: the store sheds load", _answered(503, "SlowDown"), True),
    ("500: the store's own failure", _answered(500, "InternalError"), True),
    ("an upload's 503, wrapped by s3transfer", _wrapped(_answered(503, "SlowDown")), True),
    ("403: the credentials or the policy refuse", _answered(403, "AccessDenied"), False),
    ("404: no such bucket", _answered(404, "NoSuchBucket"), False),
    ("an upload's 403, wrapped by s3transfer", _wrapped(_answered(403, "AccessDenied")), False),
    ("no credentials at all", NoCredentialsError(), False),
    ("501: the store does not implement the request", _answered(501, "NotImplemented"), False),
    ("505: nor the HTTP version", _answered(505, "HTTPVersionNotSupported"), False),
    ("a 403 raised while handling a dropped connection", _during(URL), False),
]


@pytest.mark.parametrize(("why", "cause", "outage"), CASES, ids=[c[0] for c in CASES])
def test_an_outage_is_told_from_a_refusal(why: str, cause: Exception, outage: bool) -> None:
    bucket: Any = object.__new__(Bucket)  # no client made: only ``_fail`` is asked
    bucket.location = Location.parse("s3://pinbench/p", endpoint=None)
    failure = bucket._fail("PUT blobs/ab/ab12", cause)
    assert isinstance(failure, ObjectStoreFailure), why
    assert isinstance(failure, ObjectStoreUnavailable) is outage, why
    assert str(failure).startswith("object storage s3://pinbench/p: PUT blobs/ab/ab12 failed: ")


def _kept_run(ws: Workspace, run_id: str) -> tuple[RunRecord, str]:
    """Run ``run_id``'s record waiting in the home, its process gone, with its latencies' bytes
    kept there (as ``blob_wait`` leaves them); the record and the latencies' digest."""
    data = f"raw latencies of {run_id}, kept while the store was away".encode()
    digest = pending.keep_blob(ws, data)
    record = _record(ws, run_id)
    record.columns["latencies_sha256"] = digest.hex
    path = pending.keep(ws, record)
    path.rename(path.with_name(f"{'0' * 16}-{run_id}.json"))  # its process gone
    return record, digest.hex


def test_kept_bytes_are_stored_before_the_record_is_written(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep stores the kept bytes, hashed against their name, removes them, then writes
    the record; a kept file whose bytes are not its name's sets the record aside, unwritten."""
    monkeypatch.setattr(run_module, "attest_recorded", lambda *_: None)
    gone = instances.register(ws, lease_s=-60)  # the server that ran them, its lease run out
    _rows(ws, gone, ("kept", "running"), ("swapped", "running"))
    _, good = _kept_run(ws, "kept")
    assert run_module.record_left(ws) == 1
    assert _runs(ws)["kept"][0] == "succeeded"
    assert ws.store.has(Digest(good)) and pending.kept_blobs(ws, [good]) == []

    _, bad = _kept_run(ws, "swapped")
    where = pending.folder(ws) / pending.BLOBS / bad
    os.chmod(where, 0o600)
    where.write_bytes(b"other bytes under the kept name")
    assert run_module.record_left(ws) == 0
    assert _runs(ws)["swapped"][0] == "running"  # never written with a blob it lacks
    assert not ws.store.has(Digest(bad))
    aside = [p.name for p in (pending.folder(ws) / pending.REFUSED).iterdir()]
    assert aside == [f"{'0' * 16}-swapped.json"]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda path: os.mkfifo(path), id="a FIFO: never waited on"),
        pytest.param(lambda path: os.symlink("/etc/hostname", path), id="a link: never followed"),
    ],
)
def test_a_kept_name_that_is_not_a_regular_file_is_not_read(ws: Workspace, make: Any) -> None:
    where = pending.folder(ws) / pending.BLOBS
    where.mkdir(parents=True)
    name = "ab" * 32
    make(where / name)
    assert pending.kept_blobs(ws, [name]) == []
    assert pending.store_kept(ws, [name]) == 0


def test_a_file_the_run_did_not_keep_holds_its_record_up_nowhere(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose blobs the store took is recorded at once, whatever the folder of kept blobs
    holds under their names: another run's kept copy of the same bytes (a deterministic
    model's outputs) or a file put there by another hand. Its record waited for a server
    restart, and a file of other bytes then set it aside unwritten."""
    from pinbench.evaluator.records.recording import Recorded, record_run

    gone = instances.register(ws, lease_s=-60)
    _rows(ws, gone, ("stored", "running"), ("waited", "running"))
    record = _record(ws, "stored")
    outputs = record.columns["details"]["outputs_sha256"]
    where = pending.folder(ws) / pending.BLOBS
    where.mkdir(parents=True)
    (where / outputs).write_bytes(b"planted under a blob's name")
    said: list[str] = []
    got = record_run(ws, record, said.append, give_up=lambda: True)
    assert got is Recorded.WRITTEN, said
    assert _runs(ws)["stored"][0] == "succeeded"

    # a record that waited for the database, naming the same blob: written by the sweep,
    # the planted file set aside, never stored
    monkeypatch.setattr(run_module, "attest_recorded", lambda *_: None)
    waited = _record(ws, "waited")
    waited.columns["details"] = {"outputs_sha256": outputs}
    path = pending.keep(ws, waited)
    path.rename(path.with_name(f"{'0' * 16}-waited.json"))
    assert run_module.record_left(ws) == 1
    assert _runs(ws)["waited"][0] == "succeeded"
    assert (where / pending.REFUSED / outputs).is_file() and not (where / outputs).exists()
    assert ws.store.verify(Digest(outputs), label="outputs")  # the store's bytes untouched


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda path: os.mkfifo(path), id="a FIFO: never waited on"),
        pytest.param(lambda path: os.symlink("/etc/hostname", path), id="a link: never followed"),
    ],
)
def test_a_kept_name_swapped_after_it_was_looked_at_is_not_read(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    """The sweep reads a kept file by its descriptor, opened without following a link or
    waiting on a FIFO: a name swapped between the look and the read (another hand writes the
    folder) is set aside, and its record, whose blob nobody has, is not written."""
    gone = instances.register(ws, lease_s=-60)
    _rows(ws, gone, ("raced", "running"))
    _, name = _kept_run(ws, "raced")
    where = pending.folder(ws) / pending.BLOBS
    (where / name).unlink()
    make(where / name)
    monkeypatch.setattr(pending, "kept_blobs", lambda _ws, digests: list(digests))  # the race
    monkeypatch.setattr(run_module, "attest_recorded", lambda *_: None)
    assert run_module.record_left(ws) == 0
    assert _runs(ws)["raced"][0] == "running"
    assert not ws.store.has(Digest(name))
    assert (where / pending.REFUSED / name).is_symlink() or (
        where / pending.REFUSED / name
    ).exists()


def test_a_try_under_way_is_given_up_when_the_process_is_asked_to_stop(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that takes the connection and never answers holds one try for its client's
    timeouts and retries (3 x 60 s), past the 30 s a stopping server gives its runs: the run
    was then marked interrupted and its measurement lost. Asked to stop, the wait keeps the
    bytes without waiting for the try to end."""
    import threading

    from pinbench.evaluator.blob_wait import waiting_put

    release, ended = threading.Event(), threading.Event()

    def hanging(data: bytes) -> Digest:
        release.wait(30)  # bounds the wait of a put that is not given up
        ended.set()
        raise ObjectStoreUnavailable(where="s3://b", action="PUT", reason="read timed out")

    monkeypatch.setattr(ws.store, "put_bytes", hanging)
    kept: set[str] = set()
    try:
        put = waiting_put(ws, "run-1", lambda _: None, give_up=lambda: True, kept=kept)
        digest = put(b"raw latencies")
        assert not ended.is_set()  # given up while the try was under way
    finally:
        release.set()
    assert kept == {digest.hex} and pending.kept_blobs(ws, [digest.hex]) == [digest.hex]


def _boto3_wrapped(cause: Exception) -> Exception:
    """boto3's own upload error (``boto3.exceptions.S3UploadFailedError``, not s3transfer's),
    raised while handling the client's, as ``upload_file`` raises it."""
    from boto3.exceptions import S3UploadFailedError as Boto3UploadFailed

    try:
        raise cause
    except Exception:
        try:
            raise Boto3UploadFailed(f"Failed to upload x: {cause}")
        except Boto3UploadFailed as exc:
            error: Exception = exc  # boto3 is untyped
            return error


WRITES: list[tuple[str, Exception, str]] = [
    ("SeaweedFS read-only or full: 500", _boto3_wrapped(_answered(500, "InternalError")), "now"),
    ("MinIO's full drives: 507", _answered(507, "XMinioStorageFull"), "now"),
    ("a quota or a policy: 403", _wrapped(_answered(403, "AccessDenied")), "refused"),
    ("503 Slow Down: try later, an outage", _answered(503, "SlowDown"), "outage"),
    ("no answer at all: an outage", EndpointConnectionError(endpoint_url=URL), "outage"),
]


@pytest.mark.parametrize(("why", "cause", "kind"), WRITES, ids=[w[0] for w in WRITES])
def test_a_write_the_store_answered_with_a_refusal_is_named_with_its_answer(
    why: str, cause: Exception, kind: str
) -> None:
    """Issue 83 item 5: a refused write is ``WriteRefused`` (507) naming the bucket and the
    store's answer; a 5xx refusal is an outage too, which a run's blobs wait out."""
    from pinbench.artifacts.store_errors import WriteRefused, write_refusal

    bucket: Any = object.__new__(Bucket)
    bucket.location = Location.parse("s3://pinbench/p", endpoint=None)
    try:
        try:
            raise cause
        except Exception as exc:  # as ``Bucket.upload`` raises it: ``from None``, in context
            raise bucket._fail("upload of blobs/ab/ab12", exc) from None
    except ObjectStoreFailure as failure:
        said = write_refusal(failure, bucket="pinbench", key="p/blobs/ab/ab12")
    assert isinstance(said, WriteRefused) is (kind != "outage"), why
    assert isinstance(said, ObjectStoreUnavailable) is (kind != "refused"), why
    if isinstance(said, WriteRefused):
        code = said.code
        assert f"bucket 'pinbench' refused it: HTTP {said.status} {code}: {code}" in str(said)
