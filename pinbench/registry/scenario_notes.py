"""What a request's scenario asks for that LoadGen will call INVALID, said before the run
(issue 73, item 10): at ``lock`` and when ``run`` starts, never a refusal (a short test that is
INVALID is still a measurement: the demo's ResNet-50 runs ask for 16 queries on purpose).

The defaults (``Scenario``: 1 s and 100 queries) give a VALID run for a model of any speed:
LoadGen issues queries until both are met, and 100 is over the queries its early stopping needs
at the default percentile (90: 64 in SingleStream and MultiStream, its summary's "Processed at
least 64 queries"; 44 in Server); measured VALID in all four scenarios, local, venv and
host-timed, for a 10 µs model. A request that asks for less is told which setting makes its
run INVALID, and what to raise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinbench.registry.request import Scenario

CONFIDENCE = 0.99
"""LoadGen's early stopping confidence (``PerformanceSummary::EarlyStopping``)."""


def early_stopping_queries(name: str, percentile: float) -> int:
    """The fewest queries LoadGen's early stopping accepts at ``percentile``: the smallest n
    whose chance of at most ``t`` latencies over the percentile is within 1 - CONFIDENCE
    (its ``MinPassingQueriesFinder``, tolerance 0): ``t`` = 1 in SingleStream and MultiStream
    (64 at 90, 662 at 99, 11 at 50), 0 in Server, with no query over its latency bound (44 at
    90, 459 at 99)."""
    keep = percentile / 100  # a query within the percentile's latency
    most = 0 if name == "Server" else 1

    def chance(n: int) -> float:  # of at most ``most`` of n queries over it
        return float(keep**n + (n * (1 - keep) * keep ** (n - 1) if most else 0.0))

    low, high = most + 1, most + 2
    while chance(high) > 1 - CONFIDENCE:  # it falls as n grows: double, then halve
        low, high = high, high * 2
    while low < high:
        mid = (low + high) // 2
        low, high = (mid + 1, high) if chance(mid) > 1 - CONFIDENCE else (low, mid)
    return low


def invalid_ahead(scenario: Scenario) -> list[str]:
    """Each reason ``scenario``'s settings give LoadGen to call its run INVALID, or may give
    it, with the setting to change; none for an accuracy run (it has no verdict)."""
    if scenario.mode != "performance":
        return []
    notes = []
    least, most = scenario.min_query_count, scenario.max_query_count
    if most is not None and most < least:
        notes.append(
            f"scenario.max_query_count {most} is below min_query_count {least}: LoadGen stops "
            "first and calls the run INVALID (min queries not met); raise max_query_count"
        )
    if scenario.name == "Offline":
        return notes
    floor = early_stopping_queries(scenario.name, scenario.percentile)
    if most is not None and most < floor:
        notes.append(
            f"scenario.max_query_count {most} stops the run before the {floor} queries "
            f"LoadGen's early stopping needs at percentile {scenario.percentile:g}: it will be "
            f"INVALID; raise max_query_count to {floor} or more"
        )
    elif least < floor:
        notes.append(
            f"scenario.min_query_count {least} is below the {floor} queries LoadGen's early "
            f"stopping needs at percentile {scenario.percentile:g}: unless min_duration_ms "
            f"({scenario.min_duration_ms}) brings {floor}, the run is INVALID; raise "
            f"min_query_count to {floor} or more"
        )
    return notes
