"""Who may do what: every endpoint by anonymous, a reader, a publisher of another namespace,
the namespace's owner and an admin, against a real server; then the same reads on a server
started with --private."""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.apiserver import Server, api_server
from tests.test_api import REQUEST, manifest_text, multipart

WHO = ("anonymous", "reader", "other", "owner", "admin")
MODEL = "model/vision/digits-logreg@1.2.0"


@dataclass
class World:
    server: Server
    lockfile: str
    lockfile_bytes: bytes
    blob: str
    runs: list[str]


def wait_for(client: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info: dict[str, Any] = client.get(f"/api/v1/runs/{run_id}").json()
        if info["status"] in ("succeeded", "failed", "interrupted"):
            return info
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def make_world(server: Server) -> World:
    with server.client("admin") as c:
        digest = c.post("/api/v1/lockfiles", json=REQUEST).json()["points"][0]["digest"]
        runs = [
            c.post("/api/v1/runs", json={"lockfile": digest, "runner": "local"}).json()["id"]
            for _ in range(2)
        ]
        for r in runs:
            assert wait_for(c, r)["status"] == "succeeded"
        blob = c.get(f"/api/v1/artifacts/{MODEL}").json()["files"][0]["sha256"]
        body = c.get(f"/api/v1/lockfiles/{digest}").content.rstrip(b"\n")
    return World(server, digest, body, blob, runs)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("auth")
    with api_server(root / "home", f"sqlite:///{root}/db", catalog_dir=catalog_dir) as server:
        yield make_world(server)


Call = Callable[[World, str], tuple[str, str, dict[str, Any]]]


def get(path: str) -> Call:
    return lambda w, who: ("GET", path.format(w=w), {})


def publish(w: World, who: str) -> tuple[str, str, dict[str, Any]]:
    version = f"9.0.{WHO.index(who)}"
    body = multipart([("manifest", None, manifest_text(version, "w.bin", b"w", "vision/auth")),
                      ("file", "w.bin", b"w")])  # fmt: skip
    headers = {"content-type": "multipart/form-data; boundary=XyZ"}
    return "POST", "/api/v1/artifacts", {"content": body, "headers": headers}


def spare_token(w: World, who: str) -> tuple[str, str, dict[str, Any]]:
    with w.server.client("admin") as c:
        token_id = c.post("/api/v1/tokens", json={"name": "spare"}).json()["id"]
    return "DELETE", f"/api/v1/tokens/{token_id}", {}


def cancel(w: World, who: str) -> tuple[str, str, dict[str, Any]]:
    """A long run submitted by the owner: only they and admins may cancel it."""
    long = {**REQUEST, "scenario": {"name": "Server", "target_qps": 20, "min_duration_ms": 600_000}}
    with w.server.client("owner") as c:
        digest = c.post("/api/v1/lockfiles", json=long).json()["points"][0]["digest"]
        run = c.post("/api/v1/runs", json={"lockfile": digest, "runner": "local"}).json()["id"]
    return "DELETE", f"/api/v1/runs/{run}", {}


SERIES = "vision/digits-logreg"  # the leading field of the world's one series (its runs')


def retire(w: World, who: str) -> tuple[str, str, dict[str, Any]]:
    """The series' threshold on top1 retired (one set first, by admin, so there is one)."""
    with w.server.client("admin") as c:
        body = {"metric": "top1", "test": "tolerance", "tolerance": 0.02}
        assert c.post(f"/api/v1/series-thresholds/{SERIES}", json=body).status_code == 200
    return "DELETE", f"/api/v1/series-thresholds/{SERIES}", {"params": {"metric": "top1"}}


def gate(w: World, who: str) -> tuple[str, str, dict[str, Any]]:
    """The world's second run gated against its series (a threshold set first, by admin)."""
    with w.server.client("admin") as c:
        body = {"metric": "top1", "test": "exact"}
        assert c.post(f"/api/v1/series-thresholds/{SERIES}", json=body).status_code == 200
    return "POST", "/api/v1/gate", {"json": {"run": w.runs[1]}}


def acknowledge(w: World, who: str) -> tuple[str, str, dict[str, Any]]:
    """An open alert of the world's series (raised here), acknowledged by ``who``."""
    from pinbench.series.alerts import raise_alert

    with w.server.client("admin") as c:
        name = c.get(f"/api/v1/series/{SERIES}").json()["name"]
    ws = w.server.workspace()
    try:
        alert = raise_alert(
            ws, series=name, metric="top1", kind="regression", run_id=who, detail={}
        )
    finally:
        ws.close()
    return "POST", f"/api/v1/alerts/{alert['id']}/acknowledge", {}


READ = (200, 200, 200, 200, 200)
RUN = (401, 403, None, None, None)  # None: the endpoint's success status
ADMIN = (401, 403, 403, 403, None)
PUBLISH = (401, 403, 403, None, None)

#        label                 call                                             who -> status  ok
AGENT_STUDY: dict[str, Any] = {  # a study on agents (this server has none)
    "name": "on-agents",
    "models": [{"model": "vision/digits-logreg@^1", "framework": "onnxruntime@*",
                "dataset": "sklearn-digits-test@^1"}],
    "scenarios": {"accuracy": {"mode": "accuracy"}},
    "systems": [{"name": "a", "agent": "lab-a"}],
}  # fmt: skip

MATRIX: list[tuple[str, Call, tuple[int | None, ...], int]] = [
    ("health", get("/api/v1/health"), READ, 200),
    ("ready", get("/api/v1/ready"), READ, 200),
    ("list artifacts", get("/api/v1/artifacts?kind=model"), READ, 200),
    ("show a version", get(f"/api/v1/artifacts/{MODEL}"), READ, 200),
    ("versions of a name", get("/api/v1/artifacts/versions/model/vision/digits-logreg"), READ, 200),
    ("a model's signature", get(f"/api/v1/artifacts/signature/{MODEL}"), READ, 200),
    ("resolve", get("/api/v1/resolve?spec=model/vision/digits-logreg@^1"), READ, 200),
    ("download a lockfile", get("/api/v1/lockfiles/{w.lockfile}"), READ, 200),
    ("download a blob", get("/api/v1/blobs/{w.blob}"), READ, 200),
    ("list runs", get("/api/v1/runs"), READ, 200),
    ("show a run", get("/api/v1/runs/{w.runs[0]}"), READ, 200),
    ("compare runs", get("/api/v1/compare?run={w.runs[0]}&run={w.runs[1]}"), READ, 200),
    ("report on runs", get("/api/v1/reports?run={w.runs[0]}&run={w.runs[1]}&format=md"), READ,
     200),
    ("me", get("/api/v1/me"), READ, 200),
    ("list systems", get("/api/v1/systems"), READ, 200),
    ("show a system", get("/api/v1/systems/lab-z"), (404,) * 5, 404),  # none here: told so
    ("list signing keys", get("/api/v1/keys"), READ, 200),
    ("a run's attestation", get("/api/v1/runs/{w.runs[0]}/attestation"), READ, 200),
    ("attest a run", lambda w, who: ("POST", f"/api/v1/runs/{w.runs[0]}/attestation", {}), RUN,
     200),  # attested when recorded: the recorded envelope again
    ("publish", publish, PUBLISH, 201),
    ("yank", lambda w, who: ("POST", "/api/v1/yanks", {"json": {"ref": MODEL, "reason": "t"}}),
     PUBLISH, 201),
    ("lock a request", lambda w, who: ("POST", "/api/v1/lockfiles", {"json": REQUEST}), RUN, 201),
    ("store a lockfile", lambda w, who: ("PUT", f"/api/v1/lockfiles/{w.lockfile}",
     {"content": w.lockfile_bytes}), RUN, 200),
    ("submit a run", lambda w, who: ("POST", "/api/v1/runs",
     {"json": {"lockfile": w.lockfile, "runner": "local"}}), RUN, 202),
    # this server has no cluster: an allowed caller is told so (a client error), others first
    # meet the authorization they lack
    ("submit runs on systems", lambda w, who: ("POST", "/api/v1/runs/on",
     {"json": {"lockfile": w.lockfile, "on": ["all"]}}), RUN, 400),
    ("cancel a run", cancel, (401, 403, 403, None, None), 202),
    ("create a token", lambda w, who: ("POST", "/api/v1/tokens",
     {"json": {"name": "m", "scopes": ["read"]}}), (401, None, None, None, None), 201),
    ("list tokens", get("/api/v1/tokens"), (401, 200, 200, 200, 200), 200),
    ("revoke another's token", spare_token, ADMIN, 204),
    ("list users", get("/api/v1/users"), ADMIN, 200),
    ("add a user", lambda w, who: ("POST", "/api/v1/users", {"json": {"name": f"new-{who}"}}),
     ADMIN, 201),
    ("add a member", lambda w, who: ("POST", "/api/v1/namespaces/text/members",
     {"json": {"user": "reader"}}), ADMIN, 201),
    ("remove a member", lambda w, who: ("DELETE", "/api/v1/namespaces/audio/members/other", {}),
     ADMIN, 204),
    ("list series", get("/api/v1/series"), READ, 200),
    ("show a series", get(f"/api/v1/series/{SERIES}"), READ, 200),
    ("list a series' thresholds", get(f"/api/v1/series-thresholds/{SERIES}"), READ, 200),
    ("set a threshold", lambda w, who: ("POST", f"/api/v1/series-thresholds/{SERIES}",
     {"json": {"metric": "top1", "test": "tolerance", "tolerance": 0.01}}), PUBLISH, 200),
    ("retire a threshold", retire, PUBLISH, 200),
    ("gate a run", gate, RUN, 200),
    ("list alerts", get("/api/v1/alerts"), READ, 200),
    ("show an alert", get("/api/v1/alerts/999999"), (404,) * 5, 404),  # none such: told so
    ("acknowledge an alert", acknowledge, PUBLISH, 200),
    ("list studies", get("/api/v1/studies"), READ, 200),
    ("show a study", get("/api/v1/studies/seed-quick"), READ, 200),  # built in: its plan
    ("report on a study", get("/api/v1/studies/seed-quick/report"), READ, 200),
    # a study on agents: this server has no cluster, so an allowed caller is told so (400)
    ("run a study on agents", lambda w, who: ("POST", "/api/v1/studies",
     {"json": {"definition": AGENT_STUDY}}), RUN, 400),
]  # fmt: skip


CELLS = [
    pytest.param(call, who, expected[i] or ok, id=f"{label}-{who}")
    for label, call, expected, ok in MATRIX
    for i, who in enumerate(WHO)
]


@pytest.mark.parametrize(("call", "who", "status"), CELLS)
def test_authorization_matrix(world: World, call: Call, who: str, status: int) -> None:
    method, path, kwargs = call(world, who)
    with world.server.client(None if who == "anonymous" else who) as c:
        response = c.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    if status >= 400:
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["detail"]


def test_every_api_operation_is_in_the_matrix(world: World) -> None:
    with world.server.client() as c:
        paths = c.get("/schema/openapi.json").json()["paths"]
    operations = sum(len(ops) for p, ops in paths.items() if p.startswith("/api/"))
    assert operations == len(MATRIX)


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("private")
    with api_server(
        root / "home", f"sqlite:///{root}/db", "--private", catalog_dir=catalog_dir
    ) as server:
        yield make_world(server)


READS = [(label, call) for label, call, expected, _ in MATRIX if expected == READ]


@pytest.mark.parametrize(("label", "call"), READS, ids=[r[0] for r in READS])
def test_private_server_reads_need_a_token(private: World, label: str, call: Call) -> None:
    method, path, kwargs = call(private, "anonymous")
    with private.server.client() as c:
        anonymous = c.request(method, path, **kwargs)
    with private.server.client("reader") as c:
        reader = c.request(method, path, **kwargs)
    if label in ("health", "ready", "me"):  # open to all: they reveal nothing stored
        assert (anonymous.status_code, reader.status_code) == (200, 200)
        return
    assert anonymous.status_code == 401, anonymous.text
    assert "needs a token with the 'read' scope" in anonymous.json()["detail"]
    assert reader.status_code == 200, reader.text


def test_an_anonymous_visit_to_a_private_servers_pages_gets_the_login_form(
    private: World,
) -> None:
    """It was a bare "401" page: now the login form, saying why, which returns to the page
    asked for once logged in (a page of this UI only, never another site)."""
    url = private.server.url
    run = private.runs[0]
    asked = f"/ui/runs/{run}"
    anonymous = httpx.get(url + asked)
    assert anonymous.status_code == 401
    text = html.unescape(anonymous.text)
    assert '<form method="post" action="/ui/login"' in text
    assert f'<input type="hidden" name="next" value="{asked}">' in text
    assert "needs a token with the 'read' scope" in text
    assert "<h1>401</h1>" not in text
    # the form says what the cookie holds as it is (docs/operations.md): never the token
    assert "never the token" in text and "kept in a cookie" not in text
    listing = httpx.get(url + "/ui/runs", params={"status": "succeeded"})
    assert 'name="next" value="/ui/runs?status=succeeded"' in html.unescape(listing.text)

    def log_in(follow: str) -> httpx.Response:
        return httpx.post(
            f"{url}/ui/login",
            data={"token": private.server.tokens["reader"], "next": follow},
            headers={"Origin": url},
        )

    back = log_in(asked)
    assert back.status_code in (302, 303) and back.headers["location"] == asked
    cookie = back.cookies["pinbench_session"]
    again = httpx.get(url + asked, cookies={"pinbench_session": cookie})
    assert again.status_code == 200 and run[:8] in again.text
    for elsewhere in (
        "https://evil.example/ui/",
        "//evil.example/ui/",
        "/ui//evil.example",
        "/api/v1/runs",
    ):
        assert log_in(elsewhere).headers["location"] == "/ui/", elsewhere
    wrong = httpx.post(
        f"{url}/ui/login", data={"token": "pbt_nope", "next": asked}, headers={"Origin": url}
    )
    assert wrong.status_code == 401  # the form again, still returning to the page
    assert f'name="next" value="{asked}"' in html.unescape(wrong.text)


def _token_with(w: World, scopes: list[str]) -> str:
    """A token of 'owner' issued with exactly ``scopes`` (minted by owner's full token)."""
    with w.server.client("owner") as c:
        made = c.post("/api/v1/tokens", json={"name": "narrow", "scopes": scopes})
    assert made.status_code == 201, made.text
    token: str = made.json()["token"]
    return token


#  issued with          asks for               status  scopes, or what the refusal names
MINTS: list[tuple[list[str], list[str] | None, int, str]] = [
    (["publish"],        ["read"],              403, "read"),   # public reads are lent, not owned
    (["publish"],        ["read", "publish"],   403, "read"),
    (["run"],            ["read", "run"],       403, "read"),
    (["publish"],        ["run"],               403, "run"),
    (["read"],           ["admin"],             403, "admin"),
    (["publish"],        ["publish"],           201, "publish"),
    (["publish"],        None,                  201, "publish"),  # no scopes: the token's own
    (["read", "run"],    ["run"],               201, "run"),
    (["read", "run"],    None,                  201, "read,run"),
]  # fmt: skip


@pytest.mark.parametrize(("issued", "asked", "status", "expected"), MINTS)
@pytest.mark.parametrize("fixture", ["world", "private"])
def test_a_token_mints_only_tokens_within_its_own_scopes(
    request: pytest.FixtureRequest,
    fixture: str,
    issued: list[str],
    asked: list[str] | None,
    status: int,
    expected: str,
) -> None:
    w: World = request.getfixturevalue(fixture)
    token = _token_with(w, issued)
    body: dict[str, Any] = {"name": "minted"} if asked is None else {"name": "m", "scopes": asked}
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=w.server.url, headers=auth, timeout=60) as c:
        before = len(c.get("/api/v1/tokens").json())
        response = c.post("/api/v1/tokens", json=body)
        after = len(c.get("/api/v1/tokens").json())
    assert response.status_code == status, response.text
    if status == 201:
        assert ",".join(response.json()["scopes"]) == expected
        assert after == before + 1
        return
    detail = response.json()["detail"]
    assert f"a new token cannot have scopes token {token[4:20]} was not issued with" in detail
    assert f"{expected} (it has {', '.join(issued)})" in detail
    assert after == before, "nothing was minted"


def test_a_token_minted_by_a_publish_only_token_cannot_read_a_private_server(
    private: World,
) -> None:
    """The hole: on a public server every token reads, and that lent 'read' used to be minted
    into a token of its own, which then read the server once it was --private."""
    publisher = _token_with(private, ["publish"])
    with httpx.Client(
        base_url=private.server.url, headers={"Authorization": f"Bearer {publisher}"}
    ) as c:
        minted = c.post("/api/v1/tokens", json={"name": "escalate"}).json()["token"]
    with httpx.Client(
        base_url=private.server.url, headers={"Authorization": f"Bearer {minted}"}
    ) as c:
        response = c.get("/api/v1/artifacts")
    assert response.status_code == 403, response.text
    assert "lacks the 'read' scope" in response.json()["detail"]
