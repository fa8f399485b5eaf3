"""Polyphase resampling in NumPy alone: ``scipy.signal.resample_poly(x, up, down)`` with its
default window ``('kaiser', 5.0)`` and zero padding, as SciPy defines it, without SciPy.

SciPy (``signal/_signaltools.py`` ``resample_poly``, ``_fir_filter_design.py`` ``firwin``,
``_upfirdn.py``) designs a low-pass FIR ``h`` of ``2 * half_len + 1`` taps, ``half_len = 10 *
max(up, down)``, cutoff ``1 / max(up, down)`` of Nyquist: the windowed sinc scaled to unit
sum, times ``up``. It zero-pads ``h`` in front so that ``upfirdn`` (upsample by ``up`` with
zeros, filter, keep every ``down``-th) puts output ``t`` at the centre of the filter, and keeps
``ceil(n * up / down)`` samples. Worked through, output ``t`` is

    y[t] = sum over i of h[t * down + half_len - i * up] * x[i]

over the input samples ``i`` whose tap index falls in ``h`` (the rest are zeros, SciPy's
``padtype='constant'``). Here that sum is computed in its polyphase form: output ``t`` uses
the taps ``h[r], h[r + up], ...`` of one phase ``r = (t * down + half_len) % up``, against
consecutive input samples ending at ``(t * down + half_len) // up``. Outputs ``s, s + up, s +
2 up, ...`` share a phase and their inputs start ``down`` apart, so each such run is a strided
window view of the padded input times one row of taps, summed row by row in float64 (a fixed
order: the result does not depend on threads or BLAS). Work is ``n_out * ceil(len(h) / up)``
multiply-adds, the same as ``upfirdn``'s; memory is a zero-padded copy of the input (float32
stays float32: it widens to float64 exactly in each product), the output, and a buffer of at
most ``max(_BUFFER, taps)`` float64 values.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

KAISER_BETA = 5.0
"""SciPy's default window for ``resample_poly``: ``('kaiser', 5.0)``."""
_BUFFER = 1 << 20
"""Products held at a time (8 MiB of float64)."""


def version() -> str:
    """What resamples, as recorded in a run's ``details.decoder``: the filter comes from
    NumPy's ``kaiser`` and ``sinc``, so NumPy's version is part of it."""
    return f"pinbench resample_poly (kaiser {KAISER_BETA}, numpy {np.__version__})"


def lowpass(up: int, down: int) -> npt.NDArray[np.float64]:
    """The filter ``resample_poly`` uses for ``up``/``down`` (coprime): SciPy's ``firwin(2 *
    half_len + 1, 1 / max_rate, window=('kaiser', 5.0))`` times ``up``. ``firwin`` with one
    cutoff ``c`` and ``pass_zero`` is ``c * sinc(c * m)`` (``m`` the tap's offset from the
    centre) times the window, scaled so the taps sum to 1 (its gain at frequency 0)."""
    max_rate = max(up, down)
    half_len = 10 * max_rate
    cutoff = 1.0 / max_rate
    m = np.arange(2 * half_len + 1, dtype=np.float64) - half_len
    h = cutoff * np.sinc(cutoff * m)
    h *= np.kaiser(2 * half_len + 1, KAISER_BETA)
    h /= np.sum(h)
    h *= up
    return h


def resample_poly(
    x: npt.NDArray[np.floating[Any]], up: int, down: int, *, dtype: npt.DTypeLike = np.float64
) -> npt.NDArray[np.floating[Any]]:
    """``x`` (1-D) upsampled by ``up`` and downsampled by ``down`` as SciPy's
    ``resample_poly(x, up, down)`` does it, summed in float64, returned as ``dtype``:
    ``ceil(len(x) * up / down)`` samples, the first at the same instant as ``x[0]``."""
    if up < 1 or down < 1:
        raise ValueError(f"up and down must be at least 1, got {up} and {down}")
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {x.shape}")
    g = math.gcd(up, down)
    up, down = up // g, down // g
    n_in = x.shape[0]
    if up == down == 1:
        return np.array(x, dtype=dtype)
    n_out = -(-n_in * up // down)
    h = lowpass(up, down)
    half_len = (h.shape[0] - 1) // 2
    taps = -(-h.shape[0] // up)
    # phases[r, k]: phase r's taps, last to first, so that they meet the window view's
    # samples oldest first: h[r + (taps - 1 - k) * up], zero past the filter's end.
    phases = np.zeros(taps * up, dtype=np.float64)
    phases[: h.shape[0]] = h
    phases = np.ascontiguousarray(phases.reshape(taps, up).T[:, ::-1])
    # Input i sits at padded[i + taps - 1]: the window of taps samples that starts at row a
    # ends at input a, the newest sample the output reads.
    last = ((n_out - 1) * down + half_len) // up
    work = np.float32 if x.dtype == np.float32 else np.float64  # float32 to float64 is exact
    padded = np.zeros(max(n_in, last + 1) + taps - 1, dtype=work)
    padded[taps - 1 : taps - 1 + n_in] = x
    windows = np.lib.stride_tricks.sliding_window_view(padded, taps)
    out = np.empty(n_out, dtype=dtype)
    rows = max(1, _BUFFER // taps)
    buffer = np.empty(min(rows, -(-n_out // up)) * taps, dtype=np.float64)
    for s in range(min(up, n_out)):
        centre = s * down + half_len
        phase, newest = phases[centre % up], centre // up
        count = -(-(n_out - s) // up)
        target = out[s::up]
        for first in range(0, count, rows):
            n = min(rows, count - first)
            start = newest + first * down
            view = windows[start : start + (n - 1) * down + 1 : down]
            product = buffer[: n * taps].reshape(n, taps)
            np.multiply(view, phase, out=product)
            target[first : first + n] = product.sum(axis=1)
    return out
