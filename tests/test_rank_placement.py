"""A training's ranks spread over systems (decision 317): the placement a server sends each
system is plain data, bounded where it is parsed and checked against the lockfile's
``distributed`` section. The systems a submission names for such a run:
tests/test_distributed_runs.py; the runs themselves: tests/test_distributed_cluster.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pinbench.specs.distributed import DistributedSpec, RanksOnSystems, check_workers_here
from pinbench.training.distributed.figures import (
    RankFiguresRefused,
    check_epoch,
    check_totals,
    shares,
)
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
        ({"address": "lab-a.example"}, "address must be an IPv4 address"),  # never resolved
        ({"address": "10.88.0.10; rm"}, "address must be an IPv4 address"),
        ({"address": "fe80::1%eth0"}, "address must be an IPv4 address"),
        ({"address": "0.0.0.0"}, "address must be one machine's"),
        ({"address": "224.0.0.1"}, "address must be one machine's"),
        ({"address": "255.255.255.255"}, "address must be one machine's"),
        ({"systems": ["lab-a", "Lab B\n"]}, "is not a system's name"),
        ({"systems": ["lab-a", "lab-a"]}, "a system named twice"),
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


def test_each_ranks_samples_are_what_the_training_loop_cuts() -> None:
    """``shares`` against the loop itself, run on sizes it did not choose."""
    import numpy as np

    rng = np.random.default_rng(317)
    for _ in range(200):
        n, workers, batch = (int(v) for v in rng.integers((1, 1, 1), (5000, 9, 70)))
        counted = [0] * workers
        for begin in range(0, n, workers * batch):
            part = np.arange(n)[begin : begin + workers * batch]
            if len(part) < workers:
                break
            for r, piece in enumerate(np.array_split(part, workers)):
                counted[r] += len(piece)
        assert shares(n, workers, batch) == counted, (n, workers, batch)


EPOCH_ROWS = [[96.0, 3.0, 12.5, 0.2, 0.01], [96.0, 3.0, 11.0, 0.2, 0.0]]
TOTALS_ROWS = [[30.0, 730800.0, 24360.0, 0.05], [30.0, 730800.0, 24360.0, 0.06]]


@pytest.mark.parametrize(
    ("column", "value", "named"),
    [
        (0, 95.0, "rank 1's samples (95.0) refused: its shard holds 96"),
        (0, 96.5, "rank 1's samples (96.5) refused: not a count"),
        (1, 4.0, "rank 1's steps (4.0) refused: rank 0 took 3"),
        (2, float("nan"), "rank 1's loss_sum (nan) refused: not a finite, non-negative number"),
        (3, -1.0, "rank 1's train_s (-1.0) refused: not a finite"),
        (4, float("inf"), "rank 1's eval_s (inf) refused: not a finite"),
    ],
)
def test_an_epoch_row_a_rank_could_not_have_made_fails_the_run_naming_it(
    column: int, value: float, named: str
) -> None:
    check_epoch(EPOCH_ROWS, [96, 96])
    rows = [EPOCH_ROWS[0], [*EPOCH_ROWS[1]]]
    rows[1][column] = value
    with pytest.raises(RankFiguresRefused, match=re.escape(named)):
        check_epoch(rows, [96, 96])


@pytest.mark.parametrize(
    ("column", "value", "named"),
    [
        (0, 31.0, "rank 1's steps (31.0) refused: rank 0's is 30"),
        (1, 1e300, "rank 1's sent_bytes (1e+300) refused: rank 0's is 730800"),
        (2, 24361.0, "rank 1's parameter_bytes (24361.0) refused: rank 0's is 24360"),
        (3, 0.7, "rank 1's collective_s (0.7) refused: outside its training time"),
        (3, float("nan"), "rank 1's collective_s (nan) refused: outside its training time"),
        (3, -1.0, "rank 1's collective_s (-1.0) refused: outside its training time"),
    ],
)
def test_totals_a_rank_could_not_have_made_fail_the_run_naming_it(
    column: int, value: float, named: str
) -> None:
    check_totals(TOTALS_ROWS, [0.6, 0.6])
    rows = [TOTALS_ROWS[0], [*TOTALS_ROWS[1]]]
    rows[1][column] = value
    with pytest.raises(RankFiguresRefused, match=re.escape(named)):
        check_totals(rows, [0.6, 0.6])
    untimed = [[*TOTALS_ROWS[0][:3], -1.0], [*TOTALS_ROWS[1][:3], -1.0]]
    check_totals(untimed, [0.6, 0.6])  # ddp: no rank times it
    untimed[1][3] = 0.1
    with pytest.raises(RankFiguresRefused, match="this scheme is not timed"):
        check_totals(untimed, [0.6, 0.6])
