"""A client waiting for a run polls soon, then less often, up to its longest interval
(``pinbench.polling``): a short run is seen about when it ends, a long one is not asked about
more often than before."""

from __future__ import annotations

from itertools import islice

import pytest

from pinbench.polling import intervals


def test_waits_double_from_the_first_up_to_the_longest() -> None:
    assert list(islice(intervals(0.5), 7)) == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5, 0.5]


@pytest.mark.parametrize("longest", [0.01, 0.05])
def test_a_longest_below_the_first_wait_is_every_wait(longest: float) -> None:
    assert list(islice(intervals(longest), 3)) == [longest] * 3


def test_a_long_wait_polls_no_more_often_than_every_longest_interval_after_its_start() -> None:
    """Two seconds in, a 60-second wait has been polled at 0.05, 0.15, 0.35, 0.75, 1.25,
    1.75 s: six polls, then one every half second as before."""
    elapsed, polls = 0.0, 0
    for wait in intervals(0.5):
        elapsed += wait
        if elapsed > 60:
            break
        polls += 1
    assert polls == 6 + int((60 - 1.75) / 0.5)
