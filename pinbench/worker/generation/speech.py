"""Speech-to-text inputs (decision 246): each audio sample's log-mel features, computed before
anything is timed as the model folder's ``WhisperFeatureExtractor`` computes them (transformers'
own code, from the settings ``artifacts.hf_speech`` checked), from the sample's waveform
(``worker.audio``: PCM WAV, channels mixed, resampled to the extractor's rate).

A sample longer than the extractor's window (``chunk_length`` seconds) is refused naming it:
the extractor would cut it silently, and long-form transcription (windows stitched together)
is not what this runs. Every sample's features are kept for the run, so their total is
bounded (``FEATURES_BUDGET``) and a dataset past it refused before anything is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.errors import UserError
from pinbench.worker.samples import SampleFile

Features = npt.NDArray[np.float32]

FEATURES_BUDGET = 4 * 2**30
"""The most bytes every sample's features together may hold: they are all computed before
anything is timed and kept for the run (4 GiB: 2,796 samples of Whisper large-v3's 128 x 3000
float32 features, 4,473 of the 80-channel models'; LibriSpeech test-clean has 2,620)."""


class FeaturesTooLarge(UserError):
    def __init__(self, *, samples: int, per_sample: int, budget: int) -> None:
        super().__init__(
            f"{samples} audio samples of {per_sample:,} bytes of features each need "
            f"{samples * per_sample:,} bytes, over the {budget:,} bytes pinbench holds before "
            f"timing: at most {budget // per_sample} samples (a smaller dataset, or "
            "`scenario.sample_count`)"
        )
        self.samples = samples
        self.per_sample = per_sample
        self.budget = budget


class AudioTooLong(UserError):
    def __init__(self, *, name: str, seconds: float, window: int) -> None:
        super().__init__(
            f"audio sample {name} is {seconds:.2f} s: the model's feature extractor reads "
            f"{window} s windows and would cut the rest (long-form transcription is not run: "
            "split the file)"
        )
        self.name = name
        self.seconds = seconds
        self.window = window


def extractor_of(processor: Path, name: str) -> Any:
    """The folder's ``WhisperFeatureExtractor`` from its (checked) settings."""
    from pinbench.artifacts.hf_processor_file import settings
    from pinbench.worker.predictors.transformers.loading import import_transformers

    return import_transformers().WhisperFeatureExtractor.from_dict(settings(processor, name))


def audio_features(
    files: Sequence[SampleFile], extractor: Any, stop: Callable[[], None]
) -> list[Features]:
    """Each file's features ``(1, mel channels, frames)``, float32, in order."""
    from pinbench.worker.audio import read_wav, resample

    rate = int(extractor.sampling_rate)
    per_sample = int(extractor.feature_size) * int(extractor.nb_max_frames) * 4
    if len(files) * per_sample > FEATURES_BUDGET:
        raise FeaturesTooLarge(samples=len(files), per_sample=per_sample, budget=FEATURES_BUDGET)
    out: list[Features] = []
    for sample in files:
        stop()
        wave, found = read_wav(sample.local, name=sample.path, channel="mix")
        if found != rate:
            wave = resample(wave, rate_from=found, rate_to=rate, name=sample.path)
        if len(wave) > extractor.n_samples:
            raise AudioTooLong(
                name=sample.path, seconds=len(wave) / rate, window=int(extractor.chunk_length)
            )
        made = extractor(wave, sampling_rate=rate, return_tensors="np").input_features
        out.append(np.ascontiguousarray(made, dtype=np.float32))
    return out
