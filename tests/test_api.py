"""The REST API end to end, through a real ``pinbench serve`` on loopback: the CLI against it
(as a new user would), downloads with ETag and Range, tokens, and bad input refused with a
problem+json naming what is wrong while nothing is written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pinbench.artifacts.digest import Digest
from pinbench.cli import main
from tests.apiserver import Server, api_server
from tests.sourcebuilders import http_site

MODEL = "model/vision/digits-logreg@1.0.0"
REQUEST = {
    "model": "vision/digits-logreg@^1",
    "framework": "onnxruntime@*",
    "dataset": "sklearn-digits-test@^1",
    "scenario": {"name": "SingleStream", "mode": "accuracy"},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("api")
    with api_server(
        root / "home",
        f"sqlite:///{root}/db.sqlite",
        "--max-upload-mb",
        "1",
        catalog_dir=catalog_dir,
    ) as srv:
        yield srv


def cli(server: Server, who: str | None, *args: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("PINBENCH_URL", server.url)
    if who:
        monkeypatch.setenv("PINBENCH_TOKEN", server.tokens[who])
    else:
        monkeypatch.delenv("PINBENCH_TOKEN", raising=False)
    monkeypatch.setenv("PINBENCH_HOME", "/nonexistent/the-cli-must-not-use-a-local-home")
    return main(list(args))


def manifest_doc(name: str, version: str, files: dict[str, bytes]) -> dict[str, Any]:
    """A model manifest like the catalog's digits model, with the given files."""
    return {
        "kind": "model",
        "name": name,
        "version": version,
        "description": "uploaded by the API tests",
        "license": "MIT",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": ">=1.17 <2"},
        "inputs": [{"name": "x", "type": "image", "element_type": "float32", "shape": [1, 8, 8]}],
        "outputs": [{"name": "logits", "type": "classification"}],
        "files": [
            {"path": path, "sha256": Digest.of_bytes(data).hex, "size": len(data)}
            for path, data in files.items()
        ],
    }


def model_manifest(tmp: Path, version: str, data: bytes, name: str = "vision/api-test") -> Path:
    (tmp / "weights.bin").write_bytes(data)
    path = tmp / f"model-{version}.yaml"
    path.write_text(yaml.safe_dump(manifest_doc(name, version, {"weights.bin": data})))
    return path


def state(server: Server) -> tuple[list[str], list[str], list[str]]:
    """What a refused request must not change: rows, blobs, leftovers in the temp area."""
    ws = server.workspace()
    try:
        with server.client() as c:
            rows = [
                f"{a['kind']}/{a['name']}@{a['version']}" for a in c.get("/api/v1/artifacts").json()
            ]
        blobs = [d.hex for d in ws.store.iter_digests()]
        tmp = sorted(p.name for p in ws.store.tmp.glob("*")) if ws.store.tmp.exists() else []
    finally:
        ws.close()
    return rows, blobs, tmp


