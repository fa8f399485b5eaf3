"""Real sources built by the tests, all local: an HTTP server on 127.0.0.1 that can cut
connections and ignore ranges, a Hugging Face hub cache laid out as ``huggingface_hub`` keeps
it (read with ``HF_HUB_OFFLINE=1``), and a git + DVC repository with a local DVC remote."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------- HTTP


@dataclass
class Site:
    """What the server serves and how it misbehaves; ``requests`` logs (path, Range)."""

    files: dict[str, bytes] = field(default_factory=dict)
    cuts: dict[str, list[int]] = field(default_factory=dict)
    """Per path: for each of the next responses, how many body bytes to send before closing."""
    ranges: bool = True
    lengths: dict[str, str] = field(default_factory=dict)
    """Per path: the Content-Length header sent instead of the body's (the connection then
    closes after the body, so a client can still read it to the end)."""
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        site: Site = self.server.site  # type: ignore[attr-defined]
        wanted = self.headers.get("Range")
        site.requests.append((self.path, wanted))
        data = site.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start = 0
        if wanted and site.ranges:
            start = int(wanted.removeprefix("bytes=").split("-")[0])
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", site.lengths.get(self.path, str(len(body))))
        if self.path in site.lengths:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest()[:16] + '"')
        self.end_headers()
        cuts = site.cuts.get(self.path)
        if cuts:
            self.wfile.write(body[: cuts.pop(0)])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(body)


@contextmanager
def http_site() -> Iterator[Site]:
    site = Site()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.site = site  # type: ignore[attr-defined]
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------- Hugging Face cache


def hf_commit(cache: Path, repo_id: str, files: dict[str, bytes], *, refs: list[str]) -> str:
    """Add a commit holding ``files`` to the cached repo and point ``refs`` at it; return it."""
    commit = hashlib.sha1(repr(sorted(files.items())).encode()).hexdigest()
    folder = cache / f"models--{repo_id.replace('/', '--')}"
    for rel, data in files.items():
        blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = folder / "snapshots" / commit / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    for ref in refs:
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / ref).write_text(commit)
    return commit


# ---------------------------------------------------------------- git + DVC


@dataclass(frozen=True)
class DvcRepo:
    path: Path
    remote: Path
    commits: dict[str, str]
    """Tag → commit."""


def _run(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@127.0.0.1",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@127.0.0.1",
    }
    cmd = [sys.executable, "-m", "dvc", *args[1:]] if args[0] == "dvc" else list(args)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done.stdout.strip()


def dvc_repo(root: Path, versions: dict[str, dict[str, bytes]]) -> DvcRepo:
    """A git repository whose files DVC tracks, one tagged commit per version (in order),
    pushed to a local DVC remote; the repository's own DVC cache is then emptied so reads
    come from the remote."""
    repo, remote = root / "repo", root / "remote"
    repo.mkdir(parents=True)
    _run(repo, "git", "init", "-q", "-b", "main")
    _run(repo, "dvc", "init", "-q")
    _run(repo, "dvc", "config", "core.analytics", "false")
    _run(repo, "dvc", "remote", "add", "-d", "local", str(remote))
    commits = {}
    for tag, files in versions.items():
        for rel, data in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes(data)
        _run(repo, "dvc", "add", "-q", *files)
        _run(repo, "git", "add", "-A")
        _run(repo, "git", "commit", "-q", "-m", tag)
        _run(repo, "git", "tag", tag)
        commits[tag] = _run(repo, "git", "rev-parse", "HEAD")
        _run(repo, "dvc", "push", "-q")
    shutil.rmtree(repo / ".dvc" / "cache")
    return DvcRepo(repo, remote, commits)
