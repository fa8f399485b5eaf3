"""The signal tasks' metrics, as the field's reference libraries define them (checked against
them in ``tests/test_signal_tasks.py`` on random cases):

- SI-SDR as torchmetrics' ``scale_invariant_signal_distortion_ratio`` (``zero_mean=False``) and
  SNR as its ``signal_noise_ratio``: along each signal's last axis (time), with its ``eps``
  (the answer's float precision) in the sums, one value per channel of each sample, then their
  mean (what its metric classes accumulate);
- PSNR as scikit-image's ``peak_signal_noise_ratio`` and SSIM as its ``structural_similarity``
  (a 7 x 7 uniform window, K1 0.01, K2 0.03, the sample covariance, the mean of the SSIM map
  less its 3-pixel border; averaged over channels where the images have them), each with the
  dataset's ``data_range``, one value per image, then their mean.

Undefined, the run failing with the reason (decision 115): SI-SDR and SNR where a reference is
silent (no signal to measure against), PSNR where an answer equals its reference (infinite)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.worker.undefined import UndefinedMetric

Array = npt.NDArray[Any]
WINDOW = 7
K1, K2 = 0.01, 0.03


def _eps(dtype: np.dtype[Any]) -> float:
    """torchmetrics' ``eps``: the answer's float precision."""
    return float(np.finfo(dtype).eps) if np.issubdtype(dtype, np.floating) else 1.2e-7


def _silent(target: Array, metric: str) -> None:
    energy = np.sum(target * target, axis=-1).reshape(-1)
    silent = np.flatnonzero(energy == 0)
    if silent.size:
        raise UndefinedMetric(
            metric=metric,
            reason=f"the reference of sample {int(silent[0]) // max(1, energy.size // len(target))}"
            " is silent: there is no signal to measure the answer against",
        )


def si_sdr(preds: Array, target: Array, dtype: np.dtype[Any]) -> Array:
    """Each signal's SI-SDR in dB (``(N, ..., T)`` in, ``(N, ...)`` out)."""
    _silent(target, "si_sdr_db")
    eps = _eps(dtype)
    alpha = (np.sum(preds * target, axis=-1, keepdims=True) + eps) / (
        np.sum(target * target, axis=-1, keepdims=True) + eps
    )
    scaled = alpha * target
    noise = scaled - preds
    ratio = (np.sum(scaled * scaled, axis=-1) + eps) / (np.sum(noise * noise, axis=-1) + eps)
    out: Array = 10.0 * np.log10(ratio)
    return out


def snr(preds: Array, target: Array, dtype: np.dtype[Any]) -> Array:
    """Each signal's SNR in dB (the reference's energy over the error's)."""
    _silent(target, "snr_db")
    eps = _eps(dtype)
    noise = target - preds
    ratio = (np.sum(target * target, axis=-1) + eps) / (np.sum(noise * noise, axis=-1) + eps)
    out: Array = 10.0 * np.log10(ratio)
    return out


def psnr(preds: Array, target: Array, data_range: float) -> Array:
    """Each image's PSNR in dB against ``data_range``."""
    axes = tuple(range(1, preds.ndim))
    mse = np.mean((target - preds) ** 2, axis=axes)
    same = np.flatnonzero(mse == 0)
    if same.size:
        raise UndefinedMetric(
            metric="psnr_db",
            reason=f"the answer of sample {int(same[0])} equals its reference: its PSNR is "
            "infinite",
        )
    out: Array = 10.0 * np.log10(data_range**2 / mse)
    return out


def ssim(preds: Array, target: Array, data_range: float, channel_axis: int | None) -> Array:
    """Each image's SSIM (``(N, H, W)``, or with channels on ``channel_axis`` of each image),
    one image at a time (its temporaries are a few times one image's size, not the dataset's)."""
    return np.concatenate(
        [
            _ssim(preds[i : i + 1], target[i : i + 1], data_range, channel_axis)
            for i in range(len(preds))
        ]
    )


def _ssim(preds: Array, target: Array, data_range: float, channel_axis: int | None) -> Array:
    if channel_axis is None:
        preds, target = preds[:, None], target[:, None]
    elif channel_axis == -1:
        preds, target = np.moveaxis(preds, -1, 1), np.moveaxis(target, -1, 1)
    # now (N, C, H, W)
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    points = WINDOW * WINDOW
    norm = points / (points - 1)  # the sample covariance
    ux, uy = _window_mean(preds), _window_mean(target)
    uxx, uyy = _window_mean(preds * preds), _window_mean(target * target)
    uxy = _window_mean(preds * target)
    vx, vy, vxy = norm * (uxx - ux * ux), norm * (uyy - uy * uy), norm * (uxy - ux * uy)
    a = (2 * ux * uy + c1) * (2 * vxy + c2)
    b = (ux * ux + uy * uy + c1) * (vx + vy + c2)
    out: Array = (a / b).mean(axis=(2, 3)).mean(axis=1)
    return out


def _window_mean(x: Array) -> Array:
    """The mean of each 7 x 7 window lying wholly inside the image, over its last two axes:
    scikit-image's uniform filter where the SSIM map is kept (its border, which the filter
    reflects, is cropped before the mean)."""
    for axis in (-2, -1):
        sums = np.cumsum(x, axis=axis)
        zero = np.zeros_like(np.take(sums, [0], axis=axis))
        sums = np.concatenate([zero, sums], axis=axis)
        n = sums.shape[axis]
        x = np.take(sums, range(WINDOW, n), axis=axis) - np.take(sums, range(n - WINDOW), axis=axis)
    out: Array = x / (WINDOW * WINDOW)
    return out
