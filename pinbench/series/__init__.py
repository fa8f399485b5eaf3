"""Series of runs that measure the same thing, and the statistics the gate judges them with.

``stats`` compares a candidate run with a window of the series' past runs under a threshold (a
relative bound, Student's/Welch's t, Mann-Whitney, exact equality or an absolute tolerance) and
says passed, regressed or inconclusive, with the test, its p-value and the reason in one
sentence. ``changepoints`` finds where a metric shifted along a series (``ruptures``' kernel
change-point search, ``KernelCPD``, one split at a time, each permutation-tested: E-Divisive's
bisection, not its statistic). Both are pure functions of plain numbers: where the numbers come
from (SQL, a lockfile's reruns) is the caller's business."""
