"""The blob store on a filesystem of its own, and a full one (issue 38, decision 144).

Each test mounts a real tmpfs on ``HOME/blobs`` in a mount namespace of its own (``unshare
--mount``, a holder process sleeping in it) and runs the real CLI, or a real ``pinbench
serve``, inside it with ``nsenter``; the test reads that namespace's view of the home through
``/proc/HOLDER/root``. Needs root and util-linux: skipped otherwise, never under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.apiserver import seed_home, serve_process
from tests.helpers import dataset_manifest, dump, sha, write_files

BIN = Path(sys.executable).parent


@dataclass
class Mounted:
    """A tmpfs on ``home/blobs``, seen only by processes in the holder's mount namespace."""

    holder: subprocess.Popen[bytes]
    home: Path

    def enter(self) -> list[str]:
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--"]

    def seen(self, path: Path) -> Path:
        """``path`` as the namespace sees it."""
        return Path(f"/proc/{self.holder.pid}/root") / path.relative_to("/")

    @staticmethod
    def env_of(home: Path, **extra: str) -> dict[str, str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
        return environ | {"PINBENCH_HOME": str(home), **extra}

    def env(self, **extra: str) -> dict[str, str]:
        return self.env_of(self.home, **extra)

    def pinbench(
        self, *args: str, inside: bool = True, **env: str
    ) -> subprocess.CompletedProcess[str]:
        command = [*(self.enter() if inside else []), str(BIN / "pinbench"), *args]
        return subprocess.run(
            command, env=self.env(**env), capture_output=True, text=True, timeout=300
        )

    def scratch(self) -> list[str]:
        """Every scratch file left in the home's ``tmp`` and the store's staging folder."""
        folders = [
            self.seen(self.home / "tmp"),
            self.seen(self.home / "blobs" / ".staging" / "tmp"),
        ]
        return sorted(p.name for f in folders if f.is_dir() for p in f.iterdir())

    def blobs(self) -> list[str]:
        root = self.seen(self.home / "blobs")
        return sorted(p.name for p in root.glob("??/*"))


def _refuse(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: this test must run)")
    pytest.skip(reason)


@contextmanager
def blobs_mounted(home: Path, size: str, *, whole_home: bool = False) -> Iterator[Mounted]:
    """``home`` initialised, then a tmpfs of ``size`` mounted on its ``blobs`` (on the whole
    home, initialised inside it, with ``whole_home``: ``tmp`` and ``blobs`` on one small
    filesystem)."""
    if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("nsenter")):
        _refuse("needs root, unshare and nsenter (util-linux) to mount a tmpfs")
    target = home if whole_home else home / "blobs"
    target.mkdir(parents=True, exist_ok=True)
    script = 'mount -t tmpfs -o size="$1" none "$2" && echo up && exec sleep 100000'
    unshare = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]
    if not whole_home:
        _init(Mounted.env_of(home), [])
    holder = subprocess.Popen([*unshare, size, str(target)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None
        if holder.stdout.readline() != b"up\n":
            _refuse("unshare --mount could not mount a tmpfs here")
        mounted = Mounted(holder, home)
        if whole_home:
            _init(mounted.env(), mounted.enter())
        else:
            assert os.stat(mounted.seen(home / "blobs")).st_dev != os.stat(home / "tmp").st_dev
        yield mounted
    finally:
        holder.kill()
        holder.wait()


def _init(env: dict[str, str], prefix: list[str]) -> None:
    done = subprocess.run(
        [*prefix, str(BIN / "pinbench"), "init"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _dataset(folder: Path, name: str, files: dict[str, bytes]) -> Path:
    entries = write_files(folder, files)
    return dump(folder / "dataset.yaml", dataset_manifest(name, "1.0.0", entries))


def _listed(m: Mounted) -> list[Any]:
    import json

    shown = m.pinbench("list", "--json")
    assert shown.returncode == 0, shown.stderr
    found: list[Any] = json.loads(shown.stdout)
    return found


def test_cli_publish_stores_into_blobs_on_their_own_filesystem(tmp_path: Path) -> None:
    data = os.urandom(300_000)
    manifest = _dataset(tmp_path / "src", "mounted", {"x.npy": data, "y.npy": b"yy"})
    with blobs_mounted(tmp_path / "home", "64m") as m:
        done = m.pinbench("publish", str(manifest))
        assert done.returncode == 0, done.stderr  # was: [Errno 18] Invalid cross-device link
        assert m.blobs() == sorted([sha(data), sha(b"yy")])
        assert not list((m.home / "blobs").glob("??/*"))  # on the tmpfs, not beneath it
        assert m.scratch() == []
        checked = m.pinbench("show", "dataset/mounted@1.0.0")
        assert checked.returncode == 0, checked.stderr


def _upload(url: str, token: str, manifest: Path, files: dict[str, bytes]) -> httpx.Response:
    boundary = "bOuNdArY"
    body = f'--{boundary}\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n'.encode()
    body += manifest.read_bytes() + b"\r\n"
    for name, data in files.items():
        disposition = f'form-data; name="file"; filename="{name}"'
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
        body += data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    headers = {
        "Authorization": f"Bearer {token}",
        "content-type": f"multipart/form-data; boundary={boundary}",
    }
    return httpx.post(f"{url}/api/v1/artifacts", content=body, headers=headers, timeout=120)


def test_upload_through_a_server_stores_into_blobs_on_their_own_filesystem(
    tmp_path: Path,
) -> None:
    files = {"x.npy": os.urandom(200_000), "y.npy": b"yy"}
    manifest = _dataset(tmp_path / "src", "vision/uploaded", files)
    home, url = tmp_path / "home", f"sqlite:///{tmp_path / 'home' / 'pinbench.sqlite'}"
    with blobs_mounted(home, "64m") as m:
        tokens, _ = seed_home(home, url)
        with serve_process(home, url, prefix=m.enter()) as (server, _proc):
            answer = _upload(server, tokens["admin"], manifest, files)
            assert answer.status_code == 201, answer.text  # was: 500 (cross-device link)
            assert m.blobs() == sorted(sha(d) for d in files.values())
            assert m.scratch() == []


def test_a_full_blob_store_refuses_a_publish_cleanly_and_works_once_space_is_freed(
    tmp_path: Path,
) -> None:
    manifest = _dataset(tmp_path / "src", "fits-later", {"x.npy": os.urandom(400_000)})
    with blobs_mounted(tmp_path / "home", "1m") as m:
        filler = m.seen(m.home / "blobs" / "filler")
        filler.write_bytes(b"\0" * 800_000)
        full = m.pinbench("publish", str(manifest))
        assert full.returncode == 3, full.stderr  # a failure of the system, not of the input
        lines = full.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: the blob store is out of space")
        assert "No space left on device" in lines[0] and "Traceback" not in full.stderr
        assert m.scratch() == [] and m.blobs() == [] and _listed(m) == []
        filler.unlink()
        again = m.pinbench("publish", str(manifest))
        assert again.returncode == 0, again.stderr
        assert len(m.blobs()) == 1 and len(_listed(m)) == 1


def test_a_full_blob_store_answers_an_upload_507_and_leaves_no_temp_file(
    tmp_path: Path,
) -> None:
    files = {"x.npy": os.urandom(400_000)}
    manifest = _dataset(tmp_path / "src", "vision/full", files)
    home, url = tmp_path / "home", f"sqlite:///{tmp_path / 'home' / 'pinbench.sqlite'}"
    with blobs_mounted(home, "1m") as m:
        tokens, _ = seed_home(home, url)
        filler = m.seen(home / "blobs" / "filler")
        filler.write_bytes(b"\0" * 800_000)
        with serve_process(home, url, prefix=m.enter()) as (server, proc):
            answer = _upload(server, tokens["admin"], manifest, files)
            assert answer.status_code == 507, answer.text  # was: 500 "internal error"
            problem = answer.json()
            assert problem["error"] == "StoreFull" and "out of space" in problem["detail"]
            assert proc.poll() is None and m.scratch() == [] and m.blobs() == []
            auth = {"Authorization": f"Bearer {tokens['admin']}"}
            assert httpx.get(f"{server}/api/v1/artifacts", headers=auth).json() == []
            filler.unlink()
            assert _upload(server, tokens["admin"], manifest, files).status_code == 201
            assert m.blobs() == [sha(files["x.npy"])] and m.scratch() == []


def test_readiness_watches_the_blob_store_s_own_disk(tmp_path: Path) -> None:
    """Blobs on a disk of their own with 296 KiB left, the home's disk roomy: not ready, the
    cause naming the blobs' disk alone and what it has (it once said 200 while publishes got
    507); ready again once the blobs' disk has room."""
    home, url = tmp_path / "home", f"sqlite:///{tmp_path / 'home' / 'pinbench.sqlite'}"
    with blobs_mounted(home, "1m") as m:
        seed_home(home, url)
        filler = m.seen(home / "blobs" / "filler")
        filler.write_bytes(b"\0" * (1024 - 296) * 1024)
        serving = serve_process(home, url, "--ready-min-free-mb", "1", prefix=m.enter())
        with serving as (server, _proc), httpx.Client(base_url=server, timeout=30) as c:
            short = c.get("/api/v1/ready")
            filler.unlink()
            roomy = c.get("/api/v1/ready")
    assert short.status_code == 503, short.text
    failed = {k["name"]: k["cause"] for k in short.json()["checks"] if not k["ok"]}
    assert failed == {"free_space": "blobs: 296 KiB free, below 1 MiB"}
    assert roomy.status_code == 200, roomy.text


PUT_BYTES = """
import sys
from pathlib import Path
from pinbench.artifacts.store import BlobStore, StoreFull
try:
    BlobStore(Path(sys.argv[1])).put_bytes(b"r" * 400_000)
except StoreFull as exc:
    print(exc.folder)
"""


def test_a_small_blob_that_does_not_fit_leaves_no_temp_file(tmp_path: Path) -> None:
    """A run's small blobs (latencies, traces, attestations) are written by ``put_bytes``: on
    a full filesystem it used to leave its empty ``bytes-*`` temp file behind."""
    with blobs_mounted(tmp_path / "home", "1m", whole_home=True) as m:
        fs = os.statvfs(m.seen(m.home))  # what the initialised home left (its database grows)
        free = fs.f_bavail * fs.f_frsize
        m.seen(m.home / "filler").write_bytes(b"\0" * (free - 200_000))  # 400 kB will not fit
        command = [*m.enter(), sys.executable, "-c", PUT_BYTES, str(m.home)]
        done = subprocess.run(command, env=m.env(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(m.home / "tmp")
        assert m.scratch() == [] and m.blobs() == []


def _fill(path: Path) -> None:
    """Write zeros into ``path`` until its filesystem has no space left."""
    with path.open("wb") as out, pytest.raises(OSError, match="No space left"):
        while True:
            out.write(b"\0" * 65536)
            out.flush()


def test_a_full_home_is_one_line_naming_the_full_disk_and_hashing_still_works(
    tmp_path: Path,
) -> None:
    """The whole home (database, verified-state cache, blobs) on one full filesystem: a
    command that needs the database says the disk is full, in one line, exit 3; ``digest``
    (which only consults the verified-state cache) hashes without it instead of a traceback;
    once space is freed everything works and nothing was half-written."""
    manifest = _dataset(tmp_path / "src", "after-the-flood", {"x.npy": os.urandom(1000)})
    loose = tmp_path / "loose.bin"
    loose.write_bytes(os.urandom(5000))
    with blobs_mounted(tmp_path / "home", "4m", whole_home=True) as m:
        filler = m.seen(m.home / "filler")
        _fill(filler)
        for args in (["publish", str(manifest)], ["list"], ["runs", "list"]):
            done = m.pinbench(*args)
            assert done.returncode == 3, (args, done.stderr)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
            assert "the disk is full" in lines[0] and str(m.home) in lines[0], lines[0]
        hashed = m.pinbench("digest", str(loose))
        assert hashed.returncode == 0 and "Traceback" not in hashed.stderr, hashed.stderr
        assert hashed.stdout.split()[0] == sha(loose.read_bytes())
        assert "verified-state cache" in hashed.stderr and "hashed again" in hashed.stderr
        filler.unlink()
        assert m.pinbench("publish", str(manifest)).returncode == 0
        assert len(_listed(m)) == 1 and m.scratch() == []
        again = m.pinbench("digest", str(loose))
        assert again.returncode == 0 and again.stderr == "", again.stderr
