"""S3-compatible object storage as the blob store's back end (decision 151): where the blobs
are (``PINBENCH_BLOBS=s3://BUCKET[/PREFIX]``, ``PINBENCH_S3_ENDPOINT``), and the few calls
the store makes on a bucket (head, upload, download, list, touch, delete, presign, and the listing
and aborting of incomplete multipart uploads), each failure
turned into ``ObjectStoreFailure`` naming the bucket and what was being done.

boto3 (the ``s3`` extra) is imported here only, and only when a store on S3 is opened.
Credentials come from boto3's standard chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``,
``AWS_PROFILE``, an instance role).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinbench.artifacts.object_answers import outage as _outage
from pinbench.artifacts.object_answers import status as _status
from pinbench.errors import InvalidValue, SystemFailure

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_PREFIX = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
MULTIPART_BYTES = 64 * 1024 * 1024
"""Blobs larger than this are uploaded in parts of this size (S3's smallest part is 5 MiB)."""
CHUNK = 1024 * 1024
PRESIGNED_S = 900
"""How long a presigned GET URL a server hands out stays valid (15 minutes)."""
PROBE_S = 1.5
"""How long a readiness probe's HEAD of the bucket may take to connect, and then to read."""


class InvalidBlobsLocation(InvalidValue):
    what = "PINBENCH_BLOBS"


class ObjectStoreFailure(SystemFailure):
    """The object store refused or did not answer (nothing is recorded as stored)."""

    def __init__(self, *, where: str, action: str, reason: str) -> None:
        super().__init__(f"object storage {where}: {action} failed: {reason}")
        self.where = where
        self.action = action
        self.reason = reason


class NoBucket(ObjectStoreFailure):
    """The bucket does not exist: pinbench's own finding before a write, not the store's answer
    to one (``store_errors.write_refusal`` leaves it as it is)."""


class ObjectStoreUnavailable(ObjectStoreFailure):
    """The object store did not answer (no connection, a timeout, a dropped connection) or
    answered that it cannot now (HTTP 5xx): an outage, which a run's blobs wait out
    (decision 284), as ``DatabaseUnavailable`` is one of the database's."""


@dataclass(frozen=True, slots=True)
class Location:
    """A bucket and the key prefix under which ``blobs/ab/abcdef...`` are kept."""

    bucket: str
    prefix: str
    endpoint: str | None

    @classmethod
    def parse(cls, text: str, *, endpoint: str | None) -> Location:
        if not text.startswith("s3://"):
            raise InvalidBlobsLocation(
                text=text, reason="expected s3://BUCKET[/PREFIX] (unset: the home's blobs folder)"
            )
        bucket, _, prefix = text.removeprefix("s3://").partition("/")
        prefix = prefix.strip("/")
        if not _BUCKET.fullmatch(bucket):
            raise InvalidBlobsLocation(
                text=text, reason=f"{bucket!r} is not a bucket name (3-63 of a-z, 0-9, '.', '-')"
            )
        if prefix and not _PREFIX.fullmatch(prefix):
            raise InvalidBlobsLocation(
                text=text, reason=f"prefix {prefix!r}: use letters, digits, '.', '_', '-' and '/'"
            )
        if endpoint is not None and not re.fullmatch(r"https?://[^\s/]+/?", endpoint):
            raise InvalidBlobsLocation(
                text=endpoint, reason="PINBENCH_S3_ENDPOINT must be http(s)://HOST[:PORT]"
            )
        return cls(bucket, prefix, endpoint or None)

    def key(self, relative: str) -> str:
        """The object key of ``relative`` (``blobs/ab/abcdef...``) under the prefix."""
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")


@dataclass(frozen=True, slots=True)
class Probed:
    """Why a bucket did not answer a probe: ``cause`` names no host, bucket or credential
    (a public readiness probe may show it), ``full`` is the whole error (for the log)."""

    cause: str
    full: str


@dataclass(frozen=True, slots=True)
class Listed:
    """An object under the prefix: its key relative to the prefix, size and time."""

    relative: str
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class Upload:
    """A multipart upload begun under the prefix and neither completed nor aborted: the key
    it would make (relative to the prefix), its id, when it began and the bytes of the parts
    it holds (which the bucket keeps, and bills, until the upload is completed or aborted)."""

    relative: str
    upload_id: str
    initiated: float
    size: int


class Bucket:
    """The calls the blob store makes on its bucket."""

    def __init__(self, location: Location, *, multipart_bytes: int = MULTIPART_BYTES) -> None:
        import boto3
        from botocore.config import Config

        self.location = location
        self.multipart_bytes = multipart_bytes
        self._bucket_seen = False
        self._probe_client: Any = None
        """A client for ``probe`` (made on its first use): one try, short timeouts."""
        # a session of its own: credentials read now, not those boto3's default session cached
        self._client: Any = boto3.session.Session().client(
            "s3",
            endpoint_url=location.endpoint,
            config=Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=10),
        )

    def _fail(self, action: str, exc: Exception) -> ObjectStoreFailure:
        reason = str(exc)
        if _status(exc) == 403:
            reason = f"access denied: check the AWS credentials and the bucket's policy ({exc})"
        kind = ObjectStoreUnavailable if _outage(exc) else ObjectStoreFailure
        return kind(where=str(self.location), action=action, reason=reason)

    def exists(self, relative: str) -> bool:
        return self.modified(relative) is not None

    def modified(self, relative: str) -> float | None:
        """The object's ``LastModified`` (seconds since the epoch); None when there is none."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            head = self._client.head_object(
                Bucket=self.location.bucket, Key=self.location.key(relative)
            )
        except ClientError as exc:
            if _status(exc) == 404:
                return None
            raise self._fail(f"HEAD {relative}", exc) from None
        except BotoCoreError as exc:
            raise self._fail(f"HEAD {relative}", exc) from None
        return float(head["LastModified"].timestamp())

    def _bucket_exists(self) -> None:
        """Refuse to write into a bucket that does not exist (some servers would make one on
        the first write): pinbench never creates buckets. Asked once per ``Bucket``."""
        from botocore.exceptions import BotoCoreError, ClientError

        if self._bucket_seen:
            return
        try:
            self._client.head_bucket(Bucket=self.location.bucket)
        except ClientError as exc:
            if _status(exc) == 404:
                raise NoBucket(
                    where=str(self.location),
                    action="a write",
                    reason=f"no bucket {self.location.bucket!r}: create it first "
                    "(pinbench never creates buckets)",
                ) from None
            raise self._fail("HEAD of the bucket", exc) from None
        except BotoCoreError as exc:
            raise self._fail("HEAD of the bucket", exc) from None
        self._bucket_seen = True

    def probe(self) -> Probed | None:
        """HEAD the bucket once (no retry; ``PROBE_S`` to connect and to read): None when it
        answers, else what went wrong (a readiness probe's question, asked by one caller at a
        time)."""
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        if self._probe_client is None:
            self._probe_client = boto3.session.Session().client(
                "s3",
                endpoint_url=self.location.endpoint,
                config=Config(
                    retries={"max_attempts": 1, "mode": "standard"},
                    connect_timeout=PROBE_S,
                    read_timeout=PROBE_S,
                ),
            )
        try:
            self._probe_client.head_bucket(Bucket=self.location.bucket)
        except ClientError as exc:
            status = _status(exc)
            full = str(self._fail("HEAD of the bucket", exc))
            if status == 404:
                return Probed("no such bucket", full)
            if status == 403:
                return Probed("access denied (the credentials or the bucket's policy)", full)
            return Probed(f"it answered HTTP {status}", full)
        except BotoCoreError as exc:
            full = str(self._fail("HEAD of the bucket", exc))
            return Probed(f"unreachable ({type(exc).__name__})", full)
        return None

    def upload(self, source: Path, relative: str) -> None:
        """Upload a file; in parts of ``multipart_bytes`` when it is larger than that."""
        from boto3.exceptions import S3UploadFailedError as UploadRefused
        from boto3.s3.transfer import TransferConfig
        from botocore.exceptions import BotoCoreError, ClientError
        from s3transfer.exceptions import S3UploadFailedError

        self._bucket_exists()
        config = TransferConfig(
            multipart_threshold=self.multipart_bytes,
            multipart_chunksize=self.multipart_bytes,
            use_threads=True,
            max_concurrency=4,
        )
        try:
            self._client.upload_file(
                str(source), self.location.bucket, self.location.key(relative), Config=config
            )
        except (BotoCoreError, ClientError, S3UploadFailedError, UploadRefused) as exc:
            # boto3's upload_file raises its own S3UploadFailedError (a store refusing the
            # write, its disk full), not s3transfer's: both are the store's answer
            raise self._fail(f"upload of {relative}", exc) from None

    def chunks(self, relative: str) -> Iterator[bytes] | None:
        """The object's bytes in pieces, or None when there is no such object."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            got = self._client.get_object(
                Bucket=self.location.bucket, Key=self.location.key(relative)
            )
        except ClientError as exc:
            if _status(exc) == 404:
                return None
            raise self._fail(f"GET {relative}", exc) from None
        except BotoCoreError as exc:
            raise self._fail(f"GET {relative}", exc) from None
        return self._read(got["Body"], relative)

    def _read(self, body: Any, relative: str) -> Iterator[bytes]:
        from botocore.exceptions import BotoCoreError

        try:
            with body:
                while chunk := body.read(CHUNK):
                    yield chunk
        except BotoCoreError as exc:
            raise self._fail(f"GET {relative}", exc) from None

    def listing(self, relative: str) -> Iterator[Listed]:
        """Every object whose key starts with ``relative`` (under the prefix)."""
        from botocore.exceptions import BotoCoreError, ClientError

        start = self.location.key(relative)
        cut = len(self.location.key(""))
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.location.bucket, Prefix=start
            )
            for page in pages:
                for item in page.get("Contents", []):
                    yield Listed(
                        item["Key"][cut:], int(item["Size"]), item["LastModified"].timestamp()
                    )
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(f"listing {relative}", exc) from None

    def uploads(self, relative: str) -> Iterator[Upload]:
        """Every incomplete multipart upload whose key starts with ``relative``, with the
        bytes its parts hold."""
        from botocore.exceptions import BotoCoreError, ClientError

        start = self.location.key(relative)
        cut = len(self.location.key(""))
        try:
            pages = self._client.get_paginator("list_multipart_uploads").paginate(
                Bucket=self.location.bucket, Prefix=start
            )
            for page in pages:
                for item in page.get("Uploads", []):
                    key, upload_id = str(item["Key"]), str(item["UploadId"])
                    yield Upload(
                        key[cut:],
                        upload_id,
                        item["Initiated"].timestamp(),
                        self._parts_size(key, upload_id),
                    )
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(f"listing the incomplete uploads under {relative}", exc) from None

    def _parts_size(self, key: str, upload_id: str) -> int:
        pages = self._client.get_paginator("list_parts").paginate(
            Bucket=self.location.bucket, Key=key, UploadId=upload_id
        )
        return sum(int(part["Size"]) for page in pages for part in page.get("Parts", []))

    def abort(self, upload: Upload) -> None:
        """Abort an incomplete multipart upload: the bucket drops the parts it holds."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._client.abort_multipart_upload(
                Bucket=self.location.bucket,
                Key=self.location.key(upload.relative),
                UploadId=upload.upload_id,
            )
        except ClientError as exc:
            if _status(exc) == 404:  # completed or aborted since it was listed
                return
            raise self._fail(f"abort of the upload of {upload.relative}", exc) from None
        except BotoCoreError as exc:
            raise self._fail(f"abort of the upload of {upload.relative}", exc) from None

    def presign(self, relative: str, *, expires_s: int = PRESIGNED_S) -> str:
        """A URL that GETs the object without credentials for ``expires_s`` seconds."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            url: str = self._client.generate_presigned_url(
                "get_object",
                Params={"Bucket": self.location.bucket, "Key": self.location.key(relative)},
                ExpiresIn=expires_s,
            )
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(f"presigning {relative}", exc) from None
        return url

    def touch(self, relative: str) -> bool:
        """Make the object's ``LastModified`` now (what ``gc --blobs`` measures a blob's age
        from) by copying it onto itself with its metadata replaced, as S3 allows; in parts
        (the managed copy) when it is larger than ``multipart_bytes``. False when there is no
        such object."""
        from boto3.s3.transfer import TransferConfig
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.location.key(relative)
        source = {"Bucket": self.location.bucket, "Key": key}
        stamp = {"MetadataDirective": "REPLACE", "Metadata": {"pinbench-touched": "1"}}
        config = TransferConfig(
            multipart_threshold=self.multipart_bytes, multipart_chunksize=self.multipart_bytes
        )
        try:
            self._client.copy(source, self.location.bucket, key, ExtraArgs=stamp, Config=config)
        except ClientError as exc:
            if _status(exc) == 404:
                return False
            raise self._fail(f"touch of {relative}", exc) from None
        except BotoCoreError as exc:
            raise self._fail(f"touch of {relative}", exc) from None
        return True

    def delete(self, relative: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._client.delete_object(Bucket=self.location.bucket, Key=self.location.key(relative))
        except (BotoCoreError, ClientError) as exc:
            raise self._fail(f"delete of {relative}", exc) from None
