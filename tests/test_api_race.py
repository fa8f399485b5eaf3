"""A publish race over HTTP: 50 clients upload the same name@version with different bytes at
once, to a server with two processes. Exactly one wins (201), every other gets 409 naming the
published digest, and the store holds the winner's blob and nothing else. SQLite and
PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from tests.apiserver import api_server
from tests.test_api import manifest_text, multipart

CLIENTS = 50


def upload(
    url: str, token: str, i: int, barrier: threading.Barrier, out: list[httpx.Response]
) -> None:
    data = f"client {i} bytes".encode()
    body = multipart([("manifest", None, manifest_text("1.0.0", "w.bin", data, "vision/race")),
                      ("file", "w.bin", data)])  # fmt: skip
    headers = {
        "Authorization": f"Bearer {token}",
        "content-type": "multipart/form-data; boundary=XyZ",
    }
    with httpx.Client(base_url=url, timeout=120) as c:
        barrier.wait()
        out[i] = c.post("/api/v1/artifacts", content=body, headers=headers)


def test_publish_race_has_one_winner(tmp_path: Path, database_url: str) -> None:
    with api_server(tmp_path / "home", database_url, "--workers", "2") as server:
        ws = server.workspace()
        before = set(ws.store.iter_digests())
        results: list[httpx.Response] = [httpx.Response(0)] * CLIENTS
        barrier = threading.Barrier(CLIENTS)
        threads = [
            threading.Thread(
                target=upload, args=(server.url, server.tokens["owner"], i, barrier, results)
            )
            for i in range(CLIENTS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(r.status_code for r in results)
        assert statuses == [201] + [409] * (CLIENTS - 1), statuses
        winner = next(r.json() for r in results if r.status_code == 201)
        for r in results:
            if r.status_code == 409:
                assert (
                    f"already published with manifest sha256 {winner['manifest_digest']}"
                    in (r.json()["detail"])
                )
        with server.client() as c:
            shown = c.get("/api/v1/artifacts/model/vision/race@1.0.0").json()
            versions = c.get("/api/v1/artifacts/versions/model/vision/race").json()
        assert len(versions) == 1 and shown["manifest_digest"] == winner["manifest_digest"]
        new_blobs = {d.hex for d in set(ws.store.iter_digests()) - before}
        assert new_blobs == {shown["files"][0]["sha256"]}
        assert list(ws.store.tmp.glob("*")) == []
        ws.close()


def test_the_same_upload_twice_is_a_no_op(tmp_path: Path) -> None:
    with api_server(tmp_path / "home", f"sqlite:///{tmp_path}/db") as server:
        body = multipart([("manifest", None, manifest_text("1.0.0", "a", b"a", "vision/again")),
                          ("file", "a", b"a")])  # fmt: skip
        headers = {"content-type": "multipart/form-data; boundary=XyZ"}
        with server.client("owner") as c:
            first = c.post("/api/v1/artifacts", content=body, headers=headers)
            second = c.post("/api/v1/artifacts", content=body, headers=headers)
        assert (first.status_code, first.json()["created"]) == (201, True)
        assert (second.status_code, second.json()["created"]) == (200, False)
