"""Audio samples: WAV files decoded by the standard library's ``wave`` module to float32
waveforms in [-1, 1], and resampled as SciPy's ``resample_poly`` does it, in NumPy alone
(``worker.polyphase``).

``read_wav`` is the one entry point the pipeline and other tasks use: a file's samples as a
1-D float32 array (its channels mixed down or one picked, as the manifest declares) and the
sample rate its header gives. Only PCM WAV is read (8-bit unsigned, 16/24/32-bit signed
integers); a file that is not one whole PCM WAV within the bounds below is refused, naming
the file, before its samples are read. ``wav_info`` checks a file the same way without
keeping its samples (what publishing runs on every file of an audio dataset).
"""

from __future__ import annotations

import contextlib
import math
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from pinbench import bounds as b
from pinbench.errors import UserError
from pinbench.worker import polyphase

if TYPE_CHECKING:
    import wave

Waveform = npt.NDArray[np.float32]

MAX_WAV_BYTES = 1 << 28
"""The largest WAV file a dataset may hold (256 MiB: 23 min of 48 kHz 24-bit stereo, 2 h of
16 kHz 16-bit mono); every decoded sample is held in memory with all the others."""
MAX_WAV_VALUES = 1 << 26
"""The most samples (frames x channels) one file may declare: 256 MiB as float32, 70 min of
16 kHz mono. Checked on the header, before any sample is read."""
MAX_CHANNELS = 64
"""Channels of one file: past any recording format's (22.2 surround has 24)."""
MAX_RESAMPLE_FACTOR = 1024
"""``resample_poly``'s up and down factors (the two rates divided by their greatest common
divisor) are at most this each: its filter has 20 taps per unit of the larger, and the rates
in use need at most 640 (11,025 Hz to 16,000 Hz: 640/441)."""
SAMPLE_WIDTHS = {1: "8-bit unsigned", 2: "16-bit", 3: "24-bit", 4: "32-bit"}
"""The PCM sample widths read, in bytes."""
_CHUNK_FRAMES = 1 << 20
"""Frames read at a time when a file is only checked."""


class AudioRefused(UserError):
    """A sample audio file that cannot or may not be decoded: names the file."""

    def __init__(self, *, name: str, problem: str) -> None:
        super().__init__(f"preprocessing step decode_audio: cannot decode {name}: {problem}")
        self.name = name
        self.problem = problem


class ResampleRefused(UserError):
    """Rates whose ratio ``resample_poly`` would need a filter too large for."""

    def __init__(self, *, name: str, rate_from: int, rate_to: int, up: int, down: int) -> None:
        super().__init__(
            f"preprocessing step resample: {name} is at {rate_from} Hz: {rate_from} -> "
            f"{rate_to} Hz is a {up}/{down} polyphase ratio, at most {MAX_RESAMPLE_FACTOR} "
            "each way: resample the file to a rate of a simpler ratio first"
        )
        self.name = name
        self.rate_from = rate_from
        self.rate_to = rate_to


