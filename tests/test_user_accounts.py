"""Accounts in a team (decision 150), against a real ``pinbench serve`` and the real CLI on its
database: a disabled user's tokens stop at once and start again when enabled; a deleted user's
tokens are revoked while what they published stays, attributed to their name, which is never
given again; the last admin is kept; namespace membership is removed from the CLI; the UI
shows Run/Evaluate only to a token with the 'run' scope; the UI's login cookie is a session,
not the token, and ends when the user is disabled or logs out."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from pinbench import accounts
from pinbench.api_tokens import create_token
from pinbench.db.models import UiSession
from pinbench.remote import Remote
from pinbench.remote_errors import RemoteRefused
from tests.apiserver import Server, api_server
from tests.helpers import Cli, in_process_cli
from tests.test_api import model_manifest

DATASET = "sklearn-digits-test@^1"
MODEL = "vision/digits-logreg@^1"


@pytest.fixture
def op_cli(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Cli:
    """``pinbench ARGS`` where the server's database is (what an operator runs)."""
    return in_process_cli(monkeypatch, capsys, server.home, server.database_url)


def new_user(server: Server, name: str, scopes: list[str], namespaces: Sequence[str] = ()) -> str:
    """A user of the server's database with one token: the token."""
    ws = server.workspace()
    try:
        with ws.writes() as rows:
            accounts.add_user(rows, name)
            for ns in namespaces:
                accounts.grant(rows, name, ns)
            token = create_token(rows, name, name="tests", scopes=scopes)[2]
    finally:
        ws.close()
    return token


def me(server: Server, token: str) -> httpx.Response:
    return httpx.get(f"{server.url}/api/v1/me", headers={"Authorization": f"Bearer {token}"})


# ---------------------------------------------------------------- disable, enable


def test_a_disabled_users_token_is_refused_at_once_and_works_again_when_enabled(
    server: Server, op_cli: Cli
) -> None:
    token = new_user(server, "dana", ["read", "run"])
    assert me(server, token).status_code == 200
    done = op_cli("user", "disable", "dana")
    assert done.code == 0, done.err
    assert "disabled dana" in done.out
    refused = me(server, token)  # the very next request: no cache, no restart
    assert refused.status_code == 401
    assert "user dana is disabled" in refused.json()["detail"]
    assert "pinbench user enable dana" in refused.json()["detail"]
    # whoever does not hold the secret learns nothing about the user
    token_id = token.split("_")[1]
    forged = f"pbt_{token_id}_{'A' * 43}"
    guessed = me(server, forged)
    assert guessed.status_code == 401
    assert guessed.json()["detail"] == f"unknown API token {token_id}"
    assert "dana" not in guessed.text and "disabled" not in guessed.text
    listed = op_cli("user", "list", "--json")
    assert {"name": "dana", "admin": False, "namespaces": [], "status": "disabled"} in (
        json.loads(listed.out)
    )
    again = op_cli("user", "enable", "dana")
    assert again.code == 0 and "enabled dana" in again.out
    assert me(server, token).status_code == 200


def test_disabling_or_deleting_an_unknown_user_names_it(op_cli: Cli) -> None:
    for verb in ("disable", "enable", "delete"):
        result = op_cli("user", verb, "nobody")
        assert result.code == 1
        assert "user 'nobody' does not exist" in result.err
        assert "Traceback" not in result.err


# ---------------------------------------------------------------- delete


def test_deleting_a_user_revokes_their_tokens_and_keeps_what_they_published(
    server: Server, op_cli: Cli, tmp_path: Path
) -> None:
    token = new_user(server, "erin", ["read", "publish", "run"], ["erinlab"])
    remote = Remote(server.url, token)
    try:
        remote.publish(model_manifest(tmp_path, "1.0.0", b"erin's weights", "erinlab/m"))
    finally:
        remote.close()
    done = op_cli("user", "delete", "erin")
    assert done.code == 0, done.err
    assert "deleted erin (1 token(s) revoked)" in done.out
    refused = me(server, token)
    assert refused.status_code == 401 and "was revoked at" in refused.json()["detail"]
    shown = httpx.get(f"{server.url}/api/v1/artifacts/model/erinlab/m@1.0.0")
    assert shown.status_code == 200 and shown.json()["publisher"] == "erin"
    tokens = op_cli("token", "list", "--user", "erin", "--json")
    assert all(t["revoked"] for t in json.loads(tokens.out))
    users = {u["name"]: u for u in json.loads(op_cli("user", "list", "--json").out)}
    assert users["erin"]["status"] == "deleted" and users["erin"]["namespaces"] == []
    # the name stays attributed: it is never given to someone else, nor acted on again
    for args, action in (
        (("user", "add", "erin"), "add it again"),
        (("user", "grant", "erin", "erinlab"), "grant it namespace 'erinlab'"),
        (("token", "create", "--user", "erin"), "create a token for it"),
        (("user", "enable", "erin"), "enable it"),
        (("user", "delete", "erin"), "delete it"),
    ):
        result = op_cli(*args)
        assert result.code == 1, args
        assert f"user 'erin' was deleted: cannot {action}" in result.err


