"""A request's ``system`` places a run: the constraints (``name``, ``gpu``, ``cpu_flags`` and
the platform) go into the lockfile, are left out of it while unset (old lockfiles keep their
digest), are matched against systems' facts (every system listed with what it lacks when none
matches), and a run on this machine honours them or is refused before anything is recorded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select

from pinbench.cluster.facts import checked_facts, system_facts
from pinbench.cluster.placement import (
    Candidate,
    NoMatchingSystem,
    PlacedElsewhere,
    check_here,
    choose,
    unmet,
)
from pinbench.db.models import Run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import RequestError, SystemRequest, parse_request
from pinbench.workspace import Workspace

REQUEST = {
    "model": "vision/digits-logreg@^1",
    "framework": "onnxruntime@*",
    "dataset": "sklearn-digits-test@^1",
}

X86 = {"arch": "x86_64", "cpu_flags": ["avx2", "sse4_2"], "gpus": []}
H100 = {"arch": "x86_64", "cpu_flags": ["avx512f"], "gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}
ARM = {"arch": "aarch64", "cpu_flags": ["asimd"], "gpus": []}


def _lock(ws: Workspace, system: dict[str, Any] | None = None) -> Lockfile:
    data = dict(REQUEST, **({"system": system} if system is not None else {}))
    return service.lock_points(ws, parse_request(data))[0][0]


def test_unset_placement_leaves_the_lockfile_as_it_was(digits: Workspace) -> None:
    plain = _lock(digits)
    same = _lock(digits, {"arch": "amd64", "device": "cpu"})
    assert plain.digest == same.digest
    body = json.loads(plain.canonical)
    assert body["system"] == {"arch": "amd64", "device": "cpu"}
    assert body["request"]["system"] == {"arch": "amd64", "device": "cpu"}


def test_placement_is_part_of_the_lockfile(digits: Workspace) -> None:
    placed = _lock(digits, {"gpu": "H100", "cpu_flags": ["avx512f"]})
    body = json.loads(placed.canonical)
    assert body["system"] == {
        "arch": "amd64",
        "device": "cpu",
        "gpu": "H100",
        "cpu_flags": ["avx512f"],
    }
    assert placed.digest != _lock(digits).digest
    again = Lockfile.from_bytes(placed.canonical)
    assert again.digest == placed.digest and again.body.system.gpu == "H100"
    named = _lock(digits, {"name": "lab-a"})
    assert json.loads(named.canonical)["system"]["name"] == "lab-a"


@pytest.mark.parametrize(
    ("system", "message"),
    [
        ({"name": "Lab A"}, "system.name 'Lab A'"),
        ({"gpu": " "}, "system.gpu must be a GPU model's name"),
        ({"cpu_flags": []}, "system.cpu_flags lists 1 to 64 flags"),
        ({"cpu_flags": ["AVX-512"]}, "system.cpu_flags 'AVX-512'"),
        ({"cpu_flags": ["f"] * 65}, "system.cpu_flags lists 1 to 64 flags"),
        ({"rack": 3}, "rack"),
    ],
)
def test_bad_placement_is_refused_naming_the_field(system: dict[str, Any], message: str) -> None:
    with pytest.raises(RequestError, match=message.replace(".", r"\.")):
        parse_request(dict(REQUEST, system=system))


@pytest.mark.parametrize(
    ("system", "facts", "lacks"),
    [
        ({}, X86, []),
        ({"arch": "arm64"}, X86, ["arch is x86_64, not arm64"]),
        ({"arch": "arm64"}, ARM, []),
        ({"device": "cuda"}, X86, ["no CUDA GPU"]),
        ({"device": "cuda", "gpu": "h100"}, H100, []),
        ({"gpu": "A100"}, H100, ["no A100 GPU (has: NVIDIA H100 80GB HBM3)"]),
        ({"gpu": "H100"}, X86, ["no H100 GPU (has: none)"]),
        ({"cpu_flags": ["avx2"]}, X86, []),
        (
            {"cpu_flags": ["avx512f", "avx2", "amx_tile"]},
            X86,
            ["lacks CPU flag(s) avx512f, amx_tile"],
        ),
        ({"device": "rocm"}, X86, ["no ROCm runtime (libamdhip64)"]),
        (
            {"gpu": "a10"},
            {**X86, "gpus": [{"name": "NVIDIA A100-SXM4"}]},
            ["no a10 GPU (has: NVIDIA A100-SXM4)"],
        ),  # whole words: A10 is not an A100
        ({"gpu": "A100"}, {**X86, "gpus": [{"name": "NVIDIA A100-SXM4"}]}, []),
        ({"gpu": "H100"}, {"arch": "x86_64", "gpus": ["H100"], "cpu_flags": "avx2"}, []),
        (
            {"cpu_flags": ["avx2"]},
            {"arch": "x86_64", "cpu_flags": "avx2"},
            ["lacks CPU flag(s) avx2"],
        ),  # facts of the wrong shape match nothing, crash nothing
    ],
)
def test_what_a_system_lacks(
    system: dict[str, Any], facts: dict[str, Any], lacks: list[str]
) -> None:
    assert unmet(SystemRequest(**system), facts, "lab-a") == lacks


@pytest.mark.parametrize(
    "facts",
    [
        None,
        [],
        {"gpus": "H100"},
        {"gpus": ["H100"]},
        {"cpu_flags": [1]},
        {"x": float("nan")},
        {"x": "y" * 70_000},
    ],
)
def test_facts_of_the_wrong_shape_are_not_believed(facts: object) -> None:
    assert checked_facts(facts) is None


def test_facts_as_agents_report_them_are_believed() -> None:
    facts = system_facts()
    assert checked_facts(facts) == facts


CLUSTER = [
    Candidate("lab-a", X86, alive=True),
    Candidate("lab-b", H100, alive=True),
    Candidate("lab-c", H100, alive=False),
    Candidate("lab-d", ARM, alive=True),
]


def test_all_picks_every_live_system_that_meets_the_constraints() -> None:
    assert choose(SystemRequest(), CLUSTER, None) == ["lab-a", "lab-b"]
    assert choose(SystemRequest(gpu="H100"), CLUSTER, None) == ["lab-b"]
    assert choose(SystemRequest(arch="arm64"), CLUSTER, None) == ["lab-d"]
    assert choose(SystemRequest(name="lab-a"), CLUSTER, None) == ["lab-a"]


def test_nothing_matching_is_refused_listing_every_system_and_why() -> None:
    with pytest.raises(NoMatchingSystem) as caught:
        choose(SystemRequest(gpu="A100"), CLUSTER, None)
    assert str(caught.value) == (
        "no system meets arch=amd64 device=cpu gpu=A100: "
        "lab-a: no A100 GPU (has: none); "
        "lab-b: no A100 GPU (has: NVIDIA H100 80GB HBM3); "
        "lab-c: gone, no A100 GPU (has: NVIDIA H100 80GB HBM3); "
        "lab-d: arch is aarch64, not amd64, no A100 GPU (has: none)"
    )
    with pytest.raises(NoMatchingSystem, match="the cluster has no systems"):
        choose(SystemRequest(), [], None)


def test_named_systems_must_each_exist_be_alive_and_match() -> None:
    assert choose(SystemRequest(), CLUSTER, ["lab-b", "lab-a", "lab-b"]) == ["lab-b", "lab-a"]
    with pytest.raises(NoMatchingSystem, match="lab-c: gone; lab-z: no such system"):
        choose(SystemRequest(), CLUSTER, ["lab-a", "lab-c", "lab-z"])
    with pytest.raises(NoMatchingSystem, match="lab-a: no H100 GPU"):
        choose(SystemRequest(gpu="H100"), CLUSTER, ["lab-a"])


def test_this_machine_runs_what_it_meets_and_refuses_the_rest() -> None:
    mine = system_facts()["cpu_flags"]
    check_here(SystemRequest())
    check_here(SystemRequest(cpu_flags=mine[:2]))
    with pytest.raises(PlacedElsewhere, match="lacks CPU flag\\(s\\) no_such_flag"):
        check_here(SystemRequest(cpu_flags=["no_such_flag"]))
    with pytest.raises(
        PlacedElsewhere, match="it is placed on system lab-a: run it on the cluster"
    ):
        check_here(SystemRequest(name="lab-a"))


def test_a_run_placed_elsewhere_records_nothing(digits: Workspace) -> None:
    lock = _lock(digits, {"cpu_flags": ["no_such_flag"]})
    with pytest.raises(PlacedElsewhere):
        run_lockfile(digits, lock, say=lambda text: None)
    with digits.transaction() as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 0


def test_sweep_ids_made_before_placement_are_unchanged() -> None:
    """The id a batch-size sweep's points share, as every pinbench before placement made it."""
    from pinbench.registry.locking import canonical_digest

    sweep = {"model": "m@1", "dataset": "d@1", "batch_size": [1, 2]}
    assert canonical_digest(parse_request(sweep)) == (
        "b21b68f7e46160f4f857b409031c0301db079da7a7aea5a4c75aaba8b3c82f4e"
    )
    placed = canonical_digest(parse_request({**sweep, "system": {"gpu": "H100"}}))
    assert placed != canonical_digest(parse_request(sweep))


def test_sweep_ids_made_before_whisper_prompts_and_fan_outs_are_unchanged() -> None:
    """``generation.language``/``task`` and a chain stage's ``join`` are late fields: unset,
    a generation sweep's id is the one every pinbench before them made (the lockfile's
    ``sweep``, shared by the sweep's points)."""
    from pinbench.registry.locking import canonical_digest

    sweep = {
        "model": "m@1",
        "dataset": "d@1",
        "batch_size": [1, 2],
        "scenario": {"name": "Offline"},
        "generation": {"max_new_tokens": 8},
    }
    assert canonical_digest(parse_request(sweep)) == (
        "d494e046d505c268b5df826b386409f5d97a3ac14badf8856e33f2d46f1dd2ba"
    )
    french = {**sweep, "generation": {"max_new_tokens": 8, "language": "fr"}}
    assert canonical_digest(parse_request(french)) != canonical_digest(parse_request(sweep))
