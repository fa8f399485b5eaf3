"""The blob store and the verified-state cache."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.artifacts import verified
from pinbench.artifacts.digest import Digest, DigestError, hash_file
from pinbench.artifacts.store import BlobMissing, BlobStore, ChecksumMismatch
from tests.helpers import sha


def test_stage_and_commit_stores_by_digest(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello" * 1000)
    staged = store.stage(src, label="src.bin")
    assert staged.digest.hex == sha(b"hello" * 1000)
    assert not store.has(staged.digest), "staged bytes are not visible before commit"
    assert store.commit(staged) is True
    assert store.path(staged.digest).read_bytes() == b"hello" * 1000
    assert store.commit(store.stage(src, label="src.bin")) is False, "a second copy is dropped"
    assert list(store.tmp.iterdir()) == []


def test_stage_with_wrong_digest_leaves_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    src = tmp_path / "src.bin"
    src.write_bytes(b"abc")
    wrong = Digest("0" * 64)
    with pytest.raises(ChecksumMismatch) as info:
        store.stage(src, label="weights.onnx", expected=wrong)
    assert info.value.path == "weights.onnx"
    assert info.value.expected == wrong
    assert info.value.actual.hex == sha(b"abc")
    assert "0" * 64 in str(info.value) and sha(b"abc") in str(info.value)
    assert list(store.tmp.iterdir()) == []
    assert list(store.iter_digests()) == []


def test_verify_detects_a_flipped_byte(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    digest = store.put_bytes(b"model bytes")
    assert store.verify(digest, label="m") == store.path(digest)
    blob = store.path(digest)
    blob.chmod(0o644)
    blob.write_bytes(b"Model bytes")
    with pytest.raises(ChecksumMismatch) as info:
        store.verify(digest, label="model.onnx")
    assert info.value.actual.hex == sha(b"Model bytes")


def test_verify_of_missing_blob(tmp_path: Path) -> None:
    with pytest.raises(BlobMissing, match=r"model\.onnx"):
        BlobStore(tmp_path).verify(Digest("1" * 64), label="model.onnx")


def test_reverify_of_unchanged_file_does_not_rehash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(tmp_path)
    src = tmp_path / "f"
    src.write_bytes(b"x" * 10_000)
    d1, _, hashed1 = store.cache.digest(src)
    calls: list[Path] = []
    real = hash_file

    def counting(path: Path, **kw: Any) -> tuple[Digest, int]:
        calls.append(path)
        return real(path, **kw)

    monkeypatch.setattr(verified, "hash_file", counting)
    d2, _, hashed2 = store.cache.digest(src)
    assert (hashed1, hashed2, calls) == (True, False, [])
    assert d1 == d2


def test_rewrite_that_restores_mtime_is_still_rehashed(tmp_path: Path) -> None:
    """ctime is in the key: `touch -d` can restore mtime but never ctime."""
    store = BlobStore(tmp_path)
    src = tmp_path / "f"
    src.write_bytes(b"aaaa")
    st = src.stat()
    store.cache.digest(src)
    src.write_bytes(b"bbbb")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    digest, _, hashed = store.cache.digest(src)
    assert hashed is True
    assert digest.hex == sha(b"bbbb")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("sha256:" + "a" * 64, True),  # prefixed form
        ("b" * 64, True),  # bare hex
        ("A" * 64, False),  # uppercase is not canonical
        ("a" * 63, False),  # too short
        ("md5:" + "a" * 32, False),  # other algorithms are not digests here
    ],
)
def test_digest_parse(text: str, ok: bool) -> None:
    if ok:
        assert Digest.parse(text).hex == text.removeprefix("sha256:")
    else:
        with pytest.raises(DigestError, match="invalid sha256 digest"):
            Digest.parse(text)


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=20_000))
def test_publish_then_fetch_returns_the_same_digest(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        store = BlobStore(Path(d))
        digest = store.put_bytes(data)
        assert digest.hex == sha(data)
        assert store.verify(digest, label="x").read_bytes() == data
