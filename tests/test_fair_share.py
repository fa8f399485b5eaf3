"""Fair share on a real ``pinbench serve`` with real tokens: failed authentications are
limited per client address, never per token id alone (429 with Retry-After, logged without
the secret, in bounded memory; X-Forwarded-For read only when trusted), one user may hold at
most ``--runs-per-user`` runs, and waiting runs start round robin across users (issue 38,
point 8; issue 48, item 12)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pinbench.api.fairshare import FairQueue
from pinbench.api.problems import TooManyFailures
from pinbench.api.throttle import AuthThrottle, token_id_of
from tests.apiserver import Server, api_server, token_secret, wait_for_status

# A long run that costs little (LoadGen's Server scenario at 20 queries/s for up to 10 min).
LONG = {
    "model": "vision/digits-logreg@1.1.0",
    "dataset": "sklearn-digits-test@^1",
    "scenario": {"name": "Server", "target_qps": 20, "min_duration_ms": 600_000},
}


@pytest.fixture
def server(tmp_path: Path, catalog_dir: Path) -> Iterator[Server]:
    args = ("--auth-failures", "5", "--runs-per-user", "3", "--run-workers", "1")
    with api_server(
        tmp_path / "home", f"sqlite:///{tmp_path}/db.sqlite", *args, catalog_dir=catalog_dir
    ) as s:
        yield s


def test_failed_authentications_past_the_limit_get_429_and_are_logged_without_the_secret(
    server: Server,
) -> None:
    good = server.tokens["owner"]
    token_id = server.token_ids["owner"]
    guessed = f"pbt_{token_id}_{'x' * 43}"  # the right id, a wrong secret
    with httpx.Client(base_url=server.url) as c:
        # each try names another client in X-Forwarded-For, which this server does not trust
        # (no --trust-forwarded-for): they all count against the connection's address, 16
        # made-up addresses no longer dodge the limit (issue 48, item 12)
        tries = ["junk-token", "pbt_nope", "x", guessed, guessed]
        for i, token in enumerate(tries):
            headers = {"Authorization": f"Bearer {token}", "X-Forwarded-For": f"10.9.0.{i}"}
            r = c.get("/api/v1/me", headers=headers)
            assert r.status_code == 401, r.text
        headers = {"Authorization": f"Bearer {guessed}", "X-Forwarded-For": "10.9.0.99"}
        refused = c.get("/api/v1/me", headers=headers)
        assert refused.status_code == 429, refused.text
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert "too many failed authentications" in refused.json()["detail"]
        # the address is held back, whichever token it now shows, until the window passes
        held = c.get("/api/v1/me", headers={"Authorization": f"Bearer {good}"})
        assert held.status_code == 429
        assert c.get("/api/v1/health").status_code == 200  # no token: nothing to throttle
    log = (server.home / "serve.log").read_text()
    assert log.count("authentication failed") == 5, log
    assert log.count("authentication failed (address 127.0.0.1") == 5, log
    assert "10.9.0." not in log
    assert f"token {token_id}" in log
    assert "x" * 43 not in log and token_secret(good) not in log


def test_wrong_secrets_for_a_token_id_hold_back_their_address_not_the_tokens_holder(
    tmp_path: Path,
) -> None:
    """A token id is public: five wrong secrets with someone else's id, sent from one address,
    held the holder out for a minute from everywhere. Now they hold back only the address they
    came from. Behind a proxy the server trusts (``--trust-forwarded-for``), the address is
    the one X-Forwarded-For names (issue 48, item 12)."""
    args = ("--auth-failures", "5", "--trust-forwarded-for")
    with api_server(tmp_path / "home", f"sqlite:///{tmp_path}/db.sqlite", *args) as server:
        token_id = server.token_ids["owner"]
        guessed = f"pbt_{token_id}_{'x' * 43}"
        attacker = {"Authorization": f"Bearer {guessed}", "X-Forwarded-For": "10.0.0.66"}
        with httpx.Client(base_url=server.url) as c:
            for _ in range(5):
                assert c.get("/api/v1/me", headers=attacker).status_code == 401
            refused = c.get("/api/v1/me", headers=attacker)
            assert refused.status_code == 429, refused.text
            assert "address 10.0.0.66" in refused.json()["detail"]
            holder = {"Authorization": f"Bearer {server.tokens['owner']}"}
            for where in ("10.0.0.7", None):  # elsewhere behind the proxy, or the proxy itself
                headers = holder | ({"X-Forwarded-For": where} if where else {})
                mine = c.get("/api/v1/me", headers=headers)
                assert mine.status_code == 200, mine.text
                assert mine.json()["user"] == "owner"
            # the attacker's address stays held back, whatever token it shows
            assert (
                c.get("/api/v1/me", headers=holder | {"X-Forwarded-For": "10.0.0.66"}).status_code
                == 429
            )
        log = (server.home / "serve.log").read_text()
        assert log.count(f"authentication failed (address 10.0.0.66, token {token_id})") == 5


def test_failures_count_against_the_address_a_token_id_is_tried_from() -> None:
    now = [0.0]
    throttle = AuthThrottle(failures=3, window_s=60, clock=lambda: now[0])
    for _ in range(3):  # someone else's token id, wrong secrets, from one address
        throttle.failed(throttle.keys("10.0.0.66", "0123456789abcdef"), "wrong secret")
    with pytest.raises(TooManyFailures) as refused:
        throttle.check(throttle.keys("10.0.0.66", "fedcba9876543210"))  # any id from there
    assert refused.value.retry_after_s == 60 and refused.value.who == "address 10.0.0.66"
    throttle.check(throttle.keys("10.0.0.7", "0123456789abcdef"))  # the holder, elsewhere: free
    for i in range(3):  # one id from three addresses: each address has its own count
        throttle.failed(throttle.keys(f"10.0.1.{i}", "0123456789abcdef"), "wrong secret")
    throttle.check(throttle.keys("10.0.1.0", "0123456789abcdef"))
    for _ in range(3):  # where no address is known, the id is the key
        throttle.failed(throttle.keys(None, "0123456789abcdef"), "wrong secret")
    with pytest.raises(TooManyFailures):
        throttle.check(throttle.keys(None, "0123456789abcdef"))
    now[0] = 60.5  # the window passed
    throttle.check(throttle.keys("10.0.0.66", "0123456789abcdef"))


def test_forwarded_headers_are_read_only_when_the_operator_trusts_them() -> None:
    """``behind_proxy``: X-Forwarded-For names the client and X-Forwarded-Proto the scheme
    only with their own option each (from a FORWARDED_ALLOW_IPS address: loopback here)."""
    import anyio

    from pinbench.api.server import behind_proxy

    seen: list[tuple[str, str]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope["client"][0], scope["scheme"]))

    headers = [(b"x-forwarded-for", b"10.1.2.3"), (b"x-forwarded-proto", b"https")]
    scope = {"type": "http", "client": ("127.0.0.1", 5000), "scheme": "http", "headers": headers}
    for proto, forwarded_for in ((False, False), (True, False), (False, True), (True, True)):
        wrapped = behind_proxy(app, trust_forwarded_proto=proto, trust_forwarded_for=forwarded_for)
        anyio.run(wrapped, dict(scope), None, None)
    assert seen == [
        ("127.0.0.1", "http"),
        ("127.0.0.1", "https"),
        ("10.1.2.3", "http"),
        ("10.1.2.3", "https"),
    ]


def test_made_up_addresses_cost_bounded_memory() -> None:
    throttle = AuthThrottle(failures=5, window_s=60, max_keys=100)
    for i in range(5000):
        throttle.failed(throttle.keys(f"10.{i // 256}.{i % 256}.1", None), "malformed API token")
    assert len(throttle) == 100


@pytest.mark.parametrize(
    ("text", "token_id"),
    [
        ("pbt_0123456789abcdef_" + "s" * 43, "0123456789abcdef"),
        ("pbt_0123456789ABCDEF_" + "s" * 43, None),  # ids are lowercase hex
        ("pbt_0123_secret", None),  # too short an id
        ("bearer-junk", None),
        (None, None),
    ],
)
def test_token_ids_are_read_without_the_secret(text: str | None, token_id: str | None) -> None:
    assert token_id_of(text) == token_id


def test_waiting_runs_start_round_robin_across_users() -> None:
    queue: FairQueue[str] = FairQueue()
    queue.put("owner", "a1")
    assert queue.take() == "a1"  # owner was served last
    for item in ("a2", "a3", "a4"):
        queue.put("owner", item)
    queue.put("other", "b1")
    queue.put("third", "c1")
    assert [queue.take() for _ in range(6)] == ["b1", "c1", "a2", "a3", "a4", None]


def _submit(c: httpx.Client, digest: str) -> httpx.Response:
    return c.post("/api/v1/runs", json={"lockfile": digest, "runner": "local"})


def test_one_user_cannot_fill_the_queue_and_another_users_run_goes_first(server: Server) -> None:
    with server.client("owner") as owner, server.client("other") as other:
        digest = owner.post("/api/v1/lockfiles", json=LONG).json()["points"][0]["digest"]
        first = _submit(owner, digest).json()["id"]
        wait_for_status(owner, first, ("running",))
        waiting = [_submit(owner, digest).json()["id"] for _ in range(2)]
        over = _submit(owner, digest)
        assert over.status_code == 429, over.text
        assert "owner already has 3 runs queued or running" in over.json()["detail"]
        assert "the cap per user (serve --runs-per-user)" in over.json()["detail"]
        assert over.headers["retry-after"]
        theirs = _submit(other, digest)
        assert theirs.status_code == 202, theirs.text  # the queue has room for them
        assert owner.delete(f"/api/v1/runs/{first}").status_code == 202
        wait_for_status(other, theirs.json()["id"], ("running",), 120)
        statuses = [owner.get(f"/api/v1/runs/{r}").json()["status"] for r in waiting]
        assert statuses == ["queued", "queued"]  # the other user's one run went first
