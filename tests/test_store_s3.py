"""Blobs in S3-compatible object storage (issue 38, decision 151), against a real S3 server
(SeaweedFS on loopback, ``tests/s3server.py``): a digits run end to end with its blobs in a
bucket, a large blob uploaded in parts, ``fsck`` and ``gc --blobs`` over the bucket, and the
settings and failures refused with nothing recorded; ``verify`` and ``fsck`` hashing the
bucket's bytes without keeping them, incomplete uploads reported and aborted, and the bounded
local copies (issue 48 item 8, decision 210). The store's contract on both back ends
is in tests/test_store.py (``store_on``)."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import yaml

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.objects import Bucket, Location
from pinbench.artifacts.s3store import S3BlobStore
from pinbench.artifacts.store import BlobStore, ChecksumMismatch, StageWriter
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.remote import Remote
from pinbench.sdk.registry import Registry
from pinbench.workspace import Workspace
from tests.apiserver import api_server
from tests.helpers import (
    DIGITS_ACCURACY,
    Cli,
    dataset_manifest,
    dump,
    in_process_cli,
    sha,
    write_files,
)
from tests.pg import closed_port
from tests.s3server import S3Server, WeedMini, s3_settings

FILES = {"x.npy": b"x-bytes", "y.npy": b"y-bytes"}


def _keys(s3: S3Server, prefix: str) -> list[str]:
    pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket="pinbench", Prefix=prefix)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def _prefix(store: S3BlobStore) -> str:
    return store.bucket.location.key("")


def _cli(
    tmp_path: Path,
    s3: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[Cli, Workspace]:
    """The CLI on a home whose blobs are in a fresh prefix of the bucket, and its workspace."""
    home = tmp_path / "home"
    settings = s3_settings(s3, home, monkeypatch)
    cli = in_process_cli(monkeypatch, capsys, home)
    assert cli("init").code == 0
    return cli, Workspace(settings)


def test_digits_published_locked_verified_and_run_with_blobs_in_a_bucket(
    tmp_path: Path,
    s3: S3Server,
    catalog_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli, ws = _cli(tmp_path, s3, monkeypatch, capsys)
    store = ws.store
    assert isinstance(store, S3BlobStore)
    for manifest in sorted(catalog_dir.glob("*.yaml")):
        published = cli("publish", str(manifest))
        assert published.code == 0, published.err
    lock = tmp_path / "digits.lock"
    locked = cli("lock", str(dump(tmp_path / "request.yaml", DIGITS_ACCURACY)), "-o", str(lock))
    assert locked.code == 0, locked.err
    pinned = {
        f["sha256"] for a in yaml.safe_load(lock.read_text())["artifacts"] for f in a["files"]
    }
    keys = set(_keys(s3, _prefix(store)))
    assert {f"{_prefix(store)}blobs/{d[:2]}/{d}" for d in pinned} <= keys, "same layout as a home"

    shutil.rmtree(store.blobs)  # a machine that has read nothing yet: everything comes from S3
    verified = cli("verify", str(lock))
    assert verified.code == 0, verified.err
    assert not any(store.path(Digest(d)).exists() for d in pinned), "verify streams, keeps none"
    ran = cli("run", str(lock), "--runner", "local")
    assert ran.code == 0, ran.err
    assert all(store.path(Digest(d)).is_file() for d in pinned), "a run reads cached copies"
    (run,) = json.loads(cli("runs", "list", "--json").out)
    assert run["status"] == "succeeded"
    after = set(_keys(s3, _prefix(store)))
    assert len(after) > len(keys), "the run's own blobs (latencies, outputs) were uploaded"
    checked = cli("fsck")
    assert checked.code == 0, checked.out + checked.err
    assert "no problems" in checked.out

    # issue 48 item 8: the bucket is the truth, whatever copy is warm here
    model = next(
        f for a in yaml.safe_load(lock.read_text())["artifacts"] if a["kind"] == "model"
        for f in a["files"]
    )  # fmt: skip
    key = f"{_prefix(store)}{store.relative(Digest(model['sha256']))}"
    original = store.path(Digest(model["sha256"])).read_bytes()  # the warm, intact copy
    s3.client().put_object(Bucket="pinbench", Key=key, Body=original[:-1] + b"!")
    for rehash in ((), ("--rehash",)):
        changed = cli("verify", str(lock), *rehash)
        assert changed.code == 1, changed.out + changed.err
        assert "all match" not in changed.out
        said = "".join(changed.err.split())  # the console wraps long lines
        assert "checksummismatchformodel/" in said
        assert f":{model['path']}:expectedsha256{model['sha256']},got" in said
    s3.client().put_object(Bucket="pinbench", Key=key, Body=original)
    assert cli("verify", str(lock)).code == 0


def test_a_blob_larger_than_the_part_size_is_uploaded_in_parts(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = s3_settings(s3, tmp_path / "a", monkeypatch)
    assert settings.blobs is not None
    location = Location.parse(settings.blobs, endpoint=settings.s3_endpoint)
    part = 5 * 1024 * 1024  # S3's smallest part
    writer = S3BlobStore(tmp_path / "a", Bucket(location, multipart_bytes=part))
    data = os.urandom(2 * part + 12345)
    source = tmp_path / "big.bin"
    source.write_bytes(data)
    digest = writer.put_bytes(data)
    head = s3.client().head_object(Bucket="pinbench", Key=location.key(writer.relative(digest)))
    assert head["ContentLength"] == len(data)
    assert head["ETag"].strip('"').endswith("-3"), "three parts: 5 MiB, 5 MiB and the rest"
    reader = S3BlobStore(tmp_path / "b", Bucket(location))  # another machine
    assert reader.verify(digest, label="big.bin", size=len(data)).read_bytes() == data
    assert list(reader.tmp.iterdir()) == []


def test_fsck_and_gc_blobs_over_the_bucket(
    tmp_path: Path,
    s3: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli, ws = _cli(tmp_path, s3, monkeypatch, capsys)
    store = ws.store
    assert isinstance(store, S3BlobStore)
    src = tmp_path / "src"
    dump(src / "kept.yaml", dataset_manifest("kept", "1.0.0", write_files(src, FILES)))
    assert cli("publish", str(src / "kept.yaml")).code == 0
    assert cli("fsck").code == 0
    orphan = store.put_bytes(b"an upload whose row was never written").hex
    x, y = sha(b"x-bytes"), sha(b"y-bytes")
    bucket = s3.client()
    bucket.delete_object(Bucket="pinbench", Key=f"{_prefix(store)}blobs/{x[:2]}/{x}")
    bucket.put_object(Bucket="pinbench", Key=f"{_prefix(store)}blobs/{y[:2]}/{y}", Body=b"y-bytez")
    bucket.put_object(Bucket="pinbench", Key=f"{_prefix(store)}blobs/ab/notes.txt", Body=b"hand")
    # an upload cut short (its process killed after one part): the bucket keeps the part
    cut = sha(b"never completed")
    cut_key = f"{_prefix(store)}blobs/{cut[:2]}/{cut}"
    begun = bucket.create_multipart_upload(Bucket="pinbench", Key=cut_key)["UploadId"]
    bucket.upload_part(
        Bucket="pinbench", Key=cut_key, UploadId=begun, PartNumber=1, Body=b"p" * 4096
    )
    shutil.rmtree(store.blobs)  # issue 48 item 8: fsck keeps no copy of what it hashes

    found = cli("fsck", "--json")
    assert found.code == 1, found.err
    problems = {(p["kind"], p["path"]) for p in json.loads(found.out)["problems"]}
    assert (
        problems
        == {
            ("unreferenced", f"blobs/{orphan[:2]}/{orphan}"),
            ("missing", f"blobs/{x[:2]}/{x}"),
            ("corrupt", f"blobs/{y[:2]}/{y}"),  # the bucket's bytes hashed, not the local copy's
            ("stray", "blobs/ab/notes.txt"),
            ("upload", f"blobs/{cut[:2]}/{cut}"),
        }
    )
    (upload,) = [p for p in json.loads(found.out)["problems"] if p["kind"] == "upload"]
    assert "4,096 bytes" in upload["detail"]
    assert not store.blobs.exists() or not any(store.blobs.rglob("*")), "no copy was kept"

    young = json.loads(cli("gc", "--blobs", "--json").out)  # the default grace, 1h
    assert young["uploads"] == [] and young["young_uploads"] == 1
    dry = cli("gc", "--blobs", "--grace", "0")
    assert dry.code == 0 and f"would remove {orphan}" in dry.out
    assert f"would abort the incomplete upload of blobs/{cut[:2]}/{cut}" in dry.out
    assert store.has(Digest(orphan))
    done = cli("gc", "--blobs", "--grace", "0", "--yes", "--json")
    assert done.code == 0, done.err
    assert [b["sha256"] for b in json.loads(done.out)["blobs"]] == [orphan]
    assert [(u["path"], u["upload_id"], u["bytes"]) for u in json.loads(done.out)["uploads"]] == [
        (f"blobs/{cut[:2]}/{cut}", begun, 4096)
    ]
    assert (
        bucket.list_multipart_uploads(Bucket="pinbench", Prefix=_prefix(store)).get("Uploads", [])
        == []
    ), "aborted: the bucket dropped its parts"
    assert not store.has(Digest(orphan)) and not store.path(Digest(orphan)).exists()
    assert f"{_prefix(store)}blobs/{y[:2]}/{y}" in _keys(s3, _prefix(store)), "referenced: kept"


@pytest.mark.parametrize(
    ("env", "code", "needle"),
    [
        (
            {"PINBENCH_BLOBS": "/srv/blobs"},
            1,
            "invalid PINBENCH_BLOBS '/srv/blobs': expected s3://",
        ),
        ({"PINBENCH_BLOBS": "s3://No_Such"}, 1, "'No_Such' is not a bucket name"),
        ({"PINBENCH_BLOBS": "s3://pinbench/a b"}, 1, "prefix 'a b'"),
        ({"PINBENCH_S3_ENDPOINT": "127.0.0.1:9"}, 1, "PINBENCH_S3_ENDPOINT must be http(s)://"),
        ({"AWS_SECRET_ACCESS_KEY": "wrong"}, 3, "access denied: check the AWS credentials"),
        ({"PINBENCH_BLOBS": "s3://no-such-bucket"}, 3, "no bucket 'no-such-bucket': create it"),
        ({"PINBENCH_S3_ENDPOINT": "http://127.0.0.1:{CLOSED}"}, 3, "object storage s3://"),
    ],
    ids=["not a url", "bucket", "prefix", "endpoint", "credentials", "no bucket", "no server"],
)
def test_bad_settings_and_refusals_publish_nothing(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    s3: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    code: int,
    needle: str,
) -> None:
    """A clear error naming the setting or the bucket; no row, no object, no temp file."""
    cli, ws = _cli(tmp_path, s3, monkeypatch, capsys)
    prefix = str(ws.settings.blobs).removeprefix("s3://pinbench/")
    closed = closed_port(request)  # "no server": nothing can answer on it
    for name, value in env.items():
        monkeypatch.setenv(name, value.replace("{CLOSED}", str(closed)))
    src = tmp_path / "src"
    dump(src / "kept.yaml", dataset_manifest("kept", "1.0.0", write_files(src, FILES)))
    refused = cli("publish", str(src / "kept.yaml"))
    assert refused.code == code, refused.err
    assert needle in refused.err and "Traceback" not in refused.err
    monkeypatch.delenv("PINBENCH_BLOBS")
    assert json.loads(cli("list", "--json").out) == []
    assert _keys(s3, prefix) == []
    assert not (ws.settings.home / "blobs").exists() or not any(
        (ws.settings.home / "blobs").rglob("*-*")
    )
    assert list((ws.settings.home / "tmp").iterdir()) == []


def test_a_server_on_s3_redirects_blob_downloads_to_the_bucket_and_the_client_checks_them(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GET /api/v1/blobs/{sha256}`` answers 307 to a presigned URL (the server not in the
    data path); the client follows it without its token and checks every byte."""
    home, db = tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}"
    settings = s3_settings(s3, home, monkeypatch, db)  # the server inherits the environment
    with api_server(home, db) as srv, srv.client("reader") as http:
        store = Workspace(settings).store
        assert isinstance(store, S3BlobStore)
        digest = store.put_bytes(b"weights")
        answer = http.get(f"/api/v1/blobs/{digest.hex}")
        assert answer.status_code == 307, answer.text
        url = answer.headers["location"]
        assert url.startswith(f"{s3.endpoint}/pinbench/") and "Signature" in url
        assert httpx.get(url).content == b"weights", "no pinbench token: the URL is the grant"
        assert http.get(f"/api/v1/blobs/{'0' * 64}").status_code == 404
        remote = Remote(srv.url, srv.tokens["reader"])
        try:
            assert b"".join(remote.blob(digest.hex)) == b"weights"
            key = store.bucket.location.key(store.relative(digest))
            s3.client().put_object(Bucket="pinbench", Key=key, Body=b"weightz")
            (tmp_path / "agent").mkdir()
            writer = StageWriter(tmp_path / "agent")  # what an agent's fetch does with them
            for chunk in remote.blob(digest.hex):
                writer.write(chunk)
            with pytest.raises(ChecksumMismatch):
                writer.finish(label="model.onnx", expected=digest, size=None)
        finally:
            remote.close()
        assert list((tmp_path / "agent").iterdir()) == []


