"""Every listing of the REST API that could answer all it holds at once is paged by one
mechanism (``pinbench.api.paging``, issue 83 item 5: ``GET /api/v1/artifacts`` answered 6,122
artifacts, 1.44 MB, at once): a default ``limit``, bounded where it is parsed, keyset paging
by ``after`` = the last item's key, a bad ``after`` refused with 400 naming it; the Python API
(and so ``pinbench list`` through ``PINBENCH_URL``) follows the pages. Against the module's
real server (``server``: the digits catalog published; ``listed`` records two or more of each
listing's items in its database: tokens, keys, series with runs, alerts, studies, systems)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest

import pinbench
from pinbench import remote
from pinbench.api.paging import DEFAULT_LIMIT, MAX_LIMIT
from pinbench.provenance.keys import ensure_keys
from tests.apiserver import Server
from tests.series_data import SERIES, lock, record


@dataclass(frozen=True)
class Listing:
    path: str
    key: Callable[[dict[str, Any]], str]
    bad_after: str  # a text that is no key of this listing
    why: str
    who: str = "reader"
    field: str | None = None  # the answer's paged list, when the answer is an object
    template: str | None = None  # its path in the OpenAPI document, when not ``path``


def _id(name: str) -> Callable[[dict[str, Any]], str]:
    return lambda r: str(r[name])


LISTINGS = [
    Listing(
        "/api/v1/artifacts",
        lambda r: f"{r['kind']}/{r['name']}@{r['version']}",
        "model/no-version",
        "6,122 artifacts in one answer",
    ),
    Listing(
        "/api/v1/artifacts/versions/model/vision/digits-logreg",
        _id("version"),
        "1.x",
        "a name's every version at once",
        template="/api/v1/artifacts/versions/{kind}/{name}",
    ),
    Listing("/api/v1/tokens", _id("id"), "no-such-token", "a user's every token at once"),
    Listing("/api/v1/users", _id("name"), "nobody", "every user at once", who="admin"),
    Listing("/api/v1/keys", _id("keyid"), "0" * 64, "every signing key at once"),
    Listing("/api/v1/series", _id("name"), "vision/none", "every series at once"),
    Listing(
        f"/api/v1/series/{quote(SERIES, safe='/:')}",
        _id("run"),
        "not-a-run",
        "a series' every run at once",
        field="points",
        template="/api/v1/series/{name}",
    ),
    Listing("/api/v1/alerts", _id("id"), "999999", "after was not taken: no way past a page"),
    Listing("/api/v1/studies", _id("name"), "no-study", "every study at once"),
    Listing("/api/v1/systems", _id("name"), "no-system", "every system at once"),
]


@pytest.fixture(scope="module")
def listed(server: Server) -> Server:
    """Two or more of each listing's items: a second token of the reader's, the registry's
    keys (attestation and model-signing), two series (one of several runs),
    alerts, studies and systems written as their modules write them."""
    with server.client("reader") as http:
        assert http.post("/api/v1/tokens", json={"name": "second"}).status_code == 201
    ws = server.workspace()
    try:
        ensure_keys(ws)
        one, other = lock(ws, "1.0.0"), lock(ws, "1.0.0", batch_size=2)
        runs = [record(ws, one, i, [100_000.0] * 20) for i in range(3)]
        record(ws, other, 5, [100_000.0] * 20)
        at = datetime(2026, 1, 1, tzinfo=UTC)
        with ws.writes() as rows:
            for i, run in enumerate(runs):
                rows(
                    "INSERT INTO alerts (series, metric, kind, run_id, detail, state, created_at)"
                    " VALUES (:s, 'throughput_sps', 'regression', :run, '{}', 'open', :at)",
                    {"s": SERIES, "run": run, "at": at + timedelta(minutes=i % 2)},
                )
            for i in range(3):
                rows(
                    "INSERT INTO studies (name, digest, definition, source, created_at) "
                    "VALUES (:n, :d, '{}', 'test', :at)",
                    {"n": f"study-{i}", "d": f"{i:064x}", "at": at + timedelta(days=i % 2)},
                )
                rows(
                    "INSERT INTO systems (name, facts, node_id, registered_at, seen_at) "
                    "VALUES (:n, :facts, NULL, :at, :at)",
                    {"n": f"system-{i}", "facts": json.dumps({"cpu": "x"}), "at": at},
                )
    finally:
        ws.close()
    return server


@pytest.mark.parametrize("listing", LISTINGS, ids=[x.path for x in LISTINGS])
def test_a_listing_is_paged_by_its_keys_and_bounded(listed: Server, listing: Listing) -> None:
    def items(answer: Any) -> list[dict[str, Any]]:
        got = answer[listing.field] if listing.field else answer
        assert isinstance(got, list), answer
        return got

    with listed.client(listing.who) as http:
        whole = items(http.get(listing.path, params={"limit": MAX_LIMIT}).json())
        assert len(whole) >= 2, "several items to page through"
        walked: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 1}
        for _ in range(len(whole) + 1):  # a listing that ignores `after` ends the walk too
            got = items(http.get(listing.path, params=params).json())
            assert len(got) <= 1, listing.why
            walked += got
            if not got:
                break
            params = {"limit": 1, "after": listing.key(got[-1])}
        assert walked == whole, listing.why
        for limit in (0, MAX_LIMIT + 1, "many"):
            answer = http.get(listing.path, params={"limit": limit})
            assert answer.status_code == 400, (limit, answer.text)
        bad = http.get(listing.path, params={"after": listing.bad_after})
        assert bad.status_code == 400, bad.text
        assert "after" in bad.json()["detail"] and listing.bad_after in bad.json()["detail"]
        long = http.get(listing.path, params={"after": "x" * 10_000})
        assert long.status_code == 400, long.text
        schema = http.get("/schema/openapi.json").json()
        parameters = schema["paths"][listing.template or listing.path]["get"]["parameters"]
        limit_doc = next(p for p in parameters if p["name"] == "limit")["schema"]
        assert limit_doc["default"] == DEFAULT_LIMIT and limit_doc["maximum"] == MAX_LIMIT


def test_the_python_api_follows_the_pages(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Registry.list`` through a server (``pinbench list`` with ``PINBENCH_URL``) still lists
    everything: it follows the pages (made one item long here)."""
    with server.client("reader") as http:
        whole = http.get("/api/v1/artifacts", params={"limit": MAX_LIMIT}).json()
    monkeypatch.setattr(remote, "PAGE_LIMIT", 1)
    with pinbench.Registry(url=server.url, token=server.tokens["reader"]) as reg:
        assert reg.list() == whole


