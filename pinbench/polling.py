"""How a client polls for a run to finish: soon, then at growing intervals up to the longest
one. A run that ends in 0.1 s is seen about then rather than half a second later; a long one
is asked about every ``longest`` seconds, as before (issue 49: every run a test waited for
through a server took a quarter of a second more on average)."""

from __future__ import annotations

from collections.abc import Iterator

FIRST_S = 0.05


def intervals(longest: float, first: float = FIRST_S) -> Iterator[float]:
    """The waits between polls: ``first``, doubled at each poll up to ``longest``."""
    wait = min(first, longest)
    while True:
        yield wait
        wait = min(wait * 2, longest)
