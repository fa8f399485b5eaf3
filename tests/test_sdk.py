"""The Python API (``pinbench.Registry``, ``Lockfile``, ``Run``): a notebook's path through the
built-in digits catalog on a local home — publish, lock, verify, run, read the metrics and the
raw latencies, rerun with a verdict, compare, report, attest — and the same reads through a
real ``pinbench serve``. Values are checked against the registry's own records and a direct
computation, never against what the API itself returned earlier."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import pinbench
from pinbench.errors import UserError
from pinbench.evaluator.run import latencies_of
from tests.apiserver import Server
from tests.helpers import DIGITS, dump

PERFORMANCE = {**DIGITS, "scenario": {"name": "SingleStream", "min_query_count": 64}}


@pytest.fixture(scope="module")
def local(
    tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path
) -> Iterator[pinbench.Registry]:
    """A fresh home with every catalog manifest published through the API."""
    with pinbench.Registry(home=tmp_path_factory.mktemp("sdk") / "home") as reg:
        reg.init()
        for manifest in sorted(catalog_dir.glob("*.yaml")):
            published = reg.publish(manifest, publisher="notebook")
            assert published.created, manifest
        yield reg


@pytest.fixture(scope="module")
def run(local: pinbench.Registry, tmp_path_factory: pytest.TempPathFactory) -> pinbench.Run:
    request = dump(tmp_path_factory.mktemp("req") / "request.yaml", PERFORMANCE)
    (lock,) = local.lock(request)
    assert lock.new
    local_run = lock.run(runner="local")
    return local_run


def test_the_names_come_from_pinbench_itself() -> None:
    from pinbench import sdk

    for name in sdk.__all__:
        assert getattr(pinbench, name) is getattr(sdk, name)


def test_list_show_and_resolve_read_what_was_published(local: pinbench.Registry) -> None:
    rows = local.list(kind="model")
    refs = {f"{r['kind']}/{r['name']}@{r['version']}" for r in rows}
    assert "model/vision/digits-logreg@1.1.0" in refs
    shown = local.show("model/vision/digits-logreg@1.1.0")
    assert shown["ref"] == "model/vision/digits-logreg@1.1.0"
    picked = local.resolve(["model/vision/digits-logreg@^1"])
    # the highest 1.x that is not a prerelease, as the rows listed say
    versions = sorted(
        (tuple(int(p) for p in r["version"].split(".")), r["version"])
        for r in rows
        if r["name"] == "vision/digits-logreg" and "-" not in r["version"]
    )
    model = {"kind": "model", "name": "vision/digits-logreg", "version": versions[-1][1]}
    assert picked[0] == model  # and the framework it needs, resolved with it
    assert [p["kind"] for p in picked[1:]] == ["framework"]


def test_publishing_the_same_manifest_again_changes_nothing(
    local: pinbench.Registry, catalog_dir: Path
) -> None:
    manifest = sorted(catalog_dir.glob("model-*.yaml"))[0]
    again = local.publish(manifest)
    assert not again.created and again.new_blobs == 0


def test_a_lockfile_verifies_and_writes_its_canonical_bytes(
    local: pinbench.Registry, run: pinbench.Run, tmp_path: Path
) -> None:
    lock = run.lockfile()
    path = tmp_path / "run.lock"
    lock.write(path)
    assert hashlib.sha256(path.read_bytes().rstrip(b"\n")).hexdigest() == lock.digest
    checks = local.lockfile(path).verify()
    assert len(checks) >= len(lock.artifacts)
    assert "model/vision/digits-logreg@1.2.0" in lock.artifacts


def test_a_run_has_its_metrics_and_its_raw_latencies(
    local: pinbench.Registry, run: pinbench.Run
) -> None:
    assert run.status == "succeeded"
    record = local.run(run.id[:10])  # a unique prefix finds it
    assert record.id == run.id
    latencies = run.latencies()
    raw = latencies_of(local.workspace(), run.info["latencies_sha256"])
    assert latencies.dtype == np.float64 and latencies.shape == raw.shape
    assert np.array_equal(latencies, raw / 1e9)
    assert len(latencies) >= 64
    # the framework call's percentile is the raw latencies' own, by LoadGen's rule (in ns);
    # the headline is LoadGen's summary's
    p50 = run.metrics["framework_latency_p50_ns"]
    ranked = np.sort(raw)
    assert p50 == ranked[int(0.5 * len(ranked))]
    loadgen = run.info["details"]["loadgen"]
    assert run.metrics["latency_p50_ns"] == loadgen["result_50.00_percentile_latency_ns"]
    assert run.units["latency_p50_ns"] == run.units["framework_latency_p50_ns"] == "ns"


def test_runs_lists_the_run_and_compare_names_what_differs(
    local: pinbench.Registry, run: pinbench.Run
) -> None:
    listed = local.runs(limit=5)
    assert listed[0].id == run.id and listed[0].metrics == run.metrics
    compared = run.compare(run.id)
    assert compared["runs"] == [run.id, run.id] and compared["differs"] == []


def test_rerun_gives_a_verdict(run: pinbench.Run) -> None:
    verdict = run.rerun(repeat=1)
    assert verdict.original["id"] == run.id
    assert verdict.outcome in ("reproduced", "not reproduced", "inconclusive")
    assert len(verdict.reruns) == 1


def test_report_and_attestation(run: pinbench.Run) -> None:
    report = run.report("md").decode()
    assert run.id[:8] in report
    line, _ = run.attest()
    statement = json.loads(line)
    assert statement["payloadType"] == "application/vnd.in-toto+json"


def test_a_server_answers_the_same_reads(server: Server) -> None:
    with pinbench.Registry(url=server.url, token=server.tokens["owner"]) as remote:
        here = server.workspace()
        try:
            with pinbench.Registry(home=server.home, database_url=server.database_url) as local:
                assert remote.list() == local.list()
                ref = "model/vision/digits-logreg@1.1.0"
                assert remote.show(ref)["manifest_digest"] == local.show(ref)["manifest_digest"]
                assert remote.resolve(["model/vision/digits-logreg@^1"]) == local.resolve(
                    ["model/vision/digits-logreg@^1"]
                )
        finally:
            here.close()


def test_what_a_server_does_not_offer_is_refused_by_name(server: Server, tmp_path: Path) -> None:
    with pinbench.Registry(url=server.url) as remote:
        with pytest.raises(pinbench.LocalOnly, match="init works on a local registry only"):
            remote.init()
        with pytest.raises(pinbench.LocalOnly, match="a workspace"):
            remote.workspace()


def test_a_home_and_a_url_together_are_refused() -> None:
    with pytest.raises(UserError, match="either a home"):
        pinbench.Registry(home="/tmp/x", url="http://127.0.0.1:9")


def test_a_servers_latencies_digest_that_is_no_sha256_is_refused_before_any_request() -> None:
    """A run record from a server names its latencies blob; a value that is not a sha256
    (a path, a query) is refused, not put into a URL."""
    from pinbench.remote_errors import RemoteFailed
    from pinbench.sdk.runs import Run

    with pinbench.Registry(url="http://127.0.0.1:9") as remote:  # nothing listens there
        run = Run(
            {"id": "x", "status": "succeeded", "units": {}, "latencies_sha256": "../a"}, remote
        )
        with pytest.raises(RemoteFailed, match="no sha256"):
            run.latencies()


def test_a_home_given_with_a_tilde_is_the_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PINBENCH_DATABASE_URL", "sqlite:////nonexistent/not-this-one.db")
    with pinbench.Registry(home="~/bench-home") as reg:
        reg.init()
        assert reg.list() == []
    assert (tmp_path / "bench-home" / "pinbench.db").is_file()
    assert not (Path.cwd() / "~").exists()


def test_the_rest_bound_on_report_runs_is_the_reports_own() -> None:
    from pinbench.reports.data import MAX_RUNS
    from pinbench.sdk.hosting import MAX_REPORT_RUNS

    assert MAX_REPORT_RUNS == MAX_RUNS


def test_a_request_given_as_a_dict_locks_as_its_file_does(
    local: pinbench.Registry, run: pinbench.Run, tmp_path: Path
) -> None:
    (from_dict,) = local.lock(dict(PERFORMANCE))
    assert from_dict.digest == run.lockfile().digest and not from_dict.new
    with pytest.raises(UserError, match="notebook cell"):
        local.lock({"model": "model/vision/digits-logreg@^1"}, source="notebook cell")


def test_an_edited_lockfile_document_is_refused_and_an_unedited_one_is_the_same(
    local: pinbench.Registry, run: pinbench.Run
) -> None:
    from pinbench.sdk.errors import LockfileMismatch

    lock = run.lockfile()
    assert local.lockfile(lock.to_json()).digest == lock.digest
    edited = lock.to_json()
    edited["model"]["trusted"] = True
    forged = local.lockfile(edited)
    assert forged.digest != lock.digest
    with pytest.raises(LockfileMismatch, match="trusted"):
        forged.verify()


def test_a_runs_view_is_what_the_rest_api_shows(
    local: pinbench.Registry, run: pinbench.Run
) -> None:
    assert run.view() == local.hosting().run_view(run.id)


def test_a_run_carries_the_attestation_it_was_recorded_with(run: pinbench.Run) -> None:
    recorded = run.attestation()
    assert recorded is not None
    assert run.attest() == (recorded, False)


def test_the_operator_reads_the_schema_revision_and_checks_it(local: pinbench.Registry) -> None:
    from pinbench.db.schema import HEAD_REVISION

    assert local.admin().revisions() == {"current": HEAD_REVISION, "head": HEAD_REVISION}
    local.admin().check()


def test_users_and_tokens_through_the_api(local: pinbench.Registry) -> None:
    from pinbench.accounts import ANONYMOUS, AuthError
    from pinbench.api_tokens import authenticate

    accounts = local.accounts()
    ann = {"name": "ann", "admin": False, "namespaces": ["vision"], "status": "active"}
    assert accounts.add_user("ann", namespaces=["vision"]) == ann
    assert ann in accounts.users()
    made = accounts.create_token(user="ann", name="nb", scopes=["read"])
    with local.workspace().reads() as rows:  # the secret authenticates as ann
        assert authenticate(rows, made["token"]).user == "ann"
    (listed,) = accounts.tokens(user="ann")
    assert listed["id"] == made["id"] and not listed["revoked"]
    assert made["token"] not in json.dumps(listed)
    accounts.revoke_token(made["id"])
    assert accounts.tokens(user="ann")[0]["revoked"]
    with pytest.raises(AuthError, match="needs a token"):
        accounts.create_token(as_=ANONYMOUS)


def test_digest_is_the_files_sha256_and_size(local: pinbench.Registry, tmp_path: Path) -> None:
    data = np.random.default_rng(7).bytes(100_003)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert local.digest(path) == (hashlib.sha256(data).hexdigest(), len(data))


def test_the_registry_lists_both_of_its_keys(local: pinbench.Registry) -> None:
    rows, problems = local.keys()
    assert {r["purpose"] for r in rows} == {"attestation", "model-signing"}
    assert problems == {}
    info, pem = local.public_key(rows[0]["keyid"][:16])
    assert info["keyid"] == rows[0]["keyid"] and pem.startswith("-----BEGIN PUBLIC KEY-----")