def test_the_settings_choose_the_back_end(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PINBENCH_BLOBS`` is read with the rest of the environment, also when the Python API
    is given only a database URL; unset, the home's folder as before."""
    s3_settings(s3, tmp_path / "home", monkeypatch)
    monkeypatch.setenv("PINBENCH_HOME", str(tmp_path / "home"))
    with Registry(database_url=f"sqlite:///{tmp_path / 'other.db'}") as reg:
        assert isinstance(reg.workspace().store, S3BlobStore)
    monkeypatch.delenv("PINBENCH_BLOBS")
    with Registry() as reg:
        assert type(reg.workspace().store) is BlobStore


def test_a_second_home_on_the_same_bucket_publishes_what_is_already_there(
    tmp_path: Path, s3: S3Server, catalog_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files the bucket already has are not uploaded again, and their format checks read
    them through this home's cache (downloaded and verified), not a folder that lacks them."""
    first = s3_settings(s3, tmp_path / "a", monkeypatch)
    second = replace(first, home=tmp_path / "b", database_url=f"sqlite:///{tmp_path / 'b.db'}")
    for settings in (first, second):
        ws = Workspace(settings)
        ws.init()
        try:
            for manifest in sorted(catalog_dir.glob("*.yaml")):
                publish(ws, load_manifest(manifest), manifest_dir=catalog_dir, publisher="t")
        finally:
            ws.close()
    with Registry(database_url=second.database_url) as reg:
        monkeypatch.setenv("PINBENCH_HOME", str(second.home))
        assert reg.admin().check_store().problems == []


def test_a_bucket_registry_is_backed_up_and_restored_into_another_prefix(
    tmp_path: Path,
    s3: S3Server,
    catalog_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``backup`` reads the referenced blobs from the bucket (through the verified cache, so a
    machine that has read nothing yet backs up too); ``restore`` into a home on another
    prefix uploads them there; ``--no-blobs`` lists the bucket's sizes without downloading."""
    cli, ws = _cli(tmp_path, s3, monkeypatch, capsys)
    store = ws.store
    assert isinstance(store, S3BlobStore)
    for manifest in sorted(catalog_dir.glob("*.yaml")):
        assert cli("publish", str(manifest)).code == 0
    lock = tmp_path / "digits.lock"
    assert cli("lock", str(dump(tmp_path / "r.yaml", DIGITS_ACCURACY)), "-o", str(lock)).code == 0
    assert cli("run", str(lock), "--runner", "local").code == 0
    shutil.rmtree(store.blobs)

    listed = cli("backup", str(tmp_path / "listed"), "--no-blobs", "--json")
    assert listed.code == 0, listed.err
    cached = {p.name for p in store.blobs.glob("*/*")} if store.blobs.exists() else set()
    made = cli("backup", str(tmp_path / "backup"), "--json")
    assert made.code == 0, made.err
    assert {p.name for p in store.blobs.glob("*/*")} == cached, "the cache did not grow by it"
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    sizes = {b["sha256"]: b["size"] for b in manifest["blobs"]}
    assert sizes == {
        b["sha256"]: b["size"]
        for b in json.loads((tmp_path / "listed" / "manifest.json").read_text())["blobs"]
    }
    assert len(cached) < len(sizes), "--no-blobs read only the attestations (what they name)"
    for digest, size in sizes.items():
        kept = tmp_path / "backup" / "blobs" / digest[:2] / digest
        assert kept.stat().st_size == size and sha(kept.read_bytes()) == digest

    target = s3_settings(s3, tmp_path / "restored", monkeypatch)
    restored = in_process_cli(monkeypatch, capsys, target.home)("restore", str(tmp_path / "backup"))
    assert restored.code == 0, restored.out + restored.err
    assert restored.out.strip().endswith("no problems")
    assert target.blobs is not None
    prefix = target.blobs.removeprefix("s3://pinbench/")
    assert {f"{prefix}/blobs/{d[:2]}/{d}" for d in sizes} <= set(_keys(s3, prefix))
    again = in_process_cli(monkeypatch, capsys, target.home)
    shutil.rmtree(target.home / "blobs")  # restore's own check read the bucket through it
    assert again("verify", str(lock)).code == 0
    assert again("fsck").code == 0


def test_local_copies_are_bounded_least_recently_used_first_and_evicted_on_demand(
    tmp_path: Path,
    s3: S3Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 48 item 8: every upload and download leaves a local copy; past
    ``PINBENCH_CACHE_MAX`` the least recently used go (not those used in the last minute, nor
    those a run holds); ``gc --cache`` evicts on demand; the bucket keeps every blob."""
    monkeypatch.setenv("PINBENCH_CACHE_MAX", "2500")
    cli, ws = _cli(tmp_path, s3, monkeypatch, capsys)
    store = Workspace(replace(ws.settings, cache_max="2500")).store  # as the CLI reads it
    assert isinstance(store, S3BlobStore) and store.copies.max_bytes == 2500
    a, b, c = (store.put_bytes(os.urandom(1000)) for _ in range(3))

    def copies() -> set[str]:
        return {p.name for p in store.blobs.glob("??/*")}

    assert copies() == {a.hex, b.hex, c.hex}, "over the limit, but all used this minute"

    hour = 3600.0
    for digest, ago in ((a, 3 * hour), (b, 2 * hour), (c, hour)):  # as if used hours ago
        then = time.time() - ago
        for path in (store.path(digest), store.copies.marker(digest)):
            os.utime(path, (then, then))
    assert store.local(a).is_file()  # a read is a use: a is now the most recent
    d = store.put_bytes(os.urandom(1000))
    assert copies() == {a.hex, d.hex}, "b then c, the least recently used, went"
    assert all(store.has(x) for x in (a, b, c, d)), "the bucket keeps them all"
    assert not store.copies.marker(b).exists()
    assert store.verify(b, label="b", size=1000).is_file(), "read again from the bucket"

    with store.held([a]):  # a run reading a
        held = cli("gc", "--cache", "--keep", "0", "--json")
        assert held.code == 0, held.err
        assert json.loads(held.out) == {
            "limit": 0, "removed": 2, "removed_bytes": 2000, "kept": 1, "kept_bytes": 1000,
            "held": 1, "recent": 0,
        }  # fmt: skip
        assert copies() == {a.hex}
    emptied = cli("gc", "--cache", "--keep", "0")
    assert emptied.code == 0, emptied.err
    assert "evicted 1 local copy, 1,000 bytes; kept 0, 0 bytes" in emptied.out
    assert copies() == set() and store.has(a)

    bad = cli("gc", "--cache", "--keep", "lots")
    assert bad.code == 1 and "invalid --keep 'lots'" in bad.err
    monkeypatch.setenv("PINBENCH_CACHE_MAX", "3 bytes")
    assert "invalid PINBENCH_CACHE_MAX '3 bytes'" in cli("gc", "--cache").err
    monkeypatch.delenv("PINBENCH_BLOBS")
    own = cli("gc", "--cache")
    assert own.code == 1 and "which is the blob store itself, not a cache" in own.err


def _read_only(weed: WeedMini, location: str, *, on: bool) -> None:
    """SeaweedFS's own read-only mode for the folder of ``location`` (``BUCKET/PREFIX``), the
    filer's path configuration (``weed shell fs.configure -readOnly``): its S3 gateway then
    refuses every write there, as it does when its disk is full (HTTP 500 InternalError)."""
    import subprocess

    from tests.s3server import _weed

    where = f"-locationPrefix=/buckets/{location}/"
    command = f"fs.configure {where} {'-readOnly' if on else '-delete'} -apply\n"
    master = f"-master=127.0.0.1:{weed.ports['master']}"
    done = subprocess.run(
        [_weed(), "shell", master], input=command, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_bucket_refusing_writes_answers_a_publish_507_and_readiness_names_it(
    tmp_path: Path, s3_weed: tuple[S3Server, WeedMini], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 83 item 5: with the object store refusing writes, a publish got `server error
    500: internal error (S3UploadFailedError)` naming neither bucket nor cause, and readiness
    (a HEAD of the bucket) stayed 200. Now the publish is 507 naming the bucket and the store's
    answer, and readiness writes a tiny object (``ready/``) and says the bucket refuses writes;
    both well again once it takes them."""
    from tests.test_monitoring_outage import _failed, _publish

    s3, weed = s3_weed
    home, db = tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}"
    settings = s3_settings(s3, home, monkeypatch, db)  # the server inherits the environment
    assert settings.blobs is not None
    location = settings.blobs.removeprefix("s3://")
    with api_server(home, db) as srv, srv.client("owner") as http:
        before = http.get("/api/v1/ready")
        _read_only(weed, location, on=True)
        try:
            refused = _publish(http, "1.0.0")
            down = http.get("/api/v1/ready")
        finally:
            _read_only(weed, location, on=False)
        again = http.get("/api/v1/ready")
        after = _publish(http, "1.0.0")
    assert before.status_code == 200, before.text
    assert refused.status_code == 507, refused.text  # was: 503, "try again in 5 s"
    problem = refused.json()
    assert problem["error"] == "WriteRefusedForNow", problem
    assert "bucket 'pinbench' refused it: HTTP 500 InternalError" in problem["detail"], problem
    assert "retry-after" not in refused.headers
    assert down.status_code == 503, down.text  # was: 200
    assert _failed(down) == {"object_store": "it refuses writes: InternalError (HTTP 500)"}
    assert again.status_code == 200, again.text
    assert after.status_code == 201, after.text
    left = _keys(s3, f"{location.split('/', 1)[1]}/ready/")
    assert left == [], "the probe's object is deleted"