def test_the_last_enabled_admin_is_neither_deleted_nor_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "home")
    assert cli("init").code == 0
    assert cli("user", "add", "root", "--admin").code == 0
    for verb in ("delete", "disable"):
        result = cli("user", verb, "root")
        assert result.code == 1
        assert f"cannot {verb} root: it is the last enabled admin" in result.err
    assert '"status": "active"' in cli("user", "list", "--json").out
    assert cli("user", "add", "second", "--admin").code == 0
    assert cli("user", "disable", "second").code == 0  # a disabled admin manages nothing
    assert "last enabled admin" in cli("user", "delete", "root").err
    assert cli("user", "enable", "second").code == 0
    done = cli("user", "delete", "root")
    assert done.code == 0, done.err
    assert "last enabled admin" in cli("user", "delete", "second").err


# ---------------------------------------------------------------- namespaces


def test_a_user_is_removed_from_a_namespace_from_the_cli(
    server: Server, op_cli: Cli, tmp_path: Path
) -> None:
    token = new_user(server, "fay", ["read", "publish"], ["faylab"])
    done = op_cli("user", "revoke", "fay", "faylab")
    assert done.code == 0, done.err
    assert "fay may no longer publish in faylab" in done.out
    remote = Remote(server.url, token)
    try:
        with pytest.raises(RemoteRefused) as refused:
            remote.publish(model_manifest(tmp_path, "1.0.0", b"fay's weights", "faylab/m"))
    finally:
        remote.close()
    assert refused.value.status == 403
    assert "fay is not a member of namespace 'faylab'" in str(refused.value)
    again = op_cli("user", "revoke", "fay", "faylab")
    assert again.code == 1
    assert "membership of 'fay' in 'faylab' does not exist" in again.err


# ---------------------------------------------------------------- the UI's Run button


