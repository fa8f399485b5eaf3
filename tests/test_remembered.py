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


def _token(token_id: str, secret: str = "s") -> str:
    """A token as ``accounts`` issues them: ``pbt_<16 hex>_<43 characters>``."""
    return f"pbt_{token_id * 16}_{secret * 43}"


X, Y = _token("1"), _token("2")


def test_a_token_is_remembered_for_its_time_by_its_digest_and_forgotten_when_refused() -> None:
    clock = Clock()
    tokens = ScrapeTokens(memory_s=60, max_tokens=2, clock=clock)
    assert tokens.recall(X) is None  # never accepted: never let in
    tokens.remember(X, READER)
    known = tokens.recall(X)
    assert known is not None and known.principal == READER
    assert X.rsplit("_", 1)[1] not in repr(tokens._known)  # its secret's sha256, never it
    assert tokens.recall(Y) is None  # another token is not this one
    assert tokens.recall(_token("1", "t")) is None  # nor another secret under its id
    clock.now += 60
    assert tokens.recall(X) is not None  # within its time (inclusive)
    clock.now += 1
    assert tokens.recall(X) is None  # past it: the database must accept it again
    tokens.remember(X, READER)  # accepted again: its time starts again
    assert tokens.recall(X) is not None
    tokens.forget(X)  # the database refused it (revoked, unknown)
    assert tokens.recall(X) is None
    tokens.remember("pbt_x", READER)  # malformed: the database never accepts one
    assert tokens.recall("pbt_x") is None and not tokens._known


def test_one_token_written_with_more_or_less_whitespace_is_one_token() -> None:
    """``authenticate`` strips the token: its variants take one slot (they cannot push the
    scraper's token out), and one refused is every one refused (a revoked token does not
    come back in through another variant while the database is away)."""
    tokens = ScrapeTokens(max_tokens=2, clock=Clock())
    tokens.remember(Y, READER)  # the scraper's
    for variant in (X, f" {X}", f"{X} ", f"\t{X}\n", f"  {X}  "):
        tokens.remember(variant, READER)
    assert len(tokens._known) == 2 and tokens.recall(Y) is not None
    assert all(tokens.recall(v) is not None for v in (X, f" {X} "))
    tokens.forget(f"  {X}")  # refused once, under one variant
    assert all(tokens.recall(v) is None for v in (X, f" {X}", f"{X} ", f"\t{X}\n"))
    tokens.remember(X, READER)
    tokens.forget(_token("1", "t"))  # its id refused with another secret: the id goes
    assert tokens.recall(X) is None and tokens.recall(Y) is not None


def test_the_memory_holds_its_most_recently_accepted_tokens_only() -> None:
    tokens = ScrapeTokens(max_tokens=2, clock=Clock())
    a, b, c = _token("a"), _token("b"), _token("c")
    for token in (a, b, a, c):  # a accepted again before c came
        tokens.remember(token, READER)
    assert [t for t in (a, b, c) if tokens.recall(t)] == [a, c]


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
