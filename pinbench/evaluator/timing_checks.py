"""What an evaluator says it timed, against the host's clock (issue 63; issue 71, item 2): no
call took no time or longer than the evaluator lived, and LoadGen's returned log claims no more
time than that either. A log that says less than the truth passes: only the host's own LoadGen
(``runners.host_clock``) times a run whose model carries code."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.worker.results import LATENCIES, InvalidResults


def check_timings(
    scenario: str, latencies: npt.NDArray[Any] | None, wall_ns: int, log: Any = None
) -> None:
    """The host's clock against what an evaluator says it timed (issue 63): no call took no
    time, none took longer than the evaluator's whole life (``wall_ns``, the host's measure of
    it), and where calls follow one another (SingleStream, MultiStream) they add up to no more
    than it either; the same of LoadGen's ``log`` (``details.loadgen``, ``check_log``)."""
    if isinstance(log, dict):
        check_log(scenario, log, wall_ns)
    if latencies is None or latencies.size == 0:
        return
    if int(latencies.min()) <= 0:
        raise InvalidResults(reason=f"{LATENCIES} holds a call that took no time")
    if int(latencies.max()) > wall_ns:
        raise InvalidResults(
            reason=f"{LATENCIES} holds a call of {int(latencies.max())} ns, longer than the "
            f"evaluator ran ({wall_ns} ns by the host's clock)"
        )
    total = int(latencies.sum(dtype=np.int64))
    if scenario in ("SingleStream", "MultiStream") and total > wall_ns:
        raise InvalidResults(
            reason=f"{LATENCIES} add up to {total} ns of calls made one after another, more "
            f"than the evaluator ran ({wall_ns} ns by the host's clock)"
        )


def check_log(scenario: str, log: dict[str, Any], wall_ns: int) -> None:
    """LoadGen's log, as an evaluator returned it, against the host's clock (issue 71, item 2):
    no latency it logs is longer than the evaluator lived, and in SingleStream and MultiStream,
    whose queries follow one another, its queries' latencies and its test's duration (its
    query count over its rate) add up to no more than that either. A log that says less than
    the truth passes: only the host's own LoadGen (``runners.host_clock``) times a run whose
    model carries code."""

    def number(key: str) -> float | None:
        value = log.get(key)
        return (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )

    for key in sorted(log):
        value = number(key)
        if key.endswith("latency_ns") and value is not None and value > wall_ns:
            raise InvalidResults(
                reason=f"LoadGen's log says {key} {value:.0f}, longer than the evaluator ran "
                f"({wall_ns} ns by the host's clock)"
            )
    if scenario not in ("SingleStream", "MultiStream"):
        return
    count = number("result_query_count")
    mean = number("result_mean_latency_ns")
    if mean is None:
        mean = number("result_mean_query_latency_ns")
    rate = number("result_qps_with_loadgen_overhead")
    if count is not None and mean is not None and count * mean > wall_ns:
        raise InvalidResults(
            reason=f"LoadGen's log says {count:.0f} queries one after another of {mean:.0f} ns "
            f"on average, more than the evaluator ran ({wall_ns} ns by the host's clock)"
        )
    if count is not None and rate and count / rate * 1e9 > wall_ns:
        raise InvalidResults(
            reason=f"LoadGen's log says {count:.0f} queries at {rate:g} a second, longer than "
            f"the evaluator ran ({wall_ns} ns by the host's clock)"
        )
