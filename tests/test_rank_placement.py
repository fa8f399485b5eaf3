"""A training's ranks spread over systems (decision 317): the placement a server sends each
system is plain data, bounded where it is parsed and checked against the lockfile's
``distributed`` section. The systems a submission names for such a run:
tests/test_distributed_runs.py; the runs themselves: tests/test_distributed_cluster.py."""

from __future__ import annotations

from typing import Any

import pytest

from pinbench.specs.distributed import DistributedSpec, RanksOnSystems, check_workers_here
from pinbench.training.distributed.placement import (
    BadPlacement,
    current,
    free_port,
    interface_toward,
    parse,
    placed,
)

GOOD: dict[str, Any] = {
    "address": "10.88.0.10",
    "port": 29500,
    "first": 2,
    "count": 2,
    "systems": ["lab-a", "lab-b"],
}
SPREAD = DistributedSpec(scheme="allreduce", workers=4, systems=2)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"address": "lab-a.example"}, "address must be an IP address"),  # never resolved
        ({"address": "10.88.0.10; rm"}, "address must be an IP address"),
        ({"port": 80}, "port"),
        ({"port": 70000}, "port"),
        ({"first": -1}, "first"),
        ({"count": 0}, "count"),
        ({"systems": ["lab-a"]}, "systems"),
        ({"systems": ["s"] * 65}, "systems"),
        ({"weights": "x"}, "weights"),  # an unknown field
    ],
)
def test_a_placement_out_of_bounds_is_refused_naming_the_field(
    change: dict[str, Any], named: str
) -> None:
    with pytest.raises(BadPlacement, match=named):
        parse({**GOOD, **change})


@pytest.mark.parametrize(
    "change",
    [
        {"count": 1},  # the lockfile puts two ranks on each system
        {"first": 1, "count": 2},  # not at a system's boundary
        {"first": 4},  # past the workers
        {"systems": ["lab-a", "lab-b", "lab-c"]},  # three systems for a run over two
    ],
)
def test_a_placement_that_cuts_the_ranks_otherwise_than_the_lockfile_is_refused(
    change: dict[str, Any],
) -> None:
    with pytest.raises(BadPlacement, match="does not fit its lockfile"):
        parse({**GOOD, **change}).check(SPREAD)


def test_a_placement_that_fits_names_its_share_and_whether_it_leads() -> None:
    second = parse(GOOD)
    second.check(SPREAD)
    assert (second.first, second.count, second.leads) == (2, 2, False)
    assert parse({**GOOD, "first": 0}).leads


def test_the_placement_is_the_running_evaluations_and_ends_with_it() -> None:
    assert current() is None
    with placed(parse(GOOD)):
        assert current() == parse(GOOD)
    assert current() is None


def test_ranks_spread_over_systems_are_refused_where_every_rank_would_run() -> None:
    with pytest.raises(RanksOnSystems, match=r"distributed\.systems = 2"):
        check_workers_here(SPREAD)
    check_workers_here(DistributedSpec(scheme="ddp", workers=2, systems=2), spread=True)


def test_the_interface_toward_rank_0_is_the_one_its_packets_leave_from() -> None:
    assert interface_toward("127.0.0.1") == "lo"
    assert 1024 <= free_port("127.0.0.1") <= 65535
