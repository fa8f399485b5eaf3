"""``worker.polyphase``: SciPy's ``resample_poly`` (window ``('kaiser', 5.0)``, zero padding)
in NumPy alone, checked against SciPy itself (in the dev environment only; the runners'
environments have no SciPy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import firwin, resample_poly

from pinbench.worker import polyphase

CASES = [
    # (rate from, rate to, input length, why)
    (8_000, 16_000, 8_000, "upsampling by 2: 21 taps per phase"),
    (44_100, 16_000, 44_100, "160/441: 160 phases of 56 taps, outputs not on input instants"),
    (48_000, 16_000, 48_000, "1/3: one phase, pure decimation"),
    (22_050, 16_000, 22_050, "320/441"),
    (11_025, 16_000, 11_025, "640/441: the largest ratio of a common rate"),
    (16_000, 16_000, 1_000, "one rate: the samples, copied"),
    (44_100, 16_000, 4_411, "an odd length: ceil(4411 * 160 / 441) = 1601"),
    (8_000, 16_000, 1, "one sample: the filter's centre tap"),
    (44_100, 16_000, 2, "two samples: every output reads past both ends"),
    (48_000, 16_000, 7, "seven samples: ceil(7 / 3) = 3"),
    (22_050, 16_000, 10, "ten samples, 320 phases, fewer outputs (8) than phases"),
    (16_000, 16_384, 9_999, "1024/1000 = 128/125"),
    (750, 768_000, 5, "1024/1: the bound on the ratio, upwards"),
    (768_000, 750, 4_099, "1/1024: the bound downwards, 20481 taps on one phase"),
    (767_232, 768_000, 3_001, "1000/999: both factors near the bound"),
]


@pytest.mark.parametrize(
    ("rate_from", "rate_to", "n"),
    [c[:3] for c in CASES],
    ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES],
)
def test_resample_poly_is_scipys(rate_from: int, rate_to: int, n: int) -> None:
    """Within 1e-6 relative of SciPy on a signal of every frequency (atol 1e-12: the two
    sum in different orders, ~1e-16 apart on values of order 1), the same length, and the
    same bytes when run again."""
    x = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
    g = math.gcd(rate_from, rate_to)
    up, down = rate_to // g, rate_from // g
    want = resample_poly(x.astype(np.float64), up, down)
    got = polyphase.resample_poly(x, up, down)
    assert got.dtype == np.float64 and got.shape == want.shape == (-(-n * up // down),)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
    again = polyphase.resample_poly(x.copy(), up, down)
    assert again.tobytes() == got.tobytes()
    if up != down:
        max_rate = max(up, down)
        h = firwin(20 * max_rate + 1, 1 / max_rate, window=("kaiser", 5.0)) * up
        np.testing.assert_allclose(polyphase.lowpass(up, down), h, rtol=1e-9, atol=1e-15)


def test_float32_out_is_scipys_rounded_and_the_factors_are_reduced() -> None:
    x = np.random.default_rng(1).uniform(-1, 1, 3_000).astype(np.float32)
    got = polyphase.resample_poly(x, 320, 882, dtype=np.float32)  # 160/441, not reduced
    want = resample_poly(x.astype(np.float64), 160, 441).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_the_version_names_the_window_and_numpy() -> None:
    assert polyphase.version() == f"pinbench resample_poly (kaiser 5.0, numpy {np.__version__})"