class ResampledTooLong(UserError):
    """A resampled waveform of more samples than a file may hold: refused before it is made."""

    def __init__(self, *, name: str, samples: int, rate_from: int, rate_to: int) -> None:
        length = -(-samples * rate_to // rate_from)
        super().__init__(
            f"preprocessing step resample: {name} has {samples} samples at {rate_from} Hz, "
            f"{length} at {rate_to} Hz, more than the {MAX_WAV_VALUES} a waveform may have: "
            "cut the file or resample it to a lower rate"
        )
        self.name = name
        self.samples = samples
        self.rate_from = rate_from
        self.rate_to = rate_to


@dataclass(frozen=True, slots=True)
class WavInfo:
    channels: int
    rate: int
    """Frames per second, from the header."""
    frames: int
    sample_width: int
    """Bytes per sample of one channel."""


def decoder_version() -> str:
    """What decodes audio files, as recorded in a run's ``details.decoder``."""
    return f"wave (Python {sys.version_info.major}.{sys.version_info.minor})"


def resampler_version() -> str:
    """What resamples, as recorded in a run's ``details.decoder`` (NumPy only: every runner's
    environment has it)."""
    return polyphase.version()


def wav_info(path: Path, *, name: str) -> WavInfo:
    """Check a whole WAV file as ``read_wav`` would read it (header, sizes, every frame
    present) without keeping its samples."""
    with _open_wav(path, name) as (reader, info):
        left = info.frames
        while left:
            n = min(left, _CHUNK_FRAMES)
            _frames(reader, n, info, name, info.frames - left)
            left -= n
        _check_end(reader, name)
    return info


def read_wav(path: Path, *, name: str, channel: str | int) -> tuple[Waveform, int]:
    """A WAV file's samples, 1-D float32 in [-1, 1], and its sample rate; ``channel`` is
    ``"mix"`` (the mean of every channel) or the index of the channel to keep. ``name`` is
    what errors call the file (its path in the dataset)."""
    with _open_wav(path, name) as (reader, info):
        raw = _frames(reader, info.frames, info, name)
        _check_end(reader, name)
    values = _to_float(raw, info.sample_width).reshape(info.frames, info.channels)
    if channel == "mix":
        mono = values.mean(axis=1, dtype=np.float64).astype(np.float32)
    else:
        assert isinstance(channel, int)
        if not 0 <= channel < info.channels:
            raise AudioRefused(
                name=name,
                problem=f"it has {info.channels} channel(s), the step picks channel {channel} "
                "(counted from 0): pick another or mix them down (`channel: mix`)",
            )
        mono = np.ascontiguousarray(values[:, channel])
    return mono, info.rate


def resample(samples: Waveform, *, rate_from: int, rate_to: int, name: str) -> Waveform:
    """``samples`` at ``rate_from`` as they are at ``rate_to``: SciPy's polyphase
    ``resample_poly`` (a Kaiser-windowed FIR, beta 5) computed in NumPy with float64 sums,
    deterministic (``worker.polyphase``); the length becomes ``ceil(len * rate_to /
    rate_from)``, at most ``MAX_WAV_VALUES``. Values are not clipped: the filter may overshoot
    [-1, 1] slightly near a full-scale edge."""
    if rate_from == rate_to:
        return samples
    g = math.gcd(rate_from, rate_to)
    up, down = rate_to // g, rate_from // g
    if max(up, down) > MAX_RESAMPLE_FACTOR:
        raise ResampleRefused(name=name, rate_from=rate_from, rate_to=rate_to, up=up, down=down)
    if -(-len(samples) * up // down) > MAX_WAV_VALUES:
        raise ResampledTooLong(
            name=name, samples=len(samples), rate_from=rate_from, rate_to=rate_to
        )
    return np.asarray(polyphase.resample_poly(samples, up, down, dtype=np.float32), np.float32)


@contextlib.contextmanager
def _open_wav(path: Path, name: str) -> Iterator[tuple[wave.Wave_read, WavInfo]]:
    """The file opened and its header checked, or ``AudioRefused``."""
    import wave

    def refuse(problem: str) -> AudioRefused:
        return AudioRefused(name=name, problem=problem)

    try:
        size = path.stat().st_size
        if size > MAX_WAV_BYTES:
            raise refuse(f"{size} bytes, more than the {MAX_WAV_BYTES} a sample file may have")
        with path.open("rb") as f:
            head = f.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:] != b"WAVE":
            raise refuse("not a WAV file (no RIFF/WAVE header)")
        (riff,) = struct.unpack("<I", head[4:8])
        if riff + 8 != size:
            raise refuse(
                f"its RIFF header declares {riff + 8} bytes, the file holds {size}: "
                "a truncated or padded file"
            )
        with wave.open(str(path), "rb") as reader:
            yield reader, _header(reader, refuse)
    except wave.Error as exc:
        raise refuse(_wave_problem(str(exc))) from None
    except (EOFError, struct.error, RuntimeError):  # wave's seek past a chunk: RuntimeError
        raise refuse("its chunks end early or their sizes are wrong") from None
    except (OSError, ValueError, OverflowError) as exc:
        raise refuse(str(exc)) from None


def _wave_problem(message: str) -> str:
    if message.startswith("unknown format:"):
        tag = message.split(":", 1)[1].strip()
        return (
            f"WAV format tag {tag} is not read: only PCM (tag 1; not float, compressed or "
            "WAVE_FORMAT_EXTENSIBLE): convert it, e.g. `ffmpeg -i in.wav -c:a pcm_s16le out.wav`"
        )
    return message


def _header(reader: wave.Wave_read, refuse: Callable[[str], AudioRefused]) -> WavInfo:
    info = WavInfo(
        channels=reader.getnchannels(),
        rate=reader.getframerate(),
        frames=reader.getnframes(),
        sample_width=reader.getsampwidth(),
    )
    if info.sample_width not in SAMPLE_WIDTHS:
        raise refuse(
            f"{8 * info.sample_width}-bit samples are not read (only "
            f"{', '.join(SAMPLE_WIDTHS.values())} PCM)"
        )
    if not 1 <= info.channels <= MAX_CHANNELS:
        raise refuse(f"{info.channels} channels: at most {MAX_CHANNELS}")
    if not b.SAMPLE_RATE.holds(info.rate):
        raise refuse(f"sample rate {info.rate} Hz: it must be {b.SAMPLE_RATE.text()}")
    if info.frames == 0:
        raise refuse("it holds no samples")
    if info.frames * info.channels > MAX_WAV_VALUES:
        raise refuse(
            f"its header declares {info.frames} frames x {info.channels} channel(s), more than "
            f"the {MAX_WAV_VALUES} samples a file may have"
        )
    return info


def _frames(reader: wave.Wave_read, count: int, info: WavInfo, name: str, done: int = 0) -> bytes:
    """The next ``count`` frames (``done`` already read), all of them or ``AudioRefused``."""
    data = reader.readframes(count)
    frame = info.channels * info.sample_width
    if len(data) != count * frame:
        raise AudioRefused(
            name=name,
            problem=f"its data chunk declares {info.frames} frames, the file holds "
            f"{done + len(data) // frame}: a truncated file",
        )
    return data


def _check_end(reader: wave.Wave_read, name: str) -> None:
    """The data chunk ends on a frame boundary (``wave`` would drop a partial last frame)."""
    if reader.readframes(1):
        raise AudioRefused(
            name=name, problem="its data chunk is not a whole number of frames: a wrong size"
        )


def _to_float(raw: bytes, width: int) -> Waveform:
    """Little-endian PCM bytes as float32 in [-1, 1): 8-bit is unsigned (offset 128), wider
    samples signed; each divided by 2^(bits - 1), a power of two, so the result is the
    quotient rounded once to float32. At most one int32 copy of the samples is made."""
    if width == 1:
        values = np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - np.float32(128)
    elif width == 3:  # each sample's 3 bytes at the top of an int32, shifted down with its sign
        padded = np.zeros((len(raw) // 3, 4), dtype=np.uint8)
        padded[:, 1:] = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3)
        values = (padded.view("<i4").reshape(-1) >> 8).astype(np.float32)
    else:
        values = np.frombuffer(raw, dtype="<i2" if width == 2 else "<i4").astype(np.float32)
    out: Waveform = values / np.float32(1 << (8 * width - 1))
    return out