def page(server: Server, path: str, token: str | None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{server.url}{path}", headers=headers)
    assert response.status_code == 200, response.text
    return response.text


def resolved_form(server: Server, token: str | None) -> str:
    headers = {"Origin": server.url, **({"Authorization": f"Bearer {token}"} if token else {})}
    response = httpx.post(
        f"{server.url}/ui/evaluate",
        data={"models": MODEL, "dataset": DATASET, "action": "resolve"},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    assert 'id="resolution"' in response.text
    return response.text


@pytest.mark.parametrize(
    ("who", "may_run"),
    [
        ("reader", False),  # a read-only token: it saw the button and got 403 after
        (None, False),  # anonymous on a public server: reads, never runs
        ("owner", True),  # read, publish, run
    ],
    ids=["read-only", "anonymous", "run-scoped"],
)
def test_run_and_evaluate_are_shown_only_with_the_run_scope(
    server: Server, who: str | None, may_run: bool
) -> None:
    token = server.tokens[who] if who else None
    home = page(server, "/ui/", token)
    assert ('href="/ui/evaluate"' in home) is may_run  # the nav link, the home page's button
    assert ('id="start-evaluation"' in home) is may_run
    form = resolved_form(server, token)
    assert ('id="run"' in form) is may_run
    assert ('id="run-needs-scope"' in form) is not may_run


# ---------------------------------------------------------------- the UI's cookie


def login(server: Server, token: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/ui/login",
        data={"token": token},
        headers={"Origin": server.url, **headers},
    )


def session_cookie(response: httpx.Response) -> tuple[str, str]:
    """The Set-Cookie header of the session, and the cookie's value."""
    header = next(h for h in response.headers.get_list("set-cookie") if "pinbench_session=" in h)
    match = re.search(r"pinbench_session=([^;]+)", header)
    assert match is not None
    return header, match.group(1)


def ui_home(server: Server, cookie: str) -> httpx.Response:
    return httpx.get(f"{server.url}/ui/", cookies={"pinbench_session": cookie})


def test_the_login_cookie_is_a_session_not_the_token_and_ends_when_the_user_is_disabled(
    server: Server, op_cli: Cli
) -> None:
    token = new_user(server, "gil", ["read", "run"])
    response = login(server, token)
    assert response.status_code in (302, 303), response.text
    header, cookie = session_cookie(response)
    secret = token.split("_", 2)[2]
    assert secret not in header and token not in header
    assert re.fullmatch(r"pbs_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", cookie)
    flags = [part.strip().lower() for part in header.split(";")]
    assert "httponly" in flags and "samesite=strict" in flags and "path=/ui" in flags
    assert "secure" not in flags  # plain http: a Secure cookie would never come back
    assert "gil" in ui_home(server, cookie).text
    assert op_cli("user", "disable", "gil").code == 0
    ended = ui_home(server, cookie)
    assert ended.status_code == 401
    assert f"UI session {cookie.split('_')[1]} has ended" in html.unescape(ended.text)
    assert op_cli("user", "enable", "gil").code == 0
    assert ui_home(server, cookie).status_code == 401  # disabling ended the session for good
    fresh = session_cookie(login(server, token))[1]
    assert "gil" in ui_home(server, fresh).text


def test_logging_out_ends_the_session_for_every_copy_of_the_cookie(server: Server) -> None:
    token = new_user(server, "hal", ["read"])
    cookie = session_cookie(login(server, token))[1]
    assert "hal" in ui_home(server, cookie).text
    out = httpx.post(
        f"{server.url}/ui/logout",
        cookies={"pinbench_session": cookie},
        headers={"Origin": server.url},
    )
    assert out.status_code in (302, 303)
    copied = ui_home(server, cookie)
    assert copied.status_code == 401
    assert f"UI session {cookie.split('_')[1]} has ended: log in again" in html.unescape(
        copied.text
    )
    assert cookie.split("_", 2)[2] not in copied.text


def test_a_revoked_token_ends_its_sessions(server: Server, op_cli: Cli) -> None:
    token = new_user(server, "ivy", ["read"])
    cookie = session_cookie(login(server, token))[1]
    assert op_cli("token", "revoke", token.split("_")[1]).code == 0
    ended = ui_home(server, cookie)
    assert ended.status_code == 401 and "was revoked at" in html.unescape(ended.text)


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server told to trust X-Forwarded-Proto (a TLS proxy on this machine)."""
    root = tmp_path_factory.mktemp("proxied")
    with api_server(root / "home", f"sqlite:///{root}/db", "--trust-forwarded-proto") as srv:
        yield srv


def test_the_cookie_is_secure_over_https_from_a_trusted_proxy_only(
    server: Server, proxied: Server
) -> None:
    https = {"X-Forwarded-Proto": "https", "Origin": proxied.url.replace("http:", "https:")}
    header, _ = session_cookie(login(proxied, proxied.tokens["reader"], **https))
    assert "secure" in [part.strip().lower() for part in header.split(";")]
    # by default the header is not believed: the server's own origin stays http://, so an
    # https Origin is another site's and no cookie is given
    https = {"X-Forwarded-Proto": "https", "Origin": server.url.replace("http:", "https:")}
    refused = login(server, server.tokens["reader"], **https)
    assert refused.status_code == 403
    assert f"its own origin is {server.url}" in html.unescape(refused.text)
    assert "set-cookie" not in refused.headers


def test_an_expired_session_is_refused_naming_when_it_expired(server: Server) -> None:
    token = new_user(server, "jo", ["read"])
    cookie = session_cookie(login(server, token))[1]
    session_id = cookie.split("_")[1]
    ws = server.workspace()
    try:
        with ws.transaction() as session:  # twelve hours later
            row = session.get(UiSession, session_id)
            assert row is not None
            row.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    finally:
        ws.close()
    expired = ui_home(server, cookie)
    assert expired.status_code == 401
    assert f"UI session {session_id} expired at" in html.unescape(expired.text)


def test_bad_session_cookies_count_as_failed_authentications(tmp_path: Path) -> None:
    """A cookie is a credential: guessing sessions is limited like guessing tokens."""
    with api_server(tmp_path / "home", f"sqlite:///{tmp_path}/db", "--auth-failures", "3") as srv:
        forged = f"pbs_{'0' * 16}_{'A' * 43}"
        for _ in range(3):
            assert ui_home(srv, forged).status_code == 401
        limited = ui_home(srv, forged)
        assert limited.status_code == 429
        assert "retry-after" in limited.headers
