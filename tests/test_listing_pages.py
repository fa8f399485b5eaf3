"""Every listing of the REST API that could answer all it holds at once is paged by one
mechanism (``pinbench.api.paging``, issue 83 item 5: ``GET /api/v1/artifacts`` answered 6,122
artifacts, 1.44 MB, at once): a default ``limit``, bounded where it is parsed, keyset paging
by ``after`` = the last item's key, a bad ``after`` refused with 400 naming it; the Python API
(and so ``pinbench list`` through ``PINBENCH_URL``) follows the pages. Against the module's
real server (``server``: the digits catalog published)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import pinbench
from pinbench import remote
from pinbench.api.paging import DEFAULT_LIMIT, MAX_LIMIT
from tests.apiserver import Server


@dataclass(frozen=True)
class Listing:
    path: str
    key: Callable[[dict[str, Any]], str]
    bad_after: str  # a text that is no key of this listing
    why: str


LISTINGS = [
    Listing(
        "/api/v1/artifacts",
        lambda r: f"{r['kind']}/{r['name']}@{r['version']}",
        "model/no-version",
        "6,122 artifacts in one answer",
    ),
]


@pytest.mark.parametrize("listing", LISTINGS, ids=[x.path for x in LISTINGS])
def test_a_listing_is_paged_by_its_keys_and_bounded(server: Server, listing: Listing) -> None:
    with server.client("reader") as http:
        whole = http.get(listing.path, params={"limit": MAX_LIMIT}).json()
        assert len(whole) >= 2, "a catalog of several items to page through"
        walked: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 1}
        while True:
            got = http.get(listing.path, params=params).json()
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
        parameters = schema["paths"][f"{listing.path}"]["get"]["parameters"]
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
