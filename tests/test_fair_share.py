"""Fair share on a real ``pinbench serve`` with real tokens: failed authentications are
limited per client address and per token id (429 with Retry-After, logged without the
secret, in bounded memory), one user may hold at most ``--runs-per-user`` runs, and waiting
runs start round robin across users (issue 38, point 8)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pinbench.api.fairshare import FairQueue
from pinbench.api.problems import TooManyFailures
from pinbench.api.throttle import AuthThrottle, token_id_of
from tests.apiserver import Server, api_server, wait_for_status

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
        for _ in range(5):
            r = c.get("/api/v1/me", headers={"Authorization": f"Bearer {guessed}"})
            assert r.status_code == 401, r.text
        refused = c.get("/api/v1/me", headers={"Authorization": f"Bearer {guessed}"})
        assert refused.status_code == 429, refused.text
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert "too many failed authentications" in refused.json()["detail"]
        # the address is held back, whichever token it now shows, until the window passes
        held = c.get("/api/v1/me", headers={"Authorization": f"Bearer {good}"})
        assert held.status_code == 429
        assert c.get("/api/v1/health").status_code == 200  # no token: nothing to throttle
    log = (server.home / "serve.log").read_text()
    assert log.count("authentication failed") == 5, log
    assert f"token {token_id}" in log
    assert "x" * 43 not in log and good.rsplit("_", 1)[1] not in log


def test_a_token_id_is_limited_whatever_address_it_comes_from() -> None:
    now = [0.0]
    throttle = AuthThrottle(failures=3, window_s=60, clock=lambda: now[0])
    for i in range(3):  # three addresses, one token id
        throttle.failed(throttle.keys(f"10.0.0.{i}", "0123456789abcdef"), "unknown API token")
    with pytest.raises(TooManyFailures) as refused:
        throttle.check(throttle.keys("10.0.0.99", "0123456789abcdef"))
    assert refused.value.retry_after_s == 60
    throttle.check(throttle.keys("10.0.0.99", "fedcba9876543210"))  # another token: free
    now[0] = 60.5  # the window passed
    throttle.check(throttle.keys("10.0.0.99", "0123456789abcdef"))


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
