"""The gate's one-sided p-values in plain Python: Student's and Welch's t and Mann-Whitney U,
the numbers ``scipy.stats.ttest_ind`` and ``scipy.stats.mannwhitneyu`` (``method="auto"``, with
continuity correction) give on the same data (``tests/test_pvalues.py`` holds them equal on
random cases). A gate computes one or two of them; importing scipy for them was most of the
gate's cost (0.8 s of its 1.4 s of CPU on a home with history), and NumPy the rest.

Student's t survival function is ``I_x(df / 2, 1 / 2) / 2`` with ``x = df / (df + t²)``: the
regularized incomplete beta function by its continued fraction (Lentz's method, as Numerical
Recipes' ``betacf``), on the side of ``x`` where it converges fast. Mann-Whitney's exact
distribution (no ties, one side of at most ``EXACT_MOST`` values, as scipy's ``auto`` chooses)
is counted exactly: the number of orderings with each U is the coefficient of the Gaussian
binomial ``[n1 + n2 choose n1]_q``; otherwise the normal approximation with the ties' correction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

EXACT_MOST = 8
"""Mann-Whitney is exact when a side has at most this many values and no value repeats
(scipy's ``_mwu_choose_method``)."""

_EPS = 1e-16
_TINY = 1e-300
_MOST_TERMS = 100_000


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MOST_TERMS):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        for aa in (even, odd):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            step = c * d
            h *= step
        if abs(step - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"the incomplete beta's fraction did not converge (a={a}, b={b})")


def betainc(a: float, b: float, x: float, y: float) -> float:
    """``I_x(a, b)``, the regularized incomplete beta function, given ``x`` and ``y = 1 - x``
    (each computed by the caller without cancellation)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (any real ``df`` > 0)."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    t2 = t * t
    half = 0.5 * betainc(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2))
    return half if t > 0 else 1.0 - half


def normal_sf(z: float) -> float:
    """P(Z > z) for the standard normal."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _mean_ss(x: Sequence[float]) -> tuple[float, float]:
    """The mean and the sum of squared deviations from it."""
    mean = math.fsum(x) / len(x)
    return mean, math.fsum((v - mean) ** 2 for v in x)


def t_test(a: Sequence[float], b: Sequence[float], *, welch: bool, greater: bool) -> float:
    """The one-sided p-value that ``a``'s mean is greater (``greater``) or less than ``b``'s:
    Welch's t (``welch``), else Student's (variances pooled), as ``ttest_ind`` computes it."""
    n1, n2 = len(a), len(b)
    m1, ss1 = _mean_ss(a)
    m2, ss2 = _mean_ss(b)
    if welch:
        if n1 < 2 or n2 < 2:
            return math.nan  # a side's variance is undefined
        vn1, vn2 = ss1 / (n1 - 1) / n1, ss2 / (n2 - 1) / n2
        spread = vn1**2 / (n1 - 1) + vn2**2 / (n2 - 1)
        df = (vn1 + vn2) ** 2 / spread if spread else 1.0  # scipy's df where both are 0
        denom = math.sqrt(vn1 + vn2)
    else:
        df = float(n1 + n2 - 2)
        denom = math.sqrt((ss1 + ss2) / df * (1.0 / n1 + 1.0 / n2)) if df else 0.0
    diff = m1 - m2
    # no spread on either side: a difference is infinitely many standard errors
    infinite = math.copysign(math.inf, diff) if diff else math.nan
    t = diff / denom if denom else infinite
    return t_sf(t, df) if greater else t_sf(-t, df)


def _rank_sum(a: Sequence[float], b: Sequence[float]) -> tuple[float, int]:
    """The sum of ``a``'s ranks among all the values (ties given their mean rank), and the
    ties' term ``sum(t³ - t)`` over the groups of equal values."""
    xs, ys = sorted(a), sorted(b)
    i = j = placed = 0
    twice_r1, ties = 0, 0  # twice the rank sum: every mean rank is a half-integer or an integer
    while i < len(xs) or j < len(ys):
        v = xs[i] if j == len(ys) or (i < len(xs) and xs[i] <= ys[j]) else ys[j]
        ca = cb = 0
        while i < len(xs) and xs[i] == v:
            i, ca = i + 1, ca + 1
        while j < len(ys) and ys[j] == v:
            j, cb = j + 1, cb + 1
        c = ca + cb
        twice_r1 += ca * (2 * placed + c + 1)  # ranks placed+1 .. placed+c, mean (2p+c+1)/2
        ties += c**3 - c
        placed += c
    return twice_r1 / 2, ties


def _orderings(m: int, n: int, most: int) -> list[int]:
    """How many of the C(m + n, m) orderings of two samples give each U = 0 .. ``most``: the
    low coefficients of the Gaussian binomial [m + n choose m]_q, built from [n + i choose i]_q
    for i = 1 .. m, each a polynomial (times 1 - q^(n+i), then divided by 1 - q^i: a running
    sum with stride i), all cut at degree ``most``."""
    from itertools import accumulate

    c = [1] + [0] * most
    for i in range(1, m + 1):
        shift = n + i
        if shift <= most:
            c[shift:] = [x - y for x, y in zip(c[shift:], c[: most + 1 - shift], strict=True)]
        for r in range(min(i, most + 1)):
            c[r::i] = accumulate(c[r::i])
    return c


def mann_whitney(a: Sequence[float], b: Sequence[float], *, greater: bool) -> float:
    """The one-sided p-value that ``a`` tends to be greater (``greater``) or less than ``b``,
    as ``mannwhitneyu(a, b, alternative=...)`` computes it (``method="auto"``)."""
    n1, n2 = len(a), len(b)
    r1, ties = _rank_sum(a, b)
    u1 = r1 - n1 * (n1 + 1) / 2
    u = u1 if greater else n1 * n2 - u1
    if (n1 <= EXACT_MOST or n2 <= EXACT_MOST) and ties == 0:
        k, total = int(u), math.comb(n1 + n2, n1)
        # P(U >= k), counted on the shorter side of U's symmetric distribution (as scipy)
        if k > n1 * n2 - k:
            at_least = sum(_orderings(min(n1, n2), max(n1, n2), n1 * n2 - k))
        else:
            at_least = total - sum(_orderings(min(n1, n2), max(n1, n2), k)[:k])
        return min(1.0, max(0.0, at_least / total))
    n = n1 + n2
    s = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    z = (u - n1 * n2 / 2 - 0.5) / s if s else math.nan
    return min(1.0, max(0.0, normal_sf(z))) if not math.isnan(z) else math.nan
