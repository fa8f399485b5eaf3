"""Audio samples: WAV files decoded by the standard library's ``wave`` (``worker.audio``),
resampled as SciPy's ``resample_poly`` does (in NumPy: ``worker.polyphase``) as a declared
step, waveforms fed as they are (no silent reshape), and an audio classifier run end to end
through the CLI, with the local and the venv runner, on speech-like and silent clips made here."""

from __future__ import annotations

import json
import struct
import wave
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest
import yaml

from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.ports import Input
from pinbench.worker import audio, pipeline_errors
from pinbench.worker import pipeline as p
from tests.helpers import Cli

F32 = npt.NDArray[np.float32]


def write_wav(path: Path, pcm: bytes, *, width: int, rate: int = 16_000, channels: int = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(pcm)
    return path


def pcm16(x: npt.NDArray[np.floating[Any]]) -> bytes:
    """Float samples in [-1, 1] as 16-bit PCM (interleaved when 2-D: frames x channels)."""
    return np.asarray(np.round(x * 32767), dtype="<i2").tobytes()


def spec(steps: list[dict[str, Any]], **fields: Any) -> Input:
    return msgspec.convert({"name": "x", "steps": steps, **fields}, Input)


# ---------------------------------------------------------------- decoding


def _int24(values: list[int]) -> bytes:
    return b"".join((v & 0xFFFFFF).to_bytes(3, "little") for v in values)


PCM_WIDTHS = [
    # (width, raw frames, what they mean: value / 2^(bits-1), 8-bit unsigned around 128)
    (1, bytes([0, 128, 255, 64]), [-1.0, 0.0, 127 / 128, -0.5]),
    (2, np.array([-32768, 0, 32767, 16384], "<i2").tobytes(), [-1.0, 0.0, 32767 / 32768, 0.5]),
    (3, _int24([-(1 << 23), 0, (1 << 23) - 1, 1 << 22]), [-1.0, 0.0, 1 - 2.0**-23, 0.5]),
    (4, np.array([-(1 << 31), 0, (1 << 31) - 1, 1 << 30], "<i4").tobytes(), [-1, 0, 1, 0.5]),
]


@pytest.mark.parametrize(("width", "raw", "want"), PCM_WIDTHS, ids=["8", "16", "24", "32"])
def test_pcm_of_every_width_is_float32_in_minus_one_to_one(
    tmp_path: Path, width: int, raw: bytes, want: list[float]
) -> None:
    path = write_wav(tmp_path / "a.wav", raw, width=width, rate=22_050)
    samples, rate = audio.read_wav(path, name="a.wav", channel="mix")
    assert samples.dtype == np.float32 and rate == 22_050
    np.testing.assert_allclose(samples, np.asarray(want, np.float32), rtol=0, atol=1e-7)


def test_channels_are_mixed_or_one_is_picked_as_declared(tmp_path: Path) -> None:
    frames = np.array([[0.5, -0.25], [1.0, 0.0], [-0.5, 0.5]])
    path = write_wav(tmp_path / "s.wav", pcm16(frames), width=2, channels=2)
    values = np.round(frames * 32767) / 32768
    mixed, _ = audio.read_wav(path, name="s.wav", channel="mix")
    np.testing.assert_allclose(mixed, values.mean(axis=1), atol=1e-7)
    right, _ = audio.read_wav(path, name="s.wav", channel=1)
    np.testing.assert_allclose(right, values[:, 1], atol=1e-7)
    with pytest.raises(audio.AudioRefused, match=r"s\.wav: it has 2 channel\(s\), the step picks"):
        audio.read_wav(path, name="s.wav", channel=2)


def _good() -> bytes:
    """A whole 16-bit mono WAV of 4 frames, as ``wave`` writes it (44-byte header)."""
    import io

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(np.arange(4, dtype="<i2").tobytes())
    return buf.getvalue()


def _riff(body: bytes) -> bytes:
    """``body`` (after the RIFF header) with a RIFF size that matches it."""
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WAVE" + body


GOOD = _good()
HOSTILE = [
    ("not a WAV file", b"hello, world", "not a WAV file"),
    ("empty", b"", "not a WAV file"),
    ("truncated: the RIFF size says more", GOOD[:-3], "RIFF header declares 52 bytes"),
    (
        "truncated, RIFF size fixed: the data chunk says more",
        _riff(GOOD[12:-4]),
        "data chunk declares 4 frames, the file holds 2",
    ),
    (
        "a huge declared data size",
        GOOD[:40] + struct.pack("<I", 0xFFFFFFF0) + GOOD[44:],
        "more than the 67108864 samples a file may have",
    ),
    ("IEEE float (format 3)", GOOD[:20] + struct.pack("<H", 3) + GOOD[22:], "format tag 3 is not"),
    ("no channels", GOOD[:22] + struct.pack("<H", 0) + GOOD[24:], "bad # of channels"),
    ("sample rate 0", GOOD[:24] + struct.pack("<I", 0) + GOOD[28:], "sample rate 0 Hz"),
    ("a fmt chunk larger than the file", GOOD[:16] + struct.pack("<I", 999) + GOOD[20:], "sizes"),
    (
        "a data chunk not of whole frames",
        _riff(GOOD[12:40] + struct.pack("<I", 7) + GOOD[44:51] + b"\0"),
        "not a whole number of frames",
    ),
    ("64-bit samples", GOOD[:34] + struct.pack("<H", 64) + GOOD[36:], "64-bit samples are not"),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_a_hostile_wav_is_refused_naming_the_file(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "bad.wav"
    path.write_bytes(data)
    for read in (
        lambda: audio.read_wav(path, name="clips/bad.wav", channel="mix"),
        lambda: audio.wav_info(path, name="clips/bad.wav"),
    ):
        with pytest.raises(audio.AudioRefused, match=message) as caught:
            read()
        assert "cannot decode clips/bad.wav" in str(caught.value)


# ---------------------------------------------------------------- resampling


def test_the_resample_step_is_scipys_resample_poly_and_deterministic(tmp_path: Path) -> None:
    from scipy.signal import resample_poly

    t = np.arange(4410) / 44_100
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    path = write_wav(tmp_path / "t.wav", pcm16(tone), width=2, rate=44_100)
    x = spec([{"decode_audio": {"channel": "mix"}}, {"resample": {"rate": 16_000}}])
    out = p.preprocess_files([("t.wav", path)], "audio", x)
    decoded = (np.round(tone * 32767) / 32768).astype(np.float32)
    want = resample_poly(decoded.astype(np.float64), 160, 441).astype(np.float32)
    assert out.shape == (1, 1600) and out.dtype == np.float32
    np.testing.assert_allclose(out[0], want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(p.preprocess_files([("t.wav", path)], "audio", x), out)
    wave_ = audio.decoder_version()
    resampler = f"pinbench resample_poly (kaiser 5.0, numpy {np.__version__})"
    assert p.decoder_of("audio", [x]) == f"{wave_}, {resampler}" and p.decoder_of("audio") == wave_


def test_a_file_of_another_rate_without_a_resample_step_is_refused(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "c.wav", pcm16(np.zeros(80)), width=2, rate=8_000)
    x = spec([{"decode_audio": {"channel": "mix", "rate": 16_000}}])
    with pytest.raises(audio.AudioRefused, match=r"c\.wav: its sample rate is 8000 Hz, the input"):
        p.preprocess_files([("clips/c.wav", path)], "audio", x)


def test_rates_of_a_huge_polyphase_ratio_are_refused() -> None:
    with pytest.raises(audio.ResampleRefused, match="16000/44101 polyphase ratio"):
        audio.resample(np.zeros(10, np.float32), rate_from=44_101, rate_to=16_000, name="a.wav")


def test_a_resampled_waveform_past_the_samples_a_file_may_hold_is_refused() -> None:
    """750 Hz to 768 kHz is 1024/1: 65,537 samples would become 2^26 + 1024 (a 512 MiB
    float64 array before), refused before anything is computed."""
    with pytest.raises(audio.ResampledTooLong, match=r"a\.wav has 65537 samples at 750 Hz, "):
        audio.resample(np.zeros(65_537, np.float32), rate_from=750, rate_to=768_000, name="a.wav")


# ---------------------------------------------------------------- the manifest's steps


def _model(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": "audio/m",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": [{"path": "m.onnx", "sha256": "0" * 64}],
        "inputs": [{"name": "x", "steps": steps}],
    }


DECODE = {"decode_audio": {"channel": "mix", "rate": 16000}}
BAD_STEPS = [
    ("no channel handling declared", [{"decode_audio": {"rate": 16000}}], "channel"),
    ("no rate declared", [{"decode_audio": {"channel": 0}}], "declare the sample rate"),
    ("a channel past 63", [{"decode_audio": {"channel": 64, "rate": 1}}], "between 0 and 63"),
    ("a rate past 768 kHz", [{"decode_audio": {"channel": 0, "rate": 768001}}], "768000"),
    ("decode_audio not first", [{"normalize": {"scale": 2.0}}, DECODE], "must be the first"),
    ("fit_length without decoding", [{"fit_length": {"length": 4}}], "must be the first"),
    (
        "resample not right after decode_audio",
        [DECODE, {"fit_length": {"length": 4}}, {"resample": {"rate": 8000}}],
        "resample must follow decode_audio directly",
    ),
    ("a pad value past 1", [DECODE, {"fit_length": {"length": 4, "value": 2}}], "between -1"),
]


@pytest.mark.parametrize(
    ("steps", "message"), [c[1:] for c in BAD_STEPS], ids=[c[0] for c in BAD_STEPS]
)
def test_audio_steps_are_refused_where_they_cannot_mean_anything(
    steps: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ManifestError, match=message):
        parse_manifest(_model(steps))


def test_fit_length_pads_crops_or_refuses_naming_the_file() -> None:
    x = np.array([[0.1, 0.2, 0.3]], np.float32)
    padded = p._apply(x, spec([DECODE, {"fit_length": {"length": 5, "value": -0.5}}]).steps[1])
    np.testing.assert_array_equal(padded, np.array([[0.1, 0.2, 0.3, -0.5, -0.5]], np.float32))
    cut = spec([DECODE, {"fit_length": {"length": 2, "crop": True}}]).steps[1]
    np.testing.assert_array_equal(p._apply(x, cut), x[:, :2])
    refuse = spec([DECODE, {"fit_length": {"length": 2}}]).steps[1]
    with pytest.raises(
        pipeline_errors.PipelineError, match=r"fit_length: clips/a\.wav is 3 samples long"
    ):
        p._apply(x, refuse, sample="clips/a.wav")


def test_waveforms_of_different_lengths_are_never_stacked_silently(tmp_path: Path) -> None:
    a = write_wav(tmp_path / "a.wav", pcm16(np.zeros(100)), width=2)
    b = write_wav(tmp_path / "b.wav", pcm16(np.zeros(120)), width=2)
    with pytest.raises(
        pipeline_errors.InputShape, match=r"a.wav: \[100\], b.wav: \[120\]\): add a fit_length"
    ):
        p.preprocess_files([("a.wav", a), ("b.wav", b)], "audio", spec([DECODE]))


# ---------------------------------------------------------------- no silent reshapes

AXIS0, AXIS_LAST, AXIS2 = ({"expand_dims": {"axis": a}} for a in (0, -1, 2))
NCHW, CROP = {"layout": {"to": "NCHW"}}, {"crop": {"size": [2, 2]}}
SHAPES = [
    # (samples, input, the shape fed, or the error's words)
    ("waveforms as they are", (3, 512), {}, (3, 512)),
    ("a 3-D tensor as it is (no channel added)", (3, 1, 512), {}, (3, 1, 512)),
    ("a channel axis only when a step says so", (3, 512), {"steps": [AXIS0]}, (3, 1, 512)),
    ("... at the end", (3, 512), {"steps": [AXIS_LAST]}, (3, 512, 1)),
    ("grayscale images gain their channel", (2, 8, 8), {"type": "image"}, (2, 8, 8, 1)),
    ("as do samples an image step reads", (2, 8, 8), {"steps": [NCHW]}, (2, 1, 8, 8)),
    ("an image input of waveforms", (3, 512), {"type": "image"}, "input 'x': its type image"),
    ("an image step on waveforms", (3, 512), {"steps": [CROP]}, "input 'x': its step crop"),
    ("an axis outside the sample", (3, 512), {"steps": [AXIS2]}, "step expand_dims: axis 2"),
    ("an image step on 5-D", (2, 8, 8), {"steps": [AXIS0, NCHW]}, "step layout: reads"),
]


@pytest.mark.parametrize(
    ("shape", "fields", "want"), [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES]
)
def test_a_shape_changes_only_by_what_the_manifest_says(
    shape: tuple[int, ...], fields: dict[str, Any], want: tuple[int, ...] | str
) -> None:
    x = spec(**{"steps": [], **fields})
    samples = np.zeros(shape, np.float32)
    if isinstance(want, str):
        with pytest.raises(pipeline_errors.PipelineError) as caught:
            p.preprocess(samples, x)
        assert want in str(caught.value)
        assert "step input" not in str(caught.value) and "step stack" not in str(caught.value)
    else:
        assert p.preprocess(samples, x).shape == want


# ---------------------------------------------------------------- end to end

RATE = 16_000
LENGTH = 8_000  # half a second at 16 kHz


def speech_like(seconds: float, rate: int, amplitude: float, seed: int) -> npt.NDArray[np.float64]:
    """Harmonics of a 140 Hz voice, amplitude-modulated at a syllable rate of 4 Hz."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    voice = sum(np.sin(2 * np.pi * 140 * k * t + rng.uniform(0, 6)) / k for k in range(1, 6))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 4 * t))
    out: npt.NDArray[np.float64] = amplitude * envelope * voice / 2.3
    return out


def quiet_noise(seconds: float, rate: int, seed: int) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = np.random.default_rng(seed).normal(0, 2e-3, int(seconds * rate))
    return out


def energy_model(path: Path) -> None:
    """ONNX: waveforms (N, 8000) -> scores (N, 2) for [silence, speech]: the log of the mean
    energy against a threshold of 1e-3 (speech above it)."""
    from onnx import TensorProto, helper, save

    c = helper.make_tensor
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "x"], ["sq"]),
            helper.make_node("ReduceMean", ["sq", "axes"], ["energy"], keepdims=1),
            helper.make_node("Add", ["energy", "tiny"], ["e"]),
            helper.make_node("Log", ["e"], ["log_e"]),
            helper.make_node("Sub", ["log_e", "threshold"], ["speech"]),
            helper.make_node("Neg", ["speech"], ["silence"]),
            helper.make_node("Concat", ["silence", "speech"], ["scores"], axis=1),
        ],
        "energy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", LENGTH])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 2])],
        [
            c("axes", TensorProto.INT64, [1], [1]),
            c("tiny", TensorProto.FLOAT, [], [1e-10]),
            c("threshold", TensorProto.FLOAT, [], [float(np.log(1e-3))]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    save(model, str(path))


def make_clips(root: Path) -> dict[str, int]:
    """Speech-like and silent clips in class folders (0: silence, 1: speech), of several
    lengths, rates, widths and channel counts; one quiet speaker the model calls silence.
    Returns each file's class."""
    clips: dict[str, int] = {}

    def put(rel: str, x: npt.NDArray[np.float64], rate: int = RATE, stereo: bool = False) -> None:
        frames = np.stack([x, 0.5 * x], axis=1) if stereo else x
        write_wav(root / rel, pcm16(frames), width=2, rate=rate, channels=2 if stereo else 1)
        clips[rel] = 1 if rel.startswith("clips/speech/") else 0

    put("clips/speech/a.wav", speech_like(0.6, RATE, 0.3, 1))  # cropped to 0.5 s
    put("clips/speech/b.wav", speech_like(0.4, 8_000, 0.5, 2), rate=8_000)  # resampled, padded
    put("clips/speech/c.wav", speech_like(0.5, 44_100, 0.4, 3), rate=44_100, stereo=True)
    put("clips/speech/d.wav", speech_like(0.5, RATE, 0.02, 4))  # too quiet: called silence
    put("clips/silence/e.wav", np.zeros(RATE // 2))
    put("clips/silence/f.wav", quiet_noise(0.3, 22_050, 5), rate=22_050)
    return clips


def reference_classes(root: Path, files: list[str]) -> list[int]:
    """The direct computation: stdlib wave + NumPy decoding, SciPy's resample_poly, the
    first 8000 samples (zero-padded), the log-energy rule the model implements."""
    from math import gcd

    from scipy.signal import resample_poly

    out = []
    for rel in files:
        with wave.open(str(root / rel), "rb") as w:
            rate, channels = w.getframerate(), w.getnchannels()
            raw = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)
        x = (raw / 32768).reshape(-1, channels).mean(axis=1).astype(np.float32)
        if rate != RATE:
            g = gcd(rate, RATE)
            x = resample_poly(x.astype(np.float64), RATE // g, rate // g).astype(np.float32)
        fitted = np.zeros(LENGTH, np.float64)
        fitted[: min(LENGTH, len(x))] = x[:LENGTH]
        out.append(int(np.log(np.mean(fitted**2) + 1e-10) > np.log(1e-3)))
    return out


def test_an_audio_classifier_runs_end_to_end_from_the_cli(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "audio"
    clips = make_clips(root)
    (root / "classes.txt").write_text("silence\nspeech\n")
    dataset_yaml = root / "dataset.yaml"
    made = cli(
        "manifest", "dataset", str(root / "clips"), "--names", str(root / "classes.txt"),
        "--name", "speech-or-silence", "-o", str(dataset_yaml),
    )  # fmt: skip
    assert made.code == 0, made.err
    dataset = yaml.safe_load(dataset_yaml.read_text())
    assert dataset["data"] == {"format": "audio", "path": "clips"}
    assert dataset["labels"]["format"] == "imagefolder" and dataset["samples"] == 6

    energy_model(root / "energy.onnx")
    steps = root / "steps.yaml"
    steps.write_text(
        "- decode_audio: {channel: mix}\n"
        f"- resample: {{rate: {RATE}}}\n"
        f"- fit_length: {{length: {LENGTH}, value: 0.0, crop: true}}\n"
    )
    model_yaml = root / "model.yaml"
    args = ["--steps", str(steps), "--classification", "scores", "-o", str(model_yaml)]
    assert cli("manifest", "model", str(root / "energy.onnx"), *args).code == 0
    framework_yaml = root / "framework.yaml"
    assert cli("manifest", "framework", "onnxruntime==1.31.0", "-o", str(framework_yaml)).code == 0

    from tests.test_authoring import _accuracy_run

    run = _accuracy_run(cli, framework_yaml, model_yaml, dataset_yaml)
    files = sorted(clips)
    predicted = reference_classes(root, files)
    truth = [clips[f] for f in files]
    assert predicted.count(1) == 3  # the quiet speaker is called silence
    assert run["top1"] == float(np.mean(np.array(predicted) == np.array(truth)))
    shown = json.loads(cli("runs", "show", run["id"], "--json").out)
    decoder = shown["details"]["decoder"]
    assert decoder.startswith("wave (Python ") and "pinbench resample_poly (kaiser 5.0" in decoder
    # The venv runner's environment (the framework's pinned requirements) has no SciPy: the
    # resample step needs nothing but NumPy there, and gives the same classes.
    ran = cli("run", str(root / "model.lock"), "--runner", "venv")
    assert ran.code == 0, ran.err
    in_venv = json.loads(cli("runs", "list", "--json").out)[0]
    assert in_venv["runner"] == "venv" and in_venv["status"] == "succeeded"
    assert in_venv["top1"] == run["top1"]
    shown = json.loads(cli("runs", "show", in_venv["id"], "--json").out)
    assert "pinbench resample_poly (kaiser 5.0, numpy " in shown["details"]["decoder"]


def test_publishing_an_audio_dataset_with_a_truncated_file_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "audio"
    write_wav(root / "clips/a.wav", pcm16(np.zeros(100)), width=2)
    good = write_wav(root / "clips/b.wav", pcm16(np.zeros(100)), width=2)
    manifest = root / "dataset.yaml"
    assert cli("manifest", "dataset", str(root / "clips"), "-o", str(manifest)).code == 0
    data = good.read_bytes()
    good.write_bytes(data[:4] + struct.pack("<I", len(data) - 20 - 8) + data[8:-20])
    text = yaml.safe_load(manifest.read_text())
    import hashlib

    for f in text["files"]:  # the manifest pins the truncated bytes: only the WAV is wrong
        f["sha256"] = hashlib.sha256((root / f["path"]).read_bytes()).hexdigest()
        f["size"] = (root / f["path"]).stat().st_size
    manifest.write_text(yaml.safe_dump(text))
    assert cli("init").code == 0
    refused = cli("publish", str(manifest))
    assert refused.code == 1
    assert "clips/b.wav" in refused.err and "data chunk declares 100 frames" in refused.err
    assert json.loads(cli("list", "dataset", "--json").out) == []


def test_the_errors_pickle_with_their_data() -> None:
    import pickle

    errors = [
        audio.AudioRefused(name="clips/a.wav", problem="a truncated file"),
        audio.ResampleRefused(name="a.wav", rate_from=44_101, rate_to=16_000, up=16000, down=1),
        audio.ResampledTooLong(name="a.wav", samples=65_537, rate_from=750, rate_to=768_000),
        pipeline_errors.InputShape(input="x", step="crop", reason="its step crop reads images"),
    ]
    for error in errors:
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert back.__dict__ == error.__dict__
