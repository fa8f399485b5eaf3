"""Limits on what one input may ask for, each refused with a message naming the field and the
limit while nothing is recorded: file paths, names and versions within the database's columns,
version numbers within 2^53, a request's fan-out and durations, run ids that are never LIKE
patterns, and uploads that carry every file's bytes (no blob-existence oracle). Through the
library and through a real ``pinbench serve``."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from sqlalchemy import String, func, select

from pinbench.db.models import Artifact, ArtifactFile, Run
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.errors import RangeError, VersionError
from pinbench.evaluator.records.run_view import RunNotFound, run_id_prefix, show_run
from pinbench.registry.manifest import load_manifest_text
from pinbench.registry.manifest_parts import PATH_MAX_LENGTH, ManifestError
from pinbench.registry.names import (
    NAME_MAX_LENGTH,
    NAMESPACE_MAX_LENGTH,
    ArtifactRef,
    BadReference,
    check_name,
)
from pinbench.registry.ranges import Range
from pinbench.registry.request import MLPERF_PRESET, RequestError, parse_request
from pinbench.registry.versions import MAX_NUMBER, parse_version
from pinbench.workspace import Workspace
from tests.apiserver import Server
from tests.test_api import REQUEST, manifest_doc, multipart

UPLOAD = {"content-type": "multipart/form-data; boundary=XyZ"}
MODEL = "model/vision/digits-logreg@1.2.0"


# ------------------------------------------------------------------ the columns


def _length(column: Any) -> int:
    assert isinstance(column.type, String)
    assert column.type.length is not None
    return column.type.length


def test_the_limits_are_the_database_columns() -> None:
    """Each length check is the column it protects: SQLite would store a longer value whole,
    PostgreSQL refuse it."""
    assert _length(Artifact.__table__.c.name) == NAME_MAX_LENGTH
    assert _length(Artifact.__table__.c.namespace) == NAMESPACE_MAX_LENGTH
    assert _length(ArtifactFile.__table__.c.path) == PATH_MAX_LENGTH
    longest = f"{MAX_NUMBER}.{MAX_NUMBER}.{MAX_NUMBER}-{'a' * 64}+{'b' * 64}"
    assert str(parse_version(longest)) == longest
    assert len(longest) <= _length(Artifact.__table__.c.version)


# ------------------------------------------------------------------ file paths


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        pytest.param(".", "must name a file: no empty, '.' or '..' part", id="the artifact itself"),
        pytest.param("..", "must not contain '..'", id="the parent"),
        pytest.param("a/.", "must be normalised", id="a trailing dot"),
        pytest.param("a//b", "must be normalised", id="an empty component"),
        pytest.param("a/", "must be normalised", id="an empty last component"),
        pytest.param("./a", "must be normalised", id="a leading dot"),
        pytest.param("a" * 1001, "1001 characters: at most 1000", id="longer than the column"),
    ],
)
def test_a_file_path_that_is_not_a_file_inside_the_artifact_is_refused(
    path: str, needle: str
) -> None:
    doc = manifest_doc("vision/paths", "1.0.0", {path: b"x"})
    with pytest.raises(ManifestError) as info:
        load_manifest_text(yaml.safe_dump(doc))
    assert needle in str(info.value)


def test_the_longest_file_path_is_accepted() -> None:
    path = "/".join(["d" * 99] * 10)  # 999 characters
    doc = manifest_doc("vision/paths", "1.0.0", {path: b"x"})
    assert load_manifest_text(yaml.safe_dump(doc)).files_list[0].path == path


# ------------------------------------------------------------------ names


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("a" * 200, id="200: the column"),
        pytest.param("n" * 100 + "/" + "x" * 99, id="a 100-character namespace"),
    ],
)
def test_names_as_long_as_the_columns_are_accepted(name: str) -> None:
    assert check_name(name) == name
    assert ArtifactRef.parse(f"model/{name}@1.0.0").name == name


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        pytest.param("a" * 201, "201 characters: at most 200", id="one over"),
        pytest.param("n" * 50 + "/" + "x" * 150, "201 characters: at most 200", id="namespaced"),
        pytest.param("n" * 101 + "/x", "is 101 characters: at most 100", id="a long namespace"),
    ],
)
def test_names_longer_than_the_columns_are_refused(name: str, needle: str) -> None:
    with pytest.raises(ValueError, match="at most"):
        check_name(name)
    with pytest.raises(BadReference) as info:
        ArtifactRef.parse(f"model/{name}@1.0.0")
    assert needle in str(info.value)


# ------------------------------------------------------------------ versions and ranges

TOO_LARGE = "is larger than 2^53 - 1"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        pytest.param("1" * 26 + ".0.0", f"major 11111111111111111111... (26 digits) {TOO_LARGE}",
                     id="26 digits"),
        pytest.param(f"{MAX_NUMBER + 1}.0.0", f"major 9007199254740992 {TOO_LARGE}", id="2^53"),
        pytest.param(f"1.{MAX_NUMBER + 1}.0", f"minor 9007199254740992 {TOO_LARGE}", id="minor"),
        pytest.param(f"1.0.{10**20}", f"patch 10000000000000000000... (21 digits) {TOO_LARGE}",
                     id="patch"),
        pytest.param("1.0.0-" + "a" * 300, "306 characters: a version is at most 200",
                     id="300-character prerelease"),
        pytest.param("1.0.0-" + "a" * 65, "prerelease 'aaaaaaaaaaaaaaaaaaaa'... is 65 characters: "
                     "at most 64", id="65-character prerelease"),
        pytest.param("1.0.0+" + "b" * 65, "build 'bbbbbbbbbbbbbbbbbbbb'... is 65 characters: "
                     "at most 64", id="65-character build"),
        pytest.param("1" * 5000 + ".0.0", "5004 characters: a version is at most 200",
                     id="5,000 digits"),
    ],
)  # fmt: skip
def test_oversized_versions_are_refused(text: str, needle: str) -> None:
    with pytest.raises(VersionError) as info:
        parse_version(text)
    assert needle in str(info.value)
    assert len(str(info.value)) < 300, "the message does not echo a huge input"


@pytest.mark.parametrize(
    "text",
    [f"{MAX_NUMBER}.0.0", f"0.0.{MAX_NUMBER}", "1.0.0-" + "a" * 64, "1.0.0+" + "b" * 64],
    ids=["2^53 - 1 major", "2^53 - 1 patch", "64-character prerelease", "64-character build"],
)
def test_versions_at_the_limits_are_accepted(text: str) -> None:
    assert str(parse_version(text)) == text


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        pytest.param("^" + "1" * 26, TOO_LARGE, id="a caret, 26 digits"),
        pytest.param(f">={MAX_NUMBER + 1}", TOO_LARGE, id="a bound past 2^53"),
        pytest.param(f"1.x - {'9' * 17}", TOO_LARGE, id="a hyphen range"),
        pytest.param("~1.0.0-" + "a" * 65, "is 65 characters: at most 64", id="long prerelease"),
        pytest.param(" || ".join(["1.x"] * 300), "2096 characters: a range is at most 1024",
                     id="2,096 characters"),
    ],
)  # fmt: skip
def test_oversized_ranges_are_refused(text: str, needle: str) -> None:
    with pytest.raises(RangeError) as info:
        Range.parse(text)
    assert needle in str(info.value)


def test_a_range_at_the_limits_is_accepted() -> None:
    rng = Range.parse(f">={MAX_NUMBER}.0.0-{'a' * 64}")
    assert rng.allows(parse_version(f"{MAX_NUMBER}.0.0"))


# ------------------------------------------------------------------ evaluation requests

BASE: dict[str, Any] = {"model": "vision/m@1", "dataset": "d@1"}


def _scenario(**settings: Any) -> dict[str, Any]:
    return {**BASE, "scenario": settings}


#           label                     request                                              needle
BAD_REQUESTS = [
    ("a sweep of 3,000 sizes",  {**BASE, "batch_size": list(range(1, 3001))},
     "batch_size lists 3000 sizes: a sweep has at most 64"),
    ("a sweep of 65 sizes",     {**BASE, "batch_size": list(range(1, 66))},
     "batch_size lists 65 sizes: a sweep has at most 64"),
    ("a batch of a million",    {**BASE, "batch_size": 1_000_000},
     "batch_size must be between 1 and 65536, got 1000000"),
    ("one huge size in a sweep", {**BASE, "batch_size": [1, 65_537]},
     "batch_size[1] must be between 1 and 65536, got 65537"),
    ("a year-long minimum",     _scenario(min_duration_ms=31_536_000_000),
     "scenario.min_duration_ms must be between 0 and 86400000, got 31536000000"),
    ("a billion queries",       _scenario(min_query_count=10**9),
     "scenario.min_query_count must be between 1 and 10000000, got 1000000000"),
    ("a billion as the cap",    _scenario(max_query_count=10**9),
     "scenario.max_query_count must be between 1 and 10000000, got 1000000000"),
    ("a cap of zero",           _scenario(max_query_count=0),
     "scenario.max_query_count must be between 1 and 10000000, got 0"),
    ("a billion samples",       _scenario(sample_count=10**9),
     "scenario.sample_count must be between 1 and 10000000, got 1000000000"),
    ("zero samples",            _scenario(sample_count=0),
     "scenario.sample_count must be between 1 and 10000000, got 0"),
    ("a million per query",     _scenario(name="MultiStream", samples_per_query=10**6),
     "scenario.samples_per_query must be between 1 and 65536"),
    ("a timeout of 30 years",   {**BASE, "limits": {"timeout_s": 10**9}},
     "limits.timeout_s must be between 1 and 604800, got 1000000000"),
    ("a petabyte of memory",    {**BASE, "limits": {"memory_mb": 10**9}},
     "limits.memory_mb must be between 64 and 4194304, got 1000000000"),
    ("a 26-digit model range",  {**BASE, "model": "vision/m@^" + "1" * 26},
     "is larger than 2^53 - 1"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "needle"), [c[1:] for c in BAD_REQUESTS], ids=[c[0] for c in BAD_REQUESTS]
)
def test_silly_requests_are_refused_naming_the_field_and_the_limit(
    data: dict[str, Any], needle: str
) -> None:
    with pytest.raises(RequestError) as info:
        parse_request(data)
    assert needle in str(info.value)


#            label                    request
GOOD_REQUESTS = [
    ("a sweep of 64",          {**BASE, "batch_size": list(range(1, 65))}),
    ("the largest batch",      {**BASE, "batch_size": 65_536}),
    ("24 hours, 10M queries",  _scenario(min_duration_ms=86_400_000, min_query_count=10_000_000,
                                         max_query_count=10_000_000, sample_count=10_000_000)),
    ("the largest limits",     {**BASE, "limits": {"timeout_s": 604_800, "memory_mb": 4_194_304}}),
    *[(f"MLPerf {name}",       _scenario(name=name, preset="mlperf", target_qps=10.0))
      for name in MLPERF_PRESET],
]  # fmt: skip


@pytest.mark.parametrize("data", [c[1] for c in GOOD_REQUESTS], ids=[c[0] for c in GOOD_REQUESTS])
def test_requests_at_the_limits_and_mlperf_presets_are_accepted(data: dict[str, Any]) -> None:
    parse_request(data)


# ------------------------------------------------------------------ run ids

#          text                 why
BAD_RUN_IDS = [
    ("%",                   "LIKE's any-string wildcard"),
    ("%6fad",               "a wildcard then a suffix"),
    ("_",                   "LIKE's one-character wildcard"),
    ("____-",               "wildcards shaped like a prefix"),
    ("' OR 1=1 --",         "SQL text"),
    ("6FAD",                "upper case: run ids are printed in lower case"),
    ("0" * 37,              "longer than a UUID"),
    ("",                    "empty: would match every run"),
]  # fmt: skip


@pytest.mark.parametrize("text", [c[0] for c in BAD_RUN_IDS], ids=[c[1] for c in BAD_RUN_IDS])
def test_a_run_id_is_hex_never_a_pattern(text: str) -> None:
    with pytest.raises(RunNotFound) as info:
        run_id_prefix(text)
    assert "a run id, or its prefix, is 1 to 36 of 0-9, a-f and '-'" in str(info.value)


# ------------------------------------------------------------------ through a real server
# (``server``: the module's own, tests/conftest.py)


@pytest.fixture(scope="module")
def run_id(server: Server) -> str:
    """One finished run on the server."""
    with server.client("owner") as c:
        digest = c.post("/api/v1/lockfiles", json=REQUEST).json()["points"][0]["digest"]
        submitted = c.post("/api/v1/runs", json={"lockfile": digest, "runner": "local"})
        assert submitted.status_code == 202, submitted.text
        run: str = submitted.json()["id"]
        deadline = time.monotonic() + 120
        while c.get(f"/api/v1/runs/{run}").json()["status"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, f"run {run} did not finish"
            time.sleep(0.2)
    return run


def recorded(server: Server) -> tuple[int, int, int, list[str], list[str]]:
    """What a refused request must not change: artifacts, lockfiles, runs, blobs, temp files."""
    ws: Workspace = server.workspace()
    try:
        with ws.transaction() as session:
            counts = [
                session.scalar(select(func.count()).select_from(t)) or 0
                for t in (Artifact, LockfileRow, Run)
            ]
        blobs = [d.hex for d in ws.store.iter_digests()]
        tmp = sorted(p.name for p in ws.store.tmp.glob("*")) if ws.store.tmp.exists() else []
    finally:
        ws.close()
    return counts[0], counts[1], counts[2], blobs, tmp


def test_one_post_cannot_fan_out_into_thousands_of_lockfiles(server: Server) -> None:
    before = recorded(server)
    with server.client("owner") as c:
        response = c.post("/api/v1/lockfiles", json={**REQUEST, "batch_size": list(range(1, 3001))})
    assert response.status_code == 400, response.text
    assert "batch_size lists 3000 sizes: a sweep has at most 64" in response.json()["detail"]
    assert recorded(server) == before


def test_a_request_for_a_day_long_run_is_refused_by_the_server(server: Server) -> None:
    before = recorded(server)
    scenario = {"name": "SingleStream", "mode": "accuracy", "min_duration_ms": 10**12}
    body = {**REQUEST, "scenario": scenario}
    with server.client("owner") as c:
        response = c.post("/api/v1/lockfiles", json=body)
    assert response.status_code == 400, response.text
    assert "scenario.min_duration_ms must be between 0 and 86400000" in response.json()["detail"]
    assert recorded(server) == before


@pytest.mark.parametrize("make", [lambda r: "%25" + r[-6:], lambda r: "%25", lambda r: "_" * 8],
                         ids=["%SUFFIX", "%", "________"])  # fmt: skip
def test_a_wildcard_run_id_matches_no_run(server: Server, run_id: str, make: Any) -> None:
    path = make(run_id)
    with server.client() as c:
        assert c.get(f"/api/v1/runs/{run_id[:8]}").json()["id"] == run_id  # a prefix still works
        shown = c.get(f"/api/v1/runs/{path}")
        compared = c.get(f"/api/v1/compare?run={path}&run={run_id}")
    for response in (shown, compared):
        assert response.status_code == 404, response.text
        assert (
            "a run id, or its prefix, is 1 to 36 of 0-9, a-f and '-'" in response.json()["detail"]
        )


def test_show_run_takes_a_prefix_but_no_wildcard(server: Server, run_id: str) -> None:
    ws = server.workspace()
    try:
        assert show_run(ws, run_id[:4])["id"] == run_id
        assert show_run(ws, run_id)["id"] == run_id
        with pytest.raises(RunNotFound):
            show_run(ws, "%" + run_id[-4:])
    finally:
        ws.close()


def _upload(server: Server, doc: dict[str, Any], files: dict[str, bytes]) -> Any:
    parts: list[tuple[str, str | None, bytes]] = [("manifest", None, yaml.safe_dump(doc).encode())]
    parts += [("file", path, data) for path, data in files.items()]
    with server.client("owner") as c:
        return c.post("/api/v1/artifacts", content=multipart(parts), headers=UPLOAD)


def test_an_upload_must_carry_the_bytes_of_a_blob_the_server_holds(server: Server) -> None:
    """Naming a digest is no proof of holding its bytes: else the answer tells whether the
    server holds a blob, and anyone could republish bytes they never had."""
    with server.client() as c:
        held = c.get(f"/api/v1/artifacts/{MODEL}").json()["files"][0]
        blob = c.get(f"/api/v1/blobs/{held['sha256']}").content
    before = recorded(server)
    answers = []
    for digest in (held["sha256"], "0" * 64):  # held, and not held: the same answer
        doc = manifest_doc("vision/oracle", "1.0.0", {})
        doc["files"] = [{"path": "w.bin", "sha256": digest, "size": held["size"]}]
        response = _upload(server, doc, {})
        assert response.status_code == 400, response.text
        answers.append(response.json()["detail"])
    assert answers[0] == answers[1]
    assert "file 'w.bin': declared in the manifest but not uploaded" in answers[0]
    assert recorded(server) == before

    doc = manifest_doc("vision/oracle", "1.0.0", {"w.bin": blob})  # with its bytes: published
    published = _upload(server, doc, {"w.bin": blob})
    assert published.status_code == 201, published.text
    assert published.json()["new_blobs"] == 0, "the store keeps one copy"


@pytest.mark.parametrize(
    ("name", "version", "needle"),
    [
        ("vision/" + "a" * 194, "1.0.0", "201 characters: at most 200"),
        ("vision/long", "1" * 26 + ".0.0", "is larger than 2^53 - 1"),
        ("vision/long", "1.0.0-" + "a" * 300, "a version is at most 200"),
    ],
    ids=["name", "26-digit major", "300-character prerelease"],
)
def test_oversized_names_and_versions_are_refused_by_the_server(
    server: Server, name: str, version: str, needle: str
) -> None:
    before = recorded(server)
    response = _upload(server, manifest_doc(name, version, {"w.bin": b"w"}), {"w.bin": b"w"})
    assert response.status_code == 400, response.text
    assert needle in response.json()["detail"]
    assert recorded(server) == before
