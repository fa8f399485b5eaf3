"""The CLI's client for a remote ``pinbench serve``: ``PINBENCH_URL`` and ``PINBENCH_TOKEN``.
A server's problem details become the CLI's own errors: a 4xx a user error (exit 1) with the
server's message, a 5xx or an unreachable server a system failure (exit 3). A request safe to
send twice (a read, a lockfile's ``PUT``) is retried through a server's brief absence
(``pinbench.retrying``: connection errors and 502/503/504, backoff, ``Retry-After``,
``PINBENCH_RETRY_S``), each retry said on stderr; a ``POST`` or ``DELETE`` never is."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import msgspec

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import BlobStore, ChecksumMismatch
from pinbench.errors import UserError
from pinbench.polling import intervals
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import load_manifest, manifest_data
from pinbench.registry.sourcing import locate, needs_completion, stage_files
from pinbench.remote_errors import RemoteFailed, RemoteGaveUp, RemoteRefused, StoppedWaiting
from pinbench.retrying import RETRIED_STATUSES, Retrying, dice, retry_after
from pinbench.tls import http_client
from pinbench.trace.summary import NoTrace

FINISHED = ("succeeded", "failed", "interrupted", "cancelled")
PAGE_LIMIT = 1000
"""The page a client asks for when it follows a paged listing: the server's largest
(``pinbench.api.paging.MAX_LIMIT``)."""
MAX_PAGES = 10_000
"""The most pages a client follows (ten million items): a server that pages for ever stops."""
Row = dict[str, Any]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Remote:
    """``retrying``: how requests that are safe to repeat are retried (default: from
    ``PINBENCH_RETRY_S``); ``notice``: where each retry is said (default: stderr)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retrying: Retrying | None = None,
        notice: Callable[[str], None] = _stderr,
    ) -> None:
        self.url = url.rstrip("/")
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = http_client(self.url, auth, timeout)  # one TLS context per process
        self.retrying = Retrying.from_env(os.environ) if retrying is None else retrying
        self.notice = notice

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Remote | None:
        env = os.environ if environ is None else environ
        url = env.get("PINBENCH_URL")
        return cls(url, env.get("PINBENCH_TOKEN") or None) if url else None

    def close(self) -> None:
        self.client.close()

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request; retried while the server is away when it is safe to repeat."""
        policy, started, tries = self.retrying, time.monotonic(), 0
        while True:
            tries += 1
            after: float | None = None
            error: str | None = None
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if not policy.retries(method):
                    raise RemoteFailed(
                        f"cannot reach the pinbench server at {self.url}: {exc}"
                    ) from exc
                last = f"cannot reach it: {exc or type(exc).__name__}"
            except httpx.HTTPError as exc:
                raise RemoteFailed(
                    f"cannot reach the pinbench server at {self.url}: {exc}"
                ) from exc
            else:
                if response.status_code not in RETRIED_STATUSES or not policy.retries(method):
                    self._refuse(response)
                    return response
                detail, error = _problem(response)
                last = f"it answered {response.status_code} {response.reason_phrase}"
                if detail:
                    last = f"{last}: {detail}"
                after = retry_after(response.headers.get("retry-after"))
            wait = policy.delay(tries, after, dice)
            spent = time.monotonic() - started
            if spent + wait > policy.total_s:
                gave_up = RemoteGaveUp(
                    url=self.url, request=f"{method} {path}", tries=tries, seconds=spent, last=last
                )
                gave_up.error = error
                raise gave_up
            away = (
                "says its database is unavailable" if error == "DatabaseUnavailable" else "is away"
            )
            self.notice(
                f"pinbench: the server at {self.url} {away} ({last}); retrying {method} {path} "
                f"in {wait:.1f} s (for up to {policy.total_s - spent:.0f} s more)"
            )
            time.sleep(wait)

    def _refuse(self, response: httpx.Response) -> None:
        """Raise for a 4xx/5xx answer, with the server's problem detail."""
        if response.status_code < 400:
            return
        detail, error = _problem(response)
        detail = detail or response.text.strip() or response.reason_phrase
        if response.status_code >= 500:
            failed = RemoteFailed(f"server error {response.status_code}: {detail}")
            failed.error = error
            raise failed
        raise RemoteRefused(status=response.status_code, detail=detail, error=error)

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.call(method, path, **kwargs).json()

    def pages(
        self, path: str, params: dict[str, str], after: Callable[[dict[str, Any]], str]
    ) -> list[dict[str, Any]]:
        """Every item of a paged listing (``GET path``, keyset paging: ``limit`` and
        ``after``), asked a page of ``PAGE_LIMIT`` at a time until one is shorter; ``after``
        gives an item's key."""
        rows: list[dict[str, Any]] = self.paged_object(path, params, "", after)[""]
        return rows

    def paged_object(
        self, path: str, params: dict[str, str], field: str, after: Callable[[dict[str, Any]], str]
    ) -> dict[str, Any]:
        """The object ``GET path`` answers with every item of its paged ``field`` (a list as
        ``pages`` follows it; ``""``: the answer is the list itself)."""
        whole: dict[str, Any] = {}
        asked: dict[str, Any] = {**params, "limit": PAGE_LIMIT}
        cursors: set[str] = set()
        for _ in range(MAX_PAGES):
            answer = self.json("GET", path, params=asked)
            got = answer.get(field) if field and isinstance(answer, dict) else answer
            if not isinstance(got, list) or not all(isinstance(i, dict) for i in got):
                raise UserError(f"{self.url} {path}: not a listing ({type(got).__name__})")
            if not whole:
                whole = {**answer, field: []} if field else {"": []}
            whole[field] += got
            if len(got) != PAGE_LIMIT:  # the last page (longer: a server that does not page)
                return whole
            try:
                cursor = after(got[-1])
            except (KeyError, TypeError) as exc:
                raise UserError(
                    f"{self.url} {path}: a listed item without its key ({exc})"
                ) from None
            if cursor in cursors:  # a server that answers the same page again: never ends
                raise UserError(f"{self.url} {path}: the page after {cursor!r} came again")
            cursors.add(cursor)
            asked = {**params, "limit": PAGE_LIMIT, "after": cursor}
        raise UserError(f"{self.url} {path}: more than {MAX_PAGES:,} pages of {PAGE_LIMIT:,}")

    # ------------------------------------------------------------ registry

    def publish(
        self,
        manifest_path: Path,
        files_dir: Path | None = None,
        say: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Upload a manifest and its files (streamed from disk, manifest first). Remote sources
        are fetched and pinned here, on the client, into a temporary store; the completed
        manifest is what is uploaded, with the fetched bytes."""
        manifest = load_manifest(manifest_path)
        if not needs_completion(manifest):
            paths = {
                f.path: locate(f, manifest_dir=manifest_path.parent, files_dir=files_dir)
                for f in manifest.files_list
            }
            return self._upload(manifest_path.read_bytes(), paths)
        with tempfile.TemporaryDirectory(prefix="pinbench-fetch-") as tmp:
            store = BlobStore(Path(tmp))
            try:
                staged = stage_files(
                    store,
                    manifest,
                    manifest_dir=manifest_path.parent,
                    files_dir=files_dir,
                    say=say,
                )
                for blob in staged.pending:
                    store.commit(blob)
                paths = {f.path: store.path(f.digest) for f, _ in staged.checked}
                text = json.dumps(manifest_data(staged.manifest)).encode()
                return self._upload(text, paths)
            finally:
                store.cache.close()

    def _upload(self, manifest: bytes, files: dict[str, Path]) -> dict[str, Any]:
        with contextlib.ExitStack() as stack:
            parts: list[tuple[str, tuple[str, bytes | BinaryIO]]] = [
                ("manifest", ("manifest.yaml", manifest))
            ]
            for path, source in files.items():
                parts.append(("file", (path, stack.enter_context(source.open("rb")))))
            result: dict[str, Any] = self.json(
                "POST", "/api/v1/artifacts", files=parts, timeout=None
            )
        return result

    def yank(self, ref: str, reason: str) -> None:
        self.call("POST", "/api/v1/yanks", json={"ref": ref, "reason": reason})

    def resolve(self, specs: list[str], *, arch: str, device: str) -> list[dict[str, str]]:
        params = [("spec", s) for s in specs] + [("arch", arch), ("device", device)]
        result: list[dict[str, str]] = self.json("GET", "/api/v1/resolve", params=params)
        return result

    # ------------------------------------------------------------ lockfiles and runs

    def lock(self, request: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.json("POST", "/api/v1/lockfiles", json=request)
        return result

    @property
    def where(self) -> str:
        return self.url

    def artifact(self, ref: str) -> Any:
        """What the server shows of ``KIND/NAME@VERSION`` (for adoption: checked there)."""
        try:
            return self.json("GET", f"/api/v1/artifacts/{ref}")
        except (ValueError, RecursionError) as exc:
            raise RemoteFailed(f"{self.url} answered for {ref} with no JSON: {exc}") from None

    def blob(self, digest: str) -> Iterator[bytes]:
        """A blob's bytes in chunks (checked by the caller against ``digest``)."""
        try:
            # a server with its blobs in object storage redirects to a presigned URL (httpx
            # drops the Authorization header on a redirect to another origin)
            with self.client.stream(
                "GET", f"/api/v1/blobs/{digest}", follow_redirects=True
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    self._refuse(response)
                yield from response.iter_bytes(1 << 20)
        except httpx.HTTPError as exc:
            raise RemoteFailed(
                f"cannot download blob {digest[:12]} from {self.url}: {exc}"
            ) from exc

    def lockfile(self, digest: str) -> Lockfile:
        data = self.call("GET", f"/api/v1/lockfiles/{digest}").content
        lock = Lockfile.from_bytes(data, source=f"{self.url} lockfile {digest[:12]}")
        if lock.digest.hex != digest:
            raise RemoteFailed(f"{self.url} answered lockfile {digest[:12]} with {lock.digest}")
        return lock

    def submit(self, lock: Lockfile, runner: str, trace: str = "none") -> dict[str, Any]:
        self.call("PUT", f"/api/v1/lockfiles/{lock.digest.hex}", content=lock.canonical)
        body = {"lockfile": lock.digest.hex, "runner": runner, "trace": trace}
        result: dict[str, Any] = self.json("POST", "/api/v1/runs", json=body)
        return result

    def submit_on(
        self, lock: Lockfile, runner: str, trace: str, on: list[str], *, retries: int = 1
    ) -> list[dict[str, Any]]:
        """Queue one run per cluster system ``on`` names (``["all"]``); the queued runs."""
        self.call("PUT", f"/api/v1/lockfiles/{lock.digest.hex}", content=lock.canonical)
        body = {
            "lockfile": lock.digest.hex,
            "runner": runner,
            "trace": trace,
            "on": on,
            "retries": retries,
        }
        result: list[dict[str, Any]] = self.json("POST", "/api/v1/runs/on", json=body)
        return result

    def wait(self, run_id: str, say: Callable[[str], None], *, poll_s: float = 0.5) -> Row:
        """Poll a run (soon, then up to every ``poll_s`` s) until it finishes; report each
        change of status. A server (or its database) away is waited out as any read is
        (``retrying``: each try said); past that, ``StoppedWaiting`` names the run."""
        pauses = intervals(poll_s)
        status = line = None
        while True:
            try:
                info = self.run(run_id)
            except RemoteFailed as exc:  # away past PINBENCH_RETRY_S (or it is 0)
                raise StoppedWaiting(
                    url=self.url,
                    run=run_id,
                    status=status,
                    why=str(exc),
                    database=exc.error == "DatabaseUnavailable",
                ) from None
            if info["status"] != status:
                status = info["status"]
                say(f"run {run_id[:8]} {status}")
            if status == "running" and info.get("progress") not in (None, line):
                line = info["progress"]
                say(str(line))  # the server's progress line: a wait for the blob store among them
            if status in FINISHED:
                return info
            time.sleep(next(pauses))

    def run(self, run_id: str) -> dict[str, Any]:
        return flatten(self.json("GET", f"/api/v1/runs/{run_id}"))

    def cancel(self, run_id: str) -> dict[str, Any]:
        """Ask the server to cancel a queued or running run; its view as the server has it."""
        return flatten(self.json("DELETE", f"/api/v1/runs/{run_id}"))

    def runs(
        self, limit: int | None, where: dict[str, str] | None = None, after: str | None = None
    ) -> list[dict[str, Any]]:
        """Runs newest first, filtered by ``where`` (``RunFilter.words``), the page after the
        run ``after``."""
        params: dict[str, Any] = dict(where or {})
        if limit:
            params["limit"] = limit
        if after is not None:
            params["after"] = after
        return [flatten(r) for r in self.json("GET", "/api/v1/runs", params=params)]

    def compare(self, run_ids: list[str]) -> dict[str, Any]:
        data: dict[str, Any] = self.json(
            "GET", "/api/v1/compare", params=[("run", r) for r in run_ids]
        )
        data["infos"] = [self.run(r) for r in data["runs"]]
        return data

    def trace(self, info: dict[str, Any]) -> dict[str, Any]:
        """A run's Chrome trace from the server's blob store, checked against its sha256 here."""
        digest = info.get("trace_sha256")
        if not digest:
            raise NoTrace(run=info["id"], level=info.get("trace", "none"), status=info["status"])
        data = self.call("GET", f"/api/v1/blobs/{digest}", follow_redirects=True).content
        got = Digest.of_bytes(data)
        if got.hex != digest:
            raise ChecksumMismatch(
                path=f"the trace of run {info['id'][:8]}", expected=Digest(digest), actual=got
            )
        trace: dict[str, Any] = msgspec.json.decode(data)
        return trace

    def report(self, run_ids: list[str], fmt: str) -> bytes:
        """A report over the runs, made by the server (html, md, csv, parquet)."""
        params = [("run", r) for r in run_ids] + [("format", fmt)]
        return self.call("GET", "/api/v1/reports", params=params).content


def _problem(response: httpx.Response) -> tuple[str, str | None]:
    """A problem answer's detail and error name (``application/problem+json``); empty and
    None for any other body."""
    if not response.headers.get("content-type", "").startswith("application/problem+json"):
        return "", None
    try:
        body = response.json()
    except ValueError:
        return "", None
    if not isinstance(body, dict):
        return "", None
    error = body.get("error")
    return str(body.get("detail") or ""), str(error) if error else None


def flatten(view: dict[str, Any]) -> dict[str, Any]:
    """A run as the API gives it, in the CLI's shape: metrics as top-level fields."""
    out = {k: v for k, v in view.items() if k != "metrics"}
    out.update(view.get("metrics") or {})
    out.setdefault("units", {})
    return out


@contextlib.contextmanager
def remote_from_env() -> Iterator[Remote | None]:
    remote = Remote.from_env()
    try:
        yield remote
    finally:
        if remote is not None:
            remote.close()