CLIENTS: list[tuple[str, str | None, Callable[[pinbench.Registry], Any]]] = [
    ("/api/v1/tokens", None, lambda reg: reg.accounts().tokens()),
    ("/api/v1/keys", None, lambda reg: reg.keys()[0]),
    ("/api/v1/series", None, lambda reg: reg.series().list()),
    (LISTINGS[6].path, "points", lambda reg: reg.series().show(SERIES)),
    ("/api/v1/studies", None, lambda reg: reg.studies().list()),
]


@pytest.mark.parametrize(("path", "field", "call"), CLIENTS, ids=[c[0] for c in CLIENTS])
def test_the_python_api_follows_every_listings_pages(
    listed: Server,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    field: str | None,
    call: Callable[[pinbench.Registry], Any],
) -> None:
    """Each client of a paged listing (the CLI's commands through ``PINBENCH_URL``) still
    gets every item, pages one item long."""
    with listed.client("reader") as http:
        whole = http.get(path, params={"limit": MAX_LIMIT}).json()
    monkeypatch.setattr(remote, "PAGE_LIMIT", 1)
    with pinbench.Registry(url=listed.url, token=listed.tokens["reader"]) as reg:
        assert call(reg) == whole


@pytest.mark.parametrize(
    ("case", "answers", "said"),
    [
        # a server that answers the same full page whatever the cursor: the client stops
        ("the same page again", lambda asked: [{"id": "a"}, {"id": "b"}], "came again"),
        # a full page whose last item lacks the listing's key: a clear error, no traceback
        ("an item without its key", lambda asked: [{"id": "a"}, {"name": "b"}], "without its key"),
        # a server that pages for ever with a new cursor each time: stopped at MAX_PAGES
        (
            "pages for ever",
            lambda asked: [
                {"id": f"{asked.get('after', '')}x"},
                {"id": f"{asked.get('after', '')}y"},
            ],
            "more than 3 pages",
        ),
    ],
)
def test_a_server_that_pages_wrongly_gets_a_clear_error_not_a_loop(
    monkeypatch: pytest.MonkeyPatch, case: str, answers: Callable[[dict[str, Any]], Any], said: str
) -> None:
    from pinbench.errors import UserError

    monkeypatch.setattr(remote, "PAGE_LIMIT", 2)
    monkeypatch.setattr(remote, "MAX_PAGES", 3)
    client = remote.Remote("http://127.0.0.1:9")
    monkeypatch.setattr(client, "json", lambda method, path, params: answers(params))
    try:
        with pytest.raises(UserError, match=said):
            client.pages("/api/v1/tokens", {}, lambda item: str(item["id"]))
    finally:
        client.close()
