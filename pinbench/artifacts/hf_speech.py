"""A Whisper folder's ``preprocessor_config.json`` (``WhisperFeatureExtractor``) checked as
data before anything is computed from it (decision 246).

The extractor turns each sample's waveform into log-mel features: ``n_fft``-point frames every
``hop_length`` samples over ``chunk_length`` seconds at ``sampling_rate``, ``feature_size`` mel
channels. Every number sizes arrays made per sample (every clip is padded to ``n_samples``), so
each is bounded, and so are the products that are allocated (mel channels x frames, STFT bins
x frames) and the frames' overlap (``hop_length`` at least ``n_fft / 4``), each at
``MULTIPLE`` times Whisper's own; the encoder takes exactly
``2 * max_source_positions`` frames (its second convolution halves them), so the numbers are
matched with each other and with ``config.json``: a config that would make
gigabytes per sample, or features the encoder refuses mid-run, is refused naming the key.
``dither`` adds random noise to every frame (a run would not repeat): refused unless 0.
"""

from __future__ import annotations

from typing import Any

from pinbench.errors import Picklable

EXTRACTOR = "WhisperFeatureExtractor"
MAX_RATE = 192_000
MAX_FFT = 2**14
MAX_SECONDS = 600
MAX_MEL_BINS = 1024
WHISPER_MELS = 128
WHISPER_FRAMES = 3000
WHISPER_SAMPLES = 480_000
WHISPER_BINS = 201
MULTIPLE = 16
"""Each array the extractor makes per sample is bounded at 16 times Whisper's own (large-v3:
128 mels x 3000 frames, 201 STFT bins, 480,000 samples): every number may be generous alone,
and their products are what is allocated."""
MAX_FEATURE_VALUES = MULTIPLE * WHISPER_MELS * WHISPER_FRAMES
MAX_STFT_VALUES = MULTIPLE * WHISPER_BINS * WHISPER_FRAMES
MAX_SAMPLES = MULTIPLE * WHISPER_SAMPLES


class FeaturesRefused(Picklable, ValueError):
    """A feature extractor's settings pinbench will not compute with: ``reason`` says why."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _int(pre: dict[str, Any], key: str, low: int, high: int) -> int:
    value = pre.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise FeaturesRefused(
            reason=f"`{key}: {value!r:.40}` must be an integer from {low} to {high}"
        )
    return value


def _product(key: str, per_frame: int, frames: int, bound: int, what: str) -> None:
    if per_frame * frames > bound:
        raise FeaturesRefused(
            reason=f"`{key}`: {per_frame} {what} x {frames} frames (nb_max_frames) is "
            f"{per_frame * frames:,} values per sample, over {bound:,} ({MULTIPLE} x Whisper's)"
        )


def check_features(pre: dict[str, Any], config: dict[str, Any]) -> None:
    """Refuse (``FeaturesRefused``) an extractor pinbench does not compute, or one whose
    numbers are past their bounds or do not describe the model's encoder."""
    kind = pre.get("feature_extractor_type")
    if kind != EXTRACTOR:
        raise FeaturesRefused(
            reason=f"`feature_extractor_type: {kind!r:.60}`: pinbench computes the features of "
            f"{EXTRACTOR} only"
        )
    rate = _int(pre, "sampling_rate", 1000, MAX_RATE)
    n_fft = _int(pre, "n_fft", 2, MAX_FFT)
    hop = _int(pre, "hop_length", 1, n_fft)
    seconds = _int(pre, "chunk_length", 1, MAX_SECONDS)
    mels = _int(pre, "feature_size", 1, MAX_MEL_BINS)
    samples = _int(pre, "n_samples", 1, MAX_SAMPLES)
    frames = _int(pre, "nb_max_frames", 1, MAX_SAMPLES)
    if 4 * hop < n_fft:
        raise FeaturesRefused(
            reason=f"`hop_length: {hop}` is under a quarter of n_fft ({n_fft}): frames would "
            "overlap more than any speech front end's (Whisper's: 160 of 400)"
        )
    if samples != seconds * rate:
        raise FeaturesRefused(
            reason=f"`n_samples: {samples}` is not chunk_length x sampling_rate ({seconds * rate})"
        )
    if frames != samples // hop:
        raise FeaturesRefused(
            reason=f"`nb_max_frames: {frames}` is not n_samples // hop_length ({samples // hop})"
        )
    _product("feature_size", mels, frames, MAX_FEATURE_VALUES, "mel channels")
    _product("n_fft", n_fft // 2 + 1, frames, MAX_STFT_VALUES, "STFT bins (n_fft // 2 + 1)")
    dither = pre.get("dither", 0.0)
    if dither not in (0, 0.0) or isinstance(dither, bool):
        raise FeaturesRefused(
            reason=f"`dither: {dither!r:.40}` adds random noise to every sample's features (a "
            "run would not repeat): set it to 0.0"
        )
    if config.get("num_mel_bins") != mels:
        raise FeaturesRefused(
            reason=f"`feature_size: {mels}` mel channels, but config.json's num_mel_bins is "
            f"{config.get('num_mel_bins')!r:.40}"
        )
    source = config.get("max_source_positions")
    if not isinstance(source, int) or frames != 2 * source:
        raise FeaturesRefused(
            reason=f"`nb_max_frames: {frames}`, but the encoder takes 2 x max_source_positions "
            f"frames ({source!r:.40} positions in config.json)"
        )
