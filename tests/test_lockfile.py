"""Lockfiles: canonical bytes, digest as id, round trip, refusal of edited or malformed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.registry.lockfile import (
    SCHEMA_VERSION,
    LockBody,
    LockedArtifact,
    LockedDataset,
    LockedFile,
    LockedModel,
    Lockfile,
    LockfileError,
)
from pinbench.registry.request import Request, Scenario, SystemRequest

hexes = st.text("0123456789abcdef", min_size=64, max_size=64)
names = st.from_regex(r"[a-z][a-z0-9-]{0,8}(/[a-z][a-z0-9-]{0,8})?", fullmatch=True)
versions = st.builds(
    lambda a, b, c, pre: f"{a}.{b}.{c}" + (f"-{pre}" if pre else ""),
    st.integers(0, 30),
    st.integers(0, 30),
    st.integers(0, 30),
    st.sampled_from(["", "rc.1", "beta.2"]),
)
files = st.lists(
    st.builds(
        LockedFile,
        path=st.from_regex(r"[a-zé0-9_]{1,10}(\.[a-z]{1,4})?", fullmatch=True),
        sha256=hexes,
        size=st.integers(0, 2**40),
        source=st.none() | st.just("file:x"),
    ),
    max_size=4,
)
scenarios = st.builds(
    Scenario,
    name=st.sampled_from(["SingleStream", "MultiStream", "Offline"]),
    min_duration_ms=st.integers(0, 10**6),
    min_query_count=st.integers(1, 10**6),
    percentile=st.floats(0.01, 99.99),
    seed=st.integers(0, 2**32),
)


@st.composite
def bodies(draw: st.DrawFn) -> LockBody:
    model, dataset = draw(names), draw(names)
    mv, dv = draw(versions), draw(versions)
    scenario = draw(scenarios)
    request = Request(model=f"{model}@^1", dataset=f"{dataset}@*", scenario=scenario)
    return LockBody(
        schema_version=SCHEMA_VERSION,
        request=request,
        artifacts=[
            LockedArtifact(
                kind="model", name=model, version=mv, manifest_digest=draw(hexes), files=draw(files)
            ),
            LockedArtifact(
                kind="dataset",
                name=dataset,
                version=dv,
                manifest_digest=draw(hexes),
                files=draw(files),
            ),
        ],
        environment=None,
        model=LockedModel(
            name=model,
            version=mv,
            format="onnx",
            architecture=None,
            trusted=False,
            inputs=[],
            outputs=[],
        ),
        dataset=LockedDataset(
            name=dataset,
            version=dv,
            manifest_digest=draw(hexes),
            labels=LabelFormat(format="class-index-npy"),
            task="classification",
            samples=draw(st.none() | st.integers(0, 10**6)),
        ),
        scenario=scenario,
        batch_size=draw(st.integers(1, 1024)),
        threads=draw(st.none() | st.integers(1, 64)),
        sweep=draw(st.none() | hexes),
        system=SystemRequest(),
    )


@settings(max_examples=60, deadline=None)
@given(bodies())
def test_round_trip_gives_the_same_bytes(body: LockBody) -> None:
    lock = Lockfile(body)
    again = Lockfile.from_bytes(lock.canonical)
    assert again.canonical == lock.canonical
    assert again.digest == lock.digest
    assert again.body == body


@settings(max_examples=20, deadline=None)
@given(bodies())
def test_canonical_form(body: LockBody) -> None:
    lock = Lockfile(body)
    parsed = json.loads(lock.canonical)
    expected = json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert lock.canonical == expected.encode("utf-8")


def _sample() -> Lockfile:
    request = Request(model="vision/lenet@^1", dataset="digits@1")
    return Lockfile(
        LockBody(
            schema_version=SCHEMA_VERSION,
            request=request,
            artifacts=[
                LockedArtifact(
                    kind="model",
                    name="vision/lenet",
                    version="1.0.0",
                    manifest_digest="a" * 64,
                    files=[LockedFile(path="m.onnx", sha256="b" * 64, size=3, source=None)],
                ),
            ],
            environment=None,
            model=LockedModel(
                name="vision/lenet",
                version="1.0.0",
                format="onnx",
                architecture=None,
                trusted=False,
                inputs=[],
                outputs=[],
            ),
            dataset=LockedDataset(
                name="digits",
                version="1.0.0",
                manifest_digest="c" * 64,
                labels=LabelFormat(format="class-index-npy"),
                task="classification",
                samples=10,
            ),
            scenario=request.scenario,
            batch_size=1,
            threads=None,
            sweep=None,
            system=SystemRequest(),
        )
    )


def test_trailing_newline_is_ignored_and_file_round_trips(tmp_path: Path) -> None:
    lock = _sample()
    path = tmp_path / "x.lock"
    lock.write(path)
    assert path.read_bytes() == lock.canonical + b"\n"
    assert Lockfile.read(path).digest == lock.digest


@pytest.mark.parametrize(
    ("case", "mutate", "needle"),
    [
        ("pretty-printed", lambda b: json.dumps(json.loads(b), indent=2).encode(), "canonical"),
        ("not JSON", lambda b: b"{nope", "not JSON"),
        ("not an object", lambda b: b"[]", "JSON object"),
        (
            "unknown schema",
            lambda b: b.replace(b'"schema_version":%d' % SCHEMA_VERSION, b'"schema_version":9'),
            "schema_version 9",
        ),
        ("unknown field", lambda b: b"{" + b'"aaa":1,' + b[1:], "unknown field `aaa`"),
    ],
)
def test_bad_lockfiles_are_refused(case: str, mutate: object, needle: str) -> None:
    lock = _sample()
    assert callable(mutate)
    with pytest.raises(LockfileError) as info:
        Lockfile.from_bytes(mutate(lock.canonical), source="x.lock")
    assert needle in str(info.value), case