def test_a_new_user_publishes_resolves_locks_and_runs_through_the_cli(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    manifest = model_manifest(tmp_path, "1.0.0", b"new user's weights")
    assert cli(server, "owner", "publish", str(manifest), "--json", monkeypatch=monkeypatch) == 0
    published = json.loads(capsys.readouterr().out)
    assert published["ref"] == "model/vision/api-test@1.0.0" and published["created"]

    assert (
        cli(
            server,
            None,
            "resolve",
            "model/vision/digits-logreg@~1.0",
            "--json",
            monkeypatch=monkeypatch,
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == [
        {"kind": "model", "name": "vision/digits-logreg", "version": "1.0.0"},
        {"kind": "framework", "name": "onnxruntime", "version": "1.31.0"},
    ]
    request = tmp_path / "request.yaml"
    request.write_text(yaml.safe_dump(REQUEST))
    lock_path = tmp_path / "digits.lock"
    assert (
        cli(
            server,
            "owner",
            "lock",
            str(request),
            "-o",
            str(lock_path),
            "--json",
            monkeypatch=monkeypatch,
        )
        == 0
    )
    locked = json.loads(capsys.readouterr().out)
    assert Digest.of_bytes(lock_path.read_bytes().rstrip(b"\n")).hex == locked["digest"]

    runs = []
    for _ in range(2):
        assert (
            cli(
                server,
                "owner",
                "run",
                str(lock_path),
                "--runner",
                "local",
                "--json",
                monkeypatch=monkeypatch,
            )
            == 0
        )
        run = json.loads(capsys.readouterr().out)
        assert run["status"] == "succeeded" and run["lockfile"] == locked["digest"]
        assert run["top1"] > 0.9
        runs.append(run["id"])
    assert runs[0] != runs[1]
    assert cli(server, None, "runs", "compare", *runs, "--json", monkeypatch=monkeypatch) == 0
    compared = json.loads(capsys.readouterr().out)
    assert compared["differs"] == [] and compared["metrics"]["top1"][0] == run["top1"]
    assert cli(server, None, "runs", "show", runs[0], "--json", monkeypatch=monkeypatch) == 0
    assert json.loads(capsys.readouterr().out)["host"]["cores"] >= 1
    report = tmp_path / "report.md"
    assert (
        cli(server, None, "runs", "report", *runs, "--md", str(report), monkeypatch=monkeypatch)
        == 0
    )
    assert report.read_text().startswith("# pinbench report: 2 run(s)")  # made by the server

    # a traced run through the server; its trace read back through the blob endpoint
    run_args = ("run", str(lock_path), "--runner", "local", "--trace", "framework", "--json")
    assert cli(server, "owner", *run_args, monkeypatch=monkeypatch) == 0
    traced = json.loads(capsys.readouterr().out)
    assert traced["trace"] == "framework" and traced["trace_sha256"]
    args = ("runs", "trace", traced["id"], "--json")
    assert cli(server, None, *args, monkeypatch=monkeypatch) == 0
    (view,) = json.loads(capsys.readouterr().out)["runs"]
    assert view["level"] == "framework" and view["operators"][0]["count"] == view["predictions"]
    assert cli(server, None, "runs", "trace", runs[0], monkeypatch=monkeypatch) == 1
    assert "has no trace: it ran at trace level 'none'" in capsys.readouterr().err

    # refused: anonymous publish, a publish into another namespace, an anonymous run
    other = model_manifest(tmp_path, "1.0.1", b"other bytes")
    assert cli(server, None, "publish", str(other), monkeypatch=monkeypatch) == 1
    assert "needs a token with the 'publish' scope" in capsys.readouterr().err
    assert cli(server, "other", "publish", str(other), monkeypatch=monkeypatch) == 1
    assert "not a member of namespace 'vision'" in capsys.readouterr().err
    assert cli(server, None, "run", str(lock_path), monkeypatch=monkeypatch) == 1
    assert "'run' scope" in capsys.readouterr().err


def test_docs_page_and_openapi_are_served_without_a_cdn(server: Server) -> None:
    with server.client() as c:
        doc = c.get("/schema/openapi.json").json()
        page = c.get("/schema/swagger").text
        assert c.get("/static/swagger-ui/swagger-ui-bundle.js").status_code == 200
    assert doc["openapi"].startswith("3.1")
    assert "/api/v1/artifacts" in doc["paths"] and "/api/v1/resolve" in doc["paths"]
    assert "http://" not in page.replace(server.url, "") and "https://" not in page
    assert "/static/swagger-ui/swagger-ui-bundle.js" in page


def test_blob_download_has_etag_and_ranges(server: Server) -> None:
    with server.client() as c:
        info = c.get(f"/api/v1/artifacts/{MODEL}").json()
        f = info["files"][0]
        url = f"/api/v1/blobs/{f['sha256']}"
        whole = c.get(url)
        assert whole.status_code == 200 and len(whole.content) == f["size"]
        assert Digest.of_bytes(whole.content).hex == f["sha256"]
        etag = whole.headers["etag"]
        assert etag == f'"sha256:{f["sha256"]}"'
        assert c.get(url, headers={"If-None-Match": etag}).status_code == 304
        cases = [
            ("bytes=0-9", 206, whole.content[:10]),
            ("bytes=10-", 206, whole.content[10:]),
            ("bytes=-5", 206, whole.content[-5:]),
            (f"bytes=5-{10**9}", 206, whole.content[5:]),
            # past Python's 4300-digit int() limit: a number larger than any file, no 500
            (f"bytes=5-{'9' * 5000}", 206, whole.content[5:]),
            (f"bytes=-{'9' * 5000}", 206, whole.content),
            (f"bytes={'9' * 5000}-", 416, b""),
        ]
        for header, status, body in cases:
            part = c.get(url, headers={"Range": header})
            assert (part.status_code, part.content) == (status, body), header[:40]
        assert c.get(url, headers={"Range": f"bytes={f['size']}-"}).status_code == 416
        missing = c.get(f"/api/v1/blobs/{'0' * 64}")
        assert missing.status_code == 404
        assert missing.headers["content-type"].startswith("application/problem+json")


def test_lockfile_download_is_its_canonical_bytes(server: Server) -> None:
    with server.client("owner") as c:
        locked = c.post("/api/v1/lockfiles", json=REQUEST).json()
        digest = locked["points"][0]["digest"]
        body = c.get(f"/api/v1/lockfiles/{digest}")
    assert Digest.of_bytes(body.content.rstrip(b"\n")).hex == digest
    assert body.headers["etag"] == f'"sha256:{digest}"'


def test_tokens_created_listed_and_revoked(server: Server) -> None:
    with server.client("owner") as c:
        new = c.post("/api/v1/tokens", json={"name": "ci", "scopes": ["read"]})
        assert new.status_code == 201
        token = new.json()["token"]
        wider = c.post("/api/v1/tokens", json={"name": "x", "scopes": ["admin"]})
        assert wider.status_code == 403 and "admin" in wider.json()["detail"]
        listed = c.get("/api/v1/tokens").json()
        assert all("token" not in t and "secret" not in json.dumps(t) for t in listed)
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as c:
        assert c.get("/api/v1/me").json()["user"] == "owner"
    with server.client("owner") as c:
        assert c.delete(f"/api/v1/tokens/{new.json()['id']}").status_code == 204
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as c:
        refused = c.get("/api/v1/me")
    assert refused.status_code == 401 and "was revoked" in refused.json()["detail"]
    assert refused.headers["www-authenticate"].startswith("Bearer")


def multipart(parts: list[tuple[str, str | None, bytes]], boundary: str = "XyZ") -> bytes:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (
            f'; filename="{filename}"' if filename is not None else ""
        )
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
        out += data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def test_remote_sources_are_fetched_by_the_client_and_uploaded_completed(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = b"weights served over http" * 100
    with http_site() as site:
        site.files["/w.bin"] = data
        doc = manifest_doc("vision/api-remote", "1.0.0", {})
        doc["files"] = [{"path": "w.bin", "source": f"{site.url}/w.bin"}]
        manifest = tmp_path / "remote.yaml"
        manifest.write_text(yaml.safe_dump(doc))
        code = cli(server, "owner", "publish", str(manifest), "--json", monkeypatch=monkeypatch)
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["created"]
    assert site.requests == [("/w.bin", None)]
    with server.client("owner") as c:
        shown = c.get("/api/v1/artifacts/model/vision/api-remote@1.0.0").json()
        stored = c.get(f"/api/v1/blobs/{Digest.of_bytes(data).hex}")
    assert stored.content == data
    assert shown["manifest"]["files"][0]["sha256"] == Digest.of_bytes(data).hex


def manifest_text(version: str, path: str, data: bytes, name: str = "vision/bad") -> bytes:
    return yaml.safe_dump(manifest_doc(name, version, {path: data})).encode()


def unfetched_manifest_text() -> bytes:
    """A manifest naming a remote file it gives no sha256 for (publishing would fetch it)."""
    doc = manifest_doc("vision/bad", "1.0.0", {})
    doc["files"] = [{"path": "a", "source": "https://127.0.0.1:9/a"}]
    return yaml.safe_dump(doc).encode()


GOOD = b"good bytes"
BAD_UPLOADS: list[tuple[str, dict[str, str], bytes, int, str]] = [
    (
        "oversized",
        {},
        multipart(
            [
                ("manifest", None, manifest_text("1.0.0", "big", b"x" * 2_000_000)),
                ("file", "big", b"x" * 2_000_000),
            ]
        ),
        413,
        "larger than the server's limit of 1048576 bytes",
    ),
    (
        "not multipart",
        {"content-type": "application/json"},
        b"{}",
        400,
        "expected Content-Type multipart/form-data",
    ),
    ("malformed multipart", {}, b"--XyZ\r\nno headers end", 400, "bad upload"),
    (
        "truncated (no closing boundary)",
        {},
        multipart([("manifest", None, manifest_text("1.0.0", "a", GOOD)), ("file", "a", GOOD)])[
            :-9
        ],
        400,
        "closing boundary",
    ),
    (
        "path traversal in the file name",
        {},
        multipart(
            [
                ("manifest", None, manifest_text("1.0.0", "a", GOOD)),
                ("file", "../../etc/passwd", GOOD),
            ]
        ),
        400,
        "file '../../etc/passwd': not declared in the manifest",
    ),
    (
        "path traversal in the manifest",
        {},
        multipart(
            [("manifest", None, manifest_text("1.0.0", "../a", GOOD)), ("file", "../a", GOOD)]
        ),
        400,
        "must not contain '..'",
    ),
    (
        "bytes differ from the manifest",
        {},
        multipart(
            [("manifest", None, manifest_text("1.0.0", "a", GOOD)), ("file", "a", b"evil bytes")]
        ),
        400,
        "checksum mismatch for a: expected sha256 " + Digest.of_bytes(GOOD).hex,
    ),
    (
        "a declared file is missing",
        {},
        multipart([("manifest", None, manifest_text("1.0.0", "a", b"never sent"))]),
        400,
        "file 'a': declared in the manifest but not uploaded",
    ),
    (
        "file before the manifest",
        {},
        multipart([("file", "a", GOOD), ("manifest", None, manifest_text("1.0.0", "a", GOOD))]),
        400,
        "the manifest part must come before the file parts",
    ),
    (
        "a file twice",
        {},
        multipart(
            [
                ("manifest", None, manifest_text("1.0.0", "a", GOOD)),
                ("file", "a", GOOD),
                ("file", "a", GOOD),
            ]
        ),
        400,
        "uploaded twice",
    ),
    (
        "malformed manifest",
        {},
        multipart([("manifest", None, b"kind: model\nname: [unclosed")]),
        400,
        "invalid manifest",
    ),
    (
        "a remote file not fetched",
        {},
        multipart([("manifest", None, unfetched_manifest_text())]),
        400,
        "the server does not fetch sources",
    ),
    (
        "unknown part",
        {},
        multipart([("manifest", None, manifest_text("1.0.0", "a", GOOD)), ("extra", None, b"")]),
        400,
        "unknown part 'extra'",
    ),
]


@pytest.mark.parametrize(
    ("headers", "body", "status", "needle"),
    [case[1:] for case in BAD_UPLOADS],
    ids=[case[0] for case in BAD_UPLOADS],
)
def test_bad_uploads_are_refused_and_change_nothing(
    server: Server, headers: dict[str, str], body: bytes, status: int, needle: str
) -> None:
    before = state(server)
    headers = {"content-type": "multipart/form-data; boundary=XyZ", **headers}
    with server.client("owner") as c:
        response = c.post("/api/v1/artifacts", content=body, headers=headers)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert needle in problem["detail"] and problem["status"] == status
    assert "Traceback" not in response.text
    assert state(server) == before


BAD_JSON: list[tuple[str, str, str, Any, int, str]] = [
    ("unknown field in a token request", "POST", "/api/v1/tokens",
     {"name": "x", "scopez": ["read"]}, 400, "unknown field `scopez`"),
    ("unknown field in a run request", "POST", "/api/v1/runs",
     {"lockfile": "0" * 64, "runer": "local"}, 400, "unknown field `runer`"),
    ("unknown field in an evaluation request", "POST", "/api/v1/lockfiles",
     {**REQUEST, "modle": "x"}, 400, "modle"),
    ("unknown scope", "POST", "/api/v1/tokens",
     {"name": "x", "scopes": ["root"]}, 400, "invalid scopes root"),
    ("a bad range", "GET", "/api/v1/resolve?spec=model/vision/digits-logreg@^1.x.y", None, 400,
     "invalid"),
    ("a lockfile that is not stored", "POST", "/api/v1/runs",
     {"lockfile": "0" * 64}, 404, "no lockfile"),
    ("an unknown run", "GET", "/api/v1/runs/not-a-run", None, 404, "no run 'not-a-run'"),
    ("a lockfile body that is not its digest", "PUT", f"/api/v1/lockfiles/{'0' * 64}",
     b"{}", 400, "schema_version"),
    ("a yank without a reason", "POST", "/api/v1/yanks",
     {"ref": MODEL, "reason": " "}, 400, "a yank needs a reason"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "needle"),
    [case[1:] for case in BAD_JSON],
    ids=[case[0] for case in BAD_JSON],
)
def test_bad_bodies_are_refused_with_a_clear_problem(
    server: Server, method: str, path: str, body: Any, status: int, needle: str
) -> None:
    before = state(server)
    kwargs: dict[str, Any] = {"content": body} if isinstance(body, bytes) else {"json": body}
    with server.client("admin") as c:
        response = c.request(method, path, **(kwargs if body is not None else {}))
    assert response.status_code == status, response.text
    assert needle in response.json()["detail"]
    assert state(server) == before


@pytest.mark.parametrize(
    ("header", "needle"),
    [
        ("Bearer pbt_nope", "malformed API token"),
        (f"Bearer pbt_{'0' * 16}_{'a' * 43}", "unknown API token 0000000000000000"),
        ("Basic dXNlcjpwYXNz", "must be 'Bearer <token>'"),
    ],
)
def test_invalid_tokens_are_refused(server: Server, header: str, needle: str) -> None:
    with httpx.Client(base_url=server.url, headers={"Authorization": header}) as c:
        response = c.get("/api/v1/artifacts")
    assert response.status_code == 401 and needle in response.json()["detail"]


def test_a_token_secret_tampered_with_is_refused(server: Server) -> None:
    token = server.tokens["owner"]
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {tampered}"}) as c:
        response = c.get("/api/v1/me")
    assert response.status_code == 401 and "unknown API token" in response.json()["detail"]


def test_reads_reflect_a_yank_at_once(server: Server) -> None:
    """Show and resolve answers are cached per registry state: a yank is seen immediately."""
    ref, spec = "model/vision/digits-logreg@1.1.0", "model/vision/digits-logreg@~1.1"
    with server.client("owner") as c:
        assert c.get(f"/api/v1/artifacts/{ref}").json()["yanked"] is False
        assert c.get("/api/v1/resolve", params={"spec": spec}).status_code == 200
        assert c.post("/api/v1/yanks", json={"ref": ref, "reason": "r1"}).status_code == 201
        assert c.get(f"/api/v1/artifacts/{ref}").json()["yank_reason"] == "r1"
        refused = c.get("/api/v1/resolve", params={"spec": spec})
        assert refused.status_code == 400 and "1.1.0 (yanked)" in refused.json()["detail"]
        assert c.post("/api/v1/yanks", json={"ref": ref, "reason": "r2"}).status_code == 201
        assert c.get(f"/api/v1/artifacts/{ref}").json()["yank_reason"] == "r2"
