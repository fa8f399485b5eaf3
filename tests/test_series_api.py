"""Series, thresholds, the gate and alerts through a real server (issue 51): one server for
the module, synthetic runs recorded in its database; who may set a threshold or acknowledge an
alert follows publishing rights (the model's namespace); /metrics counts alerts; the web UI's
series page plots each metric as inline SVG."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest

from pinbench.series.alerts import list_alerts
from tests.apiserver import Server, api_server
from tests.helpers import in_process_cli
from tests.series_data import SERIES, latencies, lock, record


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("series-server")
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite", catalog_dir=catalog_dir) as srv:
        yield srv


def test_series_through_the_server_with_rights_metrics_page_and_change_points(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(7)
    ws = server.workspace()
    try:
        old, new = lock(ws, "1.0.0"), lock(ws, "1.1.0")
        history = [record(ws, old, i, latencies(rng, 100_000)) for i in range(5)]
        slower = record(ws, new, 10, latencies(rng, 125_000))
    finally:
        ws.close()
    path = quote(SERIES, safe="/:")
    reader, owner, other = server.client("reader"), server.client("owner"), server.client("other")

    listed = reader.get("/api/v1/series")
    assert listed.status_code == 200 and [s["name"] for s in listed.json()] == [SERIES]
    shown = reader.get(f"/api/v1/series/{path}").json()
    assert [p["run"] for p in shown["points"]] == [*history, slower]
    assert shown["points"][-1]["moved"] == [
        "model vision/digits-logreg@1.0.0 -> vision/digits-logreg@1.1.0"
    ]
    missing = reader.get("/api/v1/series/vision/nothing")
    assert missing.status_code == 404 and "no series" in missing.json()["detail"]

    body = {"metric": "framework_latency_p50_ns", "test": "mann-whitney", "alpha": 0.01}
    url = f"/api/v1/series-thresholds/{path}"
    assert reader.post(url, json=body).status_code == 403  # no publish scope
    refused = other.post(url, json=body)  # publishes, but not in namespace vision
    assert refused.status_code == 403 and "namespace 'vision'" in refused.json()["detail"]
    bad = owner.post(url, json={**body, "alpha": 2})
    assert bad.status_code == 400 and "alpha = 2" in bad.json()["detail"]
    unknown = owner.post(url, json={**body, "windw": 5})
    assert unknown.status_code == 400 and "windw" in unknown.text  # a field never ignored
    twice = owner.post(  # a key given twice: JSON parsers keep the last one without a word
        url,
        content=json.dumps(body)[:-1].encode() + b', "alpha": 0.4}',
        headers={"content-type": "application/json"},
    )
    assert twice.status_code == 400, twice.text
    assert "gives the key 'alpha' twice in one object" in twice.json()["detail"]
    for kind in ("Application/JSON", "text/plain", "application/merge-patch+json"):
        other_type = owner.post(  # Litestar decodes these as JSON too: checked alike
            url, content=json.dumps(body)[:-1].encode() + b', "alpha": 0.4}',
            headers={"content-type": kind},
        )  # fmt: skip
        assert other_type.status_code == 400 and "twice" in other_type.text, (kind, other_type.text)
    deep = owner.post(url, content=b"[" * 5000, headers={"content-type": "application/json"})
    assert deep.status_code == 400 and "nests too deep" in deep.text, deep.text
    assert reader.get(url).json() == []  # nothing stored by the refusals
    set_ = owner.post(url, json=body)
    assert set_.status_code == 200 and set_.json()["version"] == 1
    assert set_.json()["created_by"] == "owner"

    assert reader.post("/api/v1/gate", json={"run": slower}).status_code == 403
    cli = in_process_cli(monkeypatch, capsys, server.home)
    monkeypatch.setenv("PINBENCH_URL", server.url)
    monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["owner"])
    gated = cli("gate", "--run", slower, "--json")
    assert gated.code == 1, gated.err
    info = json.loads(gated.out)
    assert info["outcome"] == "regressed" and info["history"] == history
    assert info["comparisons"][0]["test"] == "mann-whitney"
    assert info["comparisons"][0]["threshold"]["version"] == 1
    alerts = json.loads(cli("series", "alerts", "--json").out)
    assert [(a["kind"], a["run"], a["state"]) for a in alerts] == [("regression", slower, "open")]
    # several runs of one lockfile (decision 264): `runs` in the body, bounded, one lockfile
    two = cli("gate", "--run", history[4], "--run", history[3], "--json")
    assert two.code in (0, 2) and two.out, two.err
    both = json.loads(two.out)
    assert both["runs"] == history[3:] and both["history"] == history[:3]
    assert len(both["comparisons"][0]["candidates"]) == 2
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"runs": [slower] * 21}, "runs (its length) must be between 1 and 20, got 21"),
        ({"runs": []}, "runs (its length) must be between 1 and 20, got 0"),
        ({"run": slower, "runs": [slower]}, "`run` (one id) or `runs` (a list), not both"),
        ({"runs": [history[4], slower]}, f"run {slower[:8]} ran lockfile"),
    ]
    for body, named in refusals:
        refused = owner.post("/api/v1/gate", json=body)
        assert refused.status_code == 400 and named in refused.json()["detail"], refused.text

    metrics = reader.get("/metrics").text
    assert 'pinbench_alerts{state="open"} 1' in metrics
    assert 'pinbench_alerts_total{kind="regression"} 1' in metrics

    page = reader.get(f"/ui/series/{path}")
    assert page.status_code == 200
    assert page.text.count("<svg") == 2  # one plot per metric the series recorded
    assert "threshold v1: mann-whitney test" in page.text and "#cf222e" in page.text
    assert reader.get("/ui/series").status_code == 200

    ack = f"/api/v1/alerts/{alerts[0]['id']}/acknowledge"
    assert other.post(ack).status_code == 403
    done = owner.post(ack)
    assert done.status_code == 200 and done.json()["acknowledged_by"] == "owner"
    assert owner.post(ack).status_code == 400
    assert owner.post("/api/v1/alerts/999/acknowledge").status_code == 404
    ws = server.workspace()
    try:  # acknowledged, never deleted
        assert [a["state"] for a in list_alerts(ws)] == ["acknowledged"]
    finally:
        ws.close()
    assert 'pinbench_alerts{state="acknowledged"} 1' in reader.get("/metrics").text
    _a_recorded_run_finds_a_change_point(server)


def _a_recorded_run_finds_a_change_point(server: Server) -> None:
    """The run pool's hook (``series.watch``): a series at batch 2 shifted 40 % after six runs,
    with a threshold; a real run the server records there raises the change point's alert."""
    import time

    rng = np.random.default_rng(11)
    ws = server.workspace()
    try:
        old, new = lock(ws, "1.0.0", batch_size=2), lock(ws, "1.1.0", batch_size=2)
        runs = [record(ws, old, 100 + i, latencies(rng, 100_000)) for i in range(6)]
        runs += [record(ws, new, 110 + i, latencies(rng, 140_000)) for i in range(6)]
    finally:
        ws.close()
    name = SERIES.replace(":b1:", ":b2:")
    owner = server.client("owner")
    body = {"metric": "framework_latency_p50_ns", "test": "relative", "max_change": 0.1}
    assert owner.post(f"/api/v1/series-thresholds/{name}", json=body).status_code == 200
    assert owner.get("/api/v1/alerts", params={"series": name}).json() == []
    request = {
        "model": "vision/digits-logreg@1.2.0",
        "framework": "onnxruntime@*",
        "dataset": "sklearn-digits-test@^1",
        "batch_size": 2,
        "scenario": {"min_duration_ms": 100, "min_query_count": 20},
    }
    digest = owner.post("/api/v1/lockfiles", json=request).json()["points"][0]["digest"]
    run = owner.post("/api/v1/runs", json={"lockfile": digest, "runner": "local"}).json()["id"]
    deadline = time.monotonic() + 120
    while owner.get(f"/api/v1/runs/{run}").json()["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.2)
    assert owner.get(f"/api/v1/runs/{run}").json()["status"] == "succeeded"
    deadline = time.monotonic() + 10  # the hook runs after the record is written
    while not (alerts := owner.get("/api/v1/alerts", params={"series": name}).json()):
        assert time.monotonic() < deadline, "no change-point alert"
        time.sleep(0.2)
    (alert,) = alerts
    assert (alert["kind"], alert["run"]) == ("change-point", runs[6])
    assert alert["detail"]["moved"] == [
        "model vision/digits-logreg@1.0.0 -> vision/digits-logreg@1.1.0"
    ]


def test_a_threshold_is_retired_through_the_server_with_publishing_rights(server: Server) -> None:
    """``DELETE /api/v1/series-thresholds/{name}?metric=``: a new version that retires the
    metric's threshold, under the rights that set it; earlier versions stay."""
    ws = server.workspace()
    try:
        rng = np.random.default_rng(3)
        for i in range(3):
            record(ws, lock(ws, "1.0.0"), 400 + i, latencies(rng, 100_000), system="lab-t")
    finally:
        ws.close()
    path = quote(SERIES[:-1] + "lab-t", safe="/:")
    url = f"/api/v1/series-thresholds/{path}"
    metric = "framework_latency_p50_ns"
    owner, reader, other = server.client("owner"), server.client("reader"), server.client("other")
    body = {"metric": metric, "test": "relative", "max_change": 0.1}
    assert owner.post(url, json=body).status_code == 200
    assert reader.delete(url, params={"metric": metric}).status_code == 403
    assert other.delete(url, params={"metric": metric}).status_code == 403
    retired = owner.delete(url, params={"metric": metric})
    assert retired.status_code == 200, retired.text
    assert (retired.json()["version"], retired.json()["test"]) == (2, "retired")
    assert retired.json()["created_by"] == "owner"
    assert owner.get(url).json() == []
    assert [t["version"] for t in owner.get(url, params={"all": "true"}).json()] == [1, 2]
    twice = owner.delete(url, params={"metric": metric})
    assert twice.status_code == 400 and "nothing to retire" in twice.json()["detail"]
