"""What a server remembers to ride out a dependency's outage or its own drain (issue 48):
the tokens ``/metrics`` let in while the database is down (decision 195), and the runs whose
waiting clients a drain waits for (decision 197). Plain data and a fake clock; the servers
are driven in tests/test_monitoring_outage.py and tests/test_drain.py."""

from __future__ import annotations

import threading
import time

from pinbench.accounts import Principal
from pinbench.api.metrics_auth import ScrapeTokens
from pinbench.api.watchers import Watchers

READER = Principal(user="monitor", scopes=frozenset({"read"}), namespaces=frozenset(), token_id="a")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_is_remembered_for_its_time_by_its_digest_and_forgotten_when_refused() -> None:
    clock = Clock()
    tokens = ScrapeTokens(memory_s=60, max_tokens=2, clock=clock)
    assert tokens.recall("pbt_x") is None  # never accepted: never let in
    tokens.remember("pbt_x", READER)
    known = tokens.recall("pbt_x")
    assert known is not None and known.principal == READER
    assert "pbt_x" not in repr(tokens._known)  # its sha256, never the token
    assert tokens.recall("pbt_y") is None  # another token is not this one
    clock.now += 60
    assert tokens.recall("pbt_x") is not None  # within its time (inclusive)
    clock.now += 1
    assert tokens.recall("pbt_x") is None  # past it: the database must accept it again
    tokens.remember("pbt_x", READER)  # accepted again: its time starts again
    assert tokens.recall("pbt_x") is not None
    tokens.forget("pbt_x")  # the database refused it (revoked, unknown)
    assert tokens.recall("pbt_x") is None


def test_the_memory_holds_its_most_recently_accepted_tokens_only() -> None:
    tokens = ScrapeTokens(max_tokens=2, clock=Clock())
    for token in ("pbt_a", "pbt_b", "pbt_a", "pbt_c"):  # a accepted again before c came
        tokens.remember(token, READER)
    assert [t for t in ("pbt_a", "pbt_b", "pbt_c") if tokens.recall(t)] == ["pbt_a", "pbt_c"]


def test_a_drain_awaits_only_the_watched_runs_held_here_until_each_is_read_finished() -> None:
    watchers = Watchers()
    watchers.saw("polled", finished=False)  # a client waits on it
    watchers.saw("done-before", finished=False)
    watchers.saw("done-before", finished=True)  # its client read the end before the drain
    watchers.saw("elsewhere", finished=False)  # watched, but not held here at the drain
    assert watchers.expect(["polled", "done-before", "nobody-reads"]) == 1
    t0 = time.monotonic()
    assert watchers.wait_told(0.2) == 1  # not read yet: the grace runs out
    assert time.monotonic() - t0 >= 0.2
    reader = threading.Timer(0.1, lambda: watchers.saw("polled", finished=True))
    reader.start()
    t0 = time.monotonic()
    assert watchers.wait_told(30) == 0  # read: the wait ends then, not after the grace
    assert time.monotonic() - t0 < 10
    reader.join()


def test_the_watched_runs_are_bounded() -> None:
    watchers = Watchers(max_watched=2)
    for run_id in ("a", "b", "a", "c"):
        watchers.saw(run_id, finished=False)
    assert watchers.expect(["a", "b", "c"]) == 2  # b, read longest ago, was dropped
