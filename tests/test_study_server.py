"""Studies through a server (issue 74, item 4): listed, shown and reported over REST and in the
web UI, the same as on the local registry; read with the ``read`` scope; a caller's name never
opens a file on the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pinbench.sdk.registry import Registry
from pinbench.studies.errors import StudyNotFound
from pinbench.studies.execute import run_study
from pinbench.studies.spec import parse_study
from tests.apiserver import Server, api_server
from tests.test_study import study_data

__all__ = ["server"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Server]:
    """A server whose registry holds the study ``tiny``: two models, accuracy and
    SingleStream, on one configuration and on one that names a CPU the machine lacks."""
    root = tmp_path_factory.mktemp("studies")
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite", catalog_dir=catalog_dir) as srv:
        data = study_data()
        data["scenarios"].pop("Offline")
        data["models"][0].pop("batch_sizes")
        data["systems"] = data["systems"][1:]
        ws = srv.workspace()
        try:
            run_study(ws, parse_study(data, source="tiny.yaml"), "tiny.yaml", say=lambda _: None)
        finally:
            ws.close()
        yield srv


def test_rest_and_the_python_api_show_what_the_local_registry_recorded(server: Server) -> None:
    ws = server.workspace()
    try:
        local = Registry.over(ws).studies().show("tiny")
    finally:
        ws.close()
    with server.client("reader") as c:
        listed = c.get("/api/v1/studies").json()
        shown = c.get("/api/v1/studies/tiny").json()
        planned = c.get("/api/v1/studies/seed-quick").json()
        report = c.get("/api/v1/studies/tiny/report")
    assert [(s["name"], s["cells"]) for s in listed] == [("tiny", {"done": 4, "refused": 4})]
    assert shown == local
    assert {c["state"] for c in planned["cells"]} == {"planned"} and planned["name"] == "seed-quick"
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert "script-src 'sha256-" in report.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in report.headers["content-security-policy"]
    for cell in shown["cells"]:
        if cell["run"]:
            assert cell["run"][:8] in report.text
    with Registry(url=server.url, token=server.tokens["reader"]) as remote:
        assert remote.studies().show("tiny") == local
        assert remote.studies().list() == listed
        assert b"Pareto fronts" in remote.studies().report("tiny")


def test_the_web_ui_shows_a_studys_matrix_with_its_plots_and_links(server: Server) -> None:
    with server.client("reader") as c:
        studies = c.get("/ui/studies").text
        page = c.get("/ui/studies/tiny").text
        missing = c.get("/ui/studies/nothing")
    assert 'href="/ui/studies/tiny"' in studies and "4 done, 4 refused" in studies
    for key in ("pareto", "speedups", "streams", "batches"):
        assert f'id="chart-{key}"' in page
    assert 'class="chart-spec" data-chart="pareto"' in page
    with server.client("reader") as c:
        shown = c.get("/api/v1/studies/tiny").json()
    for cell in shown["cells"]:
        if cell["run"]:
            assert f'href="/ui/runs/{cell["run"]}"' in page
            assert f'href="/ui/lockfiles/{cell["lockfile"]}"' in page
    assert missing.status_code == 404 and "no study &#39;nothing&#39;" in missing.text
    _drawn_in_a_browser(server.url + "/ui/studies/tiny")


def _drawn_in_a_browser(url: str) -> None:
    from playwright.sync_api import sync_playwright

    from tests.test_web import chromium, rendered_charts, watch_policy

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            violations = watch_policy(page)
            page.goto(url)
            # no Offline cell here: those two plots say why instead
            assert rendered_charts(page) == ["pareto", "speedups"]
            assert "no model sweeps batch sizes" in page.content()
            assert violations == []
        finally:
            browser.close()


def test_a_caller_reads_studies_with_the_read_scope_and_never_a_file(
    server: Server, tmp_path: Path
) -> None:
    with server.client() as c:  # reads are public here; a bad token is refused all the same
        bad = c.get("/api/v1/studies", headers={"Authorization": "Bearer not-a-token"})
        assert bad.status_code == 401
    study = tmp_path / "secret.yaml"
    study.write_text(yaml.safe_dump(study_data("secret")))
    with server.client("reader") as c:
        for name in (str(study), str(study).replace("/", "%2F"), "..%2F..%2Fetc%2Fpasswd"):
            answer = c.get(f"/api/v1/studies/{name}")
            assert answer.status_code == 404, (name, answer.text)
            assert "secret" not in json.dumps(answer.json()).replace(name, "")
    ws = server.workspace()
    try:  # on the local registry a file is a study to plan; with files=False (a server) not
        assert Registry.over(ws).studies().show(str(study))["name"] == "secret"
        with pytest.raises(StudyNotFound):
            Registry.over(ws).studies().show(str(study), files=False)
    finally:
        ws.close()
