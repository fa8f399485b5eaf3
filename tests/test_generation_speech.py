"""Speech-to-text (decision 246): a tiny random-weight Whisper built here, described by
``manifest model``, published with a speech-recognition dataset of WAV files and transcripts,
locked and run through pinbench. Its answers are the token ids transformers' own
``generate`` gives on the features its own ``WhisperFeatureExtractor`` computes; WER and CER
are jiwer's and a direct edit distance's; TTFT/TPOT are LoadGen's. A feature extractor
pinbench cannot compute with, or one that does not describe the encoder, is refused."""

from __future__ import annotations

import json
import re
import shutil
import wave
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pinbench
from pinbench.artifacts.hf_folder import HfFolderRefused, describe
from pinbench.errors import PinbenchError
from tests.encdec_folders import RATE, SPECIAL, whisper_folder, write_wav

NEW = 5
TONES = (220, 440, 880, 1760)
TRANSCRIPTS = ["w8 w31 w46", "w32 w44 w7 w31", "w46 w20", "w8 w31 w8 w31 w49"]


@pytest.fixture(scope="module")
def whisper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path, Path]]:
    """A registry with the Whisper folder, the transformers framework and the dataset."""
    from pinbench.authoring.hf_model import hf_manifest
    from pinbench.catalog import frameworks
    from tests.helpers import dump, sha

    root = tmp_path_factory.mktemp("whisper")
    folder = whisper_folder(root / "whisper")
    data, notes = hf_manifest(
        folder,
        base=root,
        name="speech/whisper",
        version="1.0.0",
        framework_range=None,
        steps=None,
        classification=[],
    )
    assert data["outputs"] == [{"name": "logits", "type": "generation"}]
    assert "speech-recognition" in notes[0]
    reg = pinbench.Registry(root / "home")
    reg.init()
    reg.publish(frameworks.write(root, "transformers"))
    reg.publish(dump(root / "whisper.yaml", data))
    (root / "clips").mkdir()
    for i, tone in enumerate(TONES):  # clips of their own lengths: 0.5, 0.3, 0.8 and 0.6 s
        t = np.arange(RATE * (5, 3, 8, 6)[i] // 10) / RATE
        write_wav(root / "clips" / f"{i}.wav", 0.3 * np.sin(2 * np.pi * tone * t))
    (root / "transcripts.txt").write_text("".join(f"{t}\n" for t in TRANSCRIPTS))
    files = [*(f"clips/{i}.wav" for i in range(len(TONES))), "transcripts.txt"]
    entries = [
        {"path": p, "sha256": sha((root / p).read_bytes()), "size": (root / p).stat().st_size}
        for p in files
    ]
    reg.publish(
        dump(
            root / "dataset.yaml",
            {
                "kind": "dataset",
                "name": "tones",
                "version": "1.0.0",
                "task": "speech-recognition",
                "data": {"format": "audio", "path": "clips"},
                "labels": {"format": "transcript-txt", "path": "transcripts.txt"},
                "files": entries,
            },
        )
    )
    yield reg, folder, root


def _run(registry: Any, sandbox: str = "bwrap", **scenario: Any) -> Any:
    request = {
        "model": "speech/whisper@1",
        "dataset": "tones@1",
        "generation": {"max_new_tokens": NEW},
        "scenario": scenario,
    }
    run = registry.lock(request)[0].run(runner="local", sandbox=sandbox)
    assert run.status == "succeeded", run.error
    return run


def _edits(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance, the textbook table."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def _words(text: str) -> list[str]:
    """jiwer 4's wer_default, written out: whitespace runs to one space, strip, split on " "."""
    return [w for w in re.sub(r"\s\s+", " ", text).strip().split(" ") if w]


# (decoded, references, why): each a way pinbench's WER/CER once differed from jiwer's.
HOSTILE = [
    ([" Hello world."], ["Hello world."], "Whisper's answers start with a space"),
    (["Hello world. "], ["  Hello world."], "trailing and leading whitespace on both"),
    (["a\tb"], ["a b"], "a lone tab is part of a word for jiwer"),
    (["a\u00a0b"], ["a b"], "a lone no-break space likewise"),
    (["hello  world "], ["hello world"], "a run of spaces is one"),
    (["a \t b", "x\n\ny"], ["a b", "x y"], "a run of mixed whitespace is one space"),
    (["", "cat"], ["the cat", "a cat sat"], "an empty answer"),
    (["\u00a0cat\u2003"], ["cat"], "unicode whitespace is stripped"),
]


@pytest.mark.parametrize(("decoded", "references", "why"), HOSTILE)
def test_speech_wer_and_cer_are_jiwers_on_hostile_texts(
    decoded: list[str], references: list[str], why: str
) -> None:
    import jiwer

    from pinbench.tasks.speech.metrics import speech_metrics

    got = speech_metrics(decoded, references).metrics
    assert got["wer"] == pytest.approx(jiwer.wer(references, decoded)), why
    assert got["cer"] == pytest.approx(jiwer.cer(references, decoded)), why
    pairs = list(zip(decoded, references, strict=True))
    words = sum(_edits(_words(h), _words(r)) for h, r in pairs)
    chars = sum(_edits(h.strip(), r.strip()) for h, r in pairs)
    assert got["wer"] == pytest.approx(words / sum(len(_words(r)) for r in references)), why
    assert got["cer"] == pytest.approx(chars / sum(len(r.strip()) for r in references)), why
    assert got["exact_match"] == sum(h.strip() == r.strip() for h, r in pairs) / len(pairs)


@pytest.mark.parametrize(
    ("references", "metric"),
    [
        (["", ""], "cer"),  # no character: jiwer returns the insertion count, not a rate
        ([" \t", "\u00a0"], "cer"),  # whitespace only is no character once stripped
        ([], "exact_match"),  # nothing scored
    ],
)
def test_speech_metrics_with_no_reference_text_are_undefined(
    references: list[str], metric: str
) -> None:
    from pinbench.tasks.speech.metrics import speech_metrics
    from pinbench.worker.undefined import UndefinedMetric

    with pytest.raises(UndefinedMetric) as raised:
        speech_metrics(["a"] * len(references), references)
    assert raised.value.metric == metric


def test_whisper_answers_are_transformers_own_generate_scored_by_jiwer(
    whisper: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    import jiwer
    import torch
    from tokenizers import Tokenizer
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration

    registry, folder, root = whisper
    run = _run(registry, mode="accuracy")
    run.export_outputs(tmp_path / "ids.npy")
    ids = np.load(tmp_path / "ids.npy", allow_pickle=False)
    assert ids.shape == (len(TONES), NEW)

    extractor = WhisperFeatureExtractor.from_pretrained(folder)
    model = WhisperForConditionalGeneration.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    answers = []
    for i, row in enumerate(ids):
        with wave.open(str(root / "clips" / f"{i}.wav")) as clip:
            pcm = np.frombuffer(clip.readframes(clip.getnframes()), "<i2")
        features = extractor(pcm / 32768.0, sampling_rate=RATE, return_tensors="pt")
        with torch.inference_mode():
            out = model.generate(features.input_features, max_new_tokens=NEW, do_sample=False)
        assert row[row >= 0].tolist() == out[0].tolist()  # Whisper's leaves its start out
        answers.append(tokenizer.decode(out[0].tolist(), skip_special_tokens=True))
    assert len(set(answers)) > 1  # the sounds make a difference

    metrics = run.metrics
    assert metrics["wer"] == pytest.approx(jiwer.wer(TRANSCRIPTS, answers))
    assert metrics["cer"] == pytest.approx(jiwer.cer(TRANSCRIPTS, answers))
    words = sum(_edits(_words(a), _words(r)) for a, r in zip(answers, TRANSCRIPTS, strict=True))
    chars = sum(_edits(a.strip(), r.strip()) for a, r in zip(answers, TRANSCRIPTS, strict=True))
    assert metrics["wer"] == pytest.approx(words / sum(len(_words(r)) for r in TRANSCRIPTS))
    assert metrics["cer"] == pytest.approx(chars / sum(len(r.strip()) for r in TRANSCRIPTS))
    assert metrics["wer"] > 0 and metrics["references_count"] == len(TRANSCRIPTS)
    assert "perplexity" not in metrics
    assert metrics["tokens_count"] == len(TONES) * NEW
    assert metrics["framework_ttft_mean_ns"] > 0 and metrics["framework_tpot_mean_ns"] > 0
    assert "rouge_variant" not in run.view()["details"]["generation"]
    shown = run.view()["details"]["generation"]["samples"]
    assert shown[0] == {"audio": "clips/0.wav", "answer": answers[0], "reference": TRANSCRIPTS[0]}

    performance = _run(registry, mode="performance", min_query_count=8, min_duration_ms=0)
    for key in ("ttft_p90_ns", "tpot_p90_ns"):
        assert performance.metrics[key] > 0, key


def test_the_transcripts_stay_with_the_host_which_scores_the_answers(
    whisper: tuple[Any, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 64: the evaluator is handed the clips without the transcripts and returns its
    answers' texts; WER, CER and exact match are the host's, against the transcripts it reads,
    whatever the evaluator claims (in this process, ``--sandbox none``, to be replaced)."""
    import jiwer

    from pinbench.worker.generation import run as generation

    honest, handed = generation.generate_run, []

    def evaluate(job: Any, evidence: Any, say: Any) -> None:
        handed.append(sorted(job.data_paths))
        honest(job, evidence, say)
        evidence.metrics.update(wer=0.0, cer=0.0, exact_match=1.0, rouge1=1.0)

    monkeypatch.setattr(generation, "generate_run", evaluate)
    run = _run(whisper[0], "none", mode="accuracy")
    assert handed == [[f"clips/{i}.wav" for i in range(len(TONES))]]
    shown = run.view()["details"]["generation"]["samples"]
    answers = [s["answer"] for s in shown]
    assert [s["reference"] for s in shown] == TRANSCRIPTS
    assert run.metrics["wer"] == pytest.approx(jiwer.wer(TRANSCRIPTS, answers))
    assert run.metrics["cer"] == pytest.approx(jiwer.cer(TRANSCRIPTS, answers))
    assert run.metrics["wer"] > 0 and run.metrics["exact_match"] < 1 and "rouge1" not in run.metrics


def test_a_sample_longer_than_the_window_and_a_batch_are_refused(
    whisper: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    """The extractor would cut a sample past its one-second window silently; a batch of
    samples is not what the speech loop answers. Each is refused naming what is wrong."""
    from tests.helpers import dump, sha

    registry = whisper[0]
    request: dict[str, Any] = {
        "model": "speech/whisper@1",
        "dataset": "tones@1",
        "generation": {"max_new_tokens": NEW},
        "batch_size": 2,
        "scenario": {"name": "Offline", "mode": "accuracy"},
    }
    with pytest.raises(PinbenchError, match="speech-to-text answers one sample at a time"):
        registry.lock(request)[0].run(runner="local")
    (tmp_path / "clips").mkdir()
    clip = write_wav(tmp_path / "clips" / "long.wav", np.zeros(RATE * 2))
    (tmp_path / "t.txt").write_text("w1\n")
    entries = [
        {
            "path": p,
            "sha256": sha((tmp_path / p).read_bytes()),
            "size": (tmp_path / p).stat().st_size,
        }
        for p in ("clips/long.wav", "t.txt")
    ]
    assert clip.exists()
    registry.publish(
        dump(
            tmp_path / "dataset.yaml",
            {
                "kind": "dataset",
                "name": "long-tone",
                "version": "1.0.0",
                "task": "speech-recognition",
                "data": {"format": "audio", "path": "clips"},
                "labels": {"format": "transcript-txt", "path": "t.txt"},
                "files": entries,
            },
        )
    )
    request.update(dataset="long-tone@1", batch_size=1, scenario={"mode": "accuracy"})
    with pytest.raises(PinbenchError, match=r"clips/long.wav is 2.00 s: .* reads 1 s windows"):
        registry.lock(request)[0].run(runner="local")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"dither": 1.0}, "adds random noise"),
        ({"n_fft": 2**40}, "`n_fft: 1099511627776` must be an integer from 2 to 16384"),
        ({"chunk_length": 10**6}, "`chunk_length: 1000000` must be an integer"),
        ({"feature_size": 80}, "`feature_size: 80` mel channels, but config.json's num_mel_bins"),
        ({"nb_max_frames": 99}, "`nb_max_frames: 99` is not n_samples // hop_length"),
        ({"feature_extractor_type": "SeamlessM4TFeatureExtractor"}, "WhisperFeatureExtractor only"),
        ({"chunk_length": 2, "n_samples": 32000, "nb_max_frames": 200}, "2 x max_source_positions"),
        (None, "needs its preprocessor_config.json"),
    ],
)
def test_a_feature_extractor_pinbench_cannot_compute_with_is_refused(
    whisper: tuple[Any, Path, Path], tmp_path: Path, change: dict[str, Any] | None, message: str
) -> None:
    folder = shutil.copytree(whisper[1], tmp_path / "whisper")
    settings = folder / "preprocessor_config.json"
    if change is None:
        settings.unlink()
    else:
        settings.write_text(json.dumps({**json.loads(settings.read_text()), **change}))
    with pytest.raises(HfFolderRefused, match=_escaped(message)):
        describe({p.name: p for p in folder.iterdir()})


WHISPER_V3: dict[
    str, Any
] = {  # openai/whisper-large-v3's preprocessor_config.json, and its config.json
    "feature_extractor_type": "WhisperFeatureExtractor",
    "sampling_rate": 16000,
    "n_fft": 400,
    "hop_length": 160,
    "chunk_length": 30,
    "feature_size": 128,
    "n_samples": 480000,
    "nb_max_frames": 3000,
    "dither": 0.0,
}


def _sized(rate: int, seconds: int, hop: int, **more: int) -> dict[str, int]:
    """Settings consistent with each other: n_samples and nb_max_frames follow."""
    return {
        "sampling_rate": rate,
        "chunk_length": seconds,
        "hop_length": hop,
        "n_samples": rate * seconds,
        "nb_max_frames": rate * seconds // hop,
        **more,
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (  # the review's: each number within its bound, 39 GB for a one-second clip
            {
                **_sized(1000, 600, 1, n_fft=16384, feature_size=1024),
                "n_samples": 600000,
                "nb_max_frames": 600000,
            },
            "`hop_length: 1` is under a quarter of n_fft (16384)",
        ),
        (
            _sized(2000, 350, 100, n_fft=400, feature_size=1024),
            "`feature_size`: 1024 mel channels x 7000 frames",
        ),
        (
            _sized(192000, 40, 4096, n_fft=16384),
            "`n_fft`: 8193 STFT bins (n_fft // 2 + 1) x 1875 frames",
        ),
        (_sized(192000, 600, 100), "`n_samples: 115200000` must be an integer from 1 to 7680000"),
        (_sized(16000, 30, 99), "`hop_length: 99` is under a quarter of n_fft (400)"),
    ],
)
def test_feature_settings_are_bounded_as_products_per_sample(
    change: dict[str, int], message: str
) -> None:
    """Every clip is padded to n_samples and made into mel x frames features through an STFT of
    bins x frames: each product is bounded at 16 x Whisper large-v3's, checked as data."""
    from pinbench.artifacts.hf_speech import FeaturesRefused, check_features

    pre = {**WHISPER_V3, **change}
    config = {
        "num_mel_bins": pre["feature_size"],
        "max_source_positions": pre["nb_max_frames"] // 2,
    }
    with pytest.raises(FeaturesRefused, match=_escaped(message)):
        check_features(pre, config)


def test_whisper_and_sixteen_times_whisper_are_computed() -> None:
    from pinbench.artifacts.hf_speech import check_features

    check_features(WHISPER_V3, {"num_mel_bins": 128, "max_source_positions": 1500})
    largest = {**WHISPER_V3, **_sized(16000, 480, 160)}  # 7,680,000 samples, 48,000 frames
    check_features(largest, {"num_mel_bins": 128, "max_source_positions": 24000})


def test_a_dataset_whose_features_exceed_the_budget_is_refused_before_any_is_computed() -> None:
    """Every sample's features are kept for the run: 2,797 samples of Whisper large-v3's are
    over 4 GiB, refused before a file is read or the extractor called."""
    from types import SimpleNamespace

    from pinbench.worker.datasets import SampleFile
    from pinbench.worker.generation.speech import FeaturesTooLarge, audio_features

    def never(*_: object, **__: object) -> None:
        raise AssertionError("the extractor ran")

    extractor = SimpleNamespace(
        sampling_rate=16000,
        feature_size=128,
        nb_max_frames=3000,
        n_samples=480000,
        chunk_length=30,
        __call__=never,
    )
    missing = Path("/nonexistent/clip.wav")
    fits = 4 * 2**30 // (128 * 3000 * 4)
    assert fits == 2796
    files = [SampleFile(path=f"clips/{i}.wav", local=missing) for i in range(fits + 1)]
    with pytest.raises(FeaturesTooLarge, match=r"2797 audio samples .* at most 2796 samples"):
        audio_features(files, extractor, lambda: None)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num_mel_bins", 80, "encoder.conv1.weight has 16 (input channels)"),
        ("max_source_positions", 1500, "encoder.embed_positions.weight has 50 (rows)"),
        ("max_target_positions", 448, "decoder.embed_positions.weight has 32 (rows)"),
    ],
)
def test_a_whisper_config_that_does_not_describe_its_weights_is_refused(
    whisper: tuple[Any, Path, Path], tmp_path: Path, key: str, value: int, message: str
) -> None:
    folder = shutil.copytree(whisper[1], tmp_path / "whisper")
    config = json.loads((folder / "config.json").read_text())
    config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(HfFolderRefused, match=_escaped(message)):
        describe({p.name: p for p in folder.iterdir()})


@pytest.fixture(scope="module")
def multilingual(whisper: tuple[Any, Path, Path]) -> tuple[Any, Path, Path]:
    """The registry with a second Whisper: language, task and timestamp tokens, and a
    generation_config.json shaped like openai/whisper-tiny's (``whisper_generation_config``)."""
    from pinbench.authoring.hf_model import hf_manifest
    from tests.helpers import dump

    registry, _, root = whisper
    folder = whisper_folder(root / "whisper-multi", seed=1, multilingual=True)
    data, _ = hf_manifest(
        folder,
        base=root,
        name="speech/whisper-multi",
        version="1.0.0",
        framework_range=None,
        steps=None,
        classification=[],
    )
    registry.publish(dump(root / "whisper-multi.yaml", data))
    return registry, folder, root


def _opened(folder: Path) -> Any:
    from pinbench.worker.generation.torch_generator import TorchGenerator
    from pinbench.worker.predictors.config import ModelFiles

    generator = TorchGenerator()
    generator.open(ModelFiles({p.name: p for p in folder.iterdir()}, "hf-folder", None), None)
    return generator


def _features(folder: Path, root: Path) -> list[Any]:
    from pinbench.worker.datasets import SampleFile
    from pinbench.worker.generation.speech import audio_features, extractor_of

    clips = [SampleFile(f"clips/{i}.wav", root / "clips" / f"{i}.wav") for i in range(len(TONES))]
    extractor = extractor_of(folder / "preprocessor_config.json", "p")
    return audio_features(clips, extractor, lambda: None)


def _generated(answer: list[int]) -> list[int]:
    """An answer without its end token and what follows it: ``generate`` drops the end token
    and pads a batch's shorter rows with it (``pad_token_id`` is the end token's)."""
    return answer[: answer.index(EOS)] if EOS in answer else answer


EOS = 51
TRANSCRIBE, TRANSLATE, NO_STAMPS = SPECIAL["<|transcribe|>"], 55, SPECIAL["<|notimestamps|>"]
EN, DE, FR = (SPECIAL[f"<|{c}|>"] for c in ("en", "de", "fr"))

# (language, task, the prompt generate builds, compared with generate's answers, why)
PROMPTS: list[tuple[str | None, Any, tuple[int | None, ...], bool, str]] = [
    (None, None, (50, None, TRANSCRIBE, NO_STAMPS), True, "forced_decoder_ids; detection"),
    ("en", "transcribe", (50, EN, TRANSCRIBE, NO_STAMPS), True, "a code and a task"),
    ("de", "translate", (50, DE, TRANSLATE, NO_STAMPS), True, "the other language and task"),
    (None, "translate", (50, None, TRANSLATE, NO_STAMPS), True, "a task alone: detection"),
    ("French", None, (50, FR, TRANSCRIBE, NO_STAMPS), False, "a name, any case; transcribe"),
    ("<|de|>", None, (50, DE, TRANSCRIBE, NO_STAMPS), False, "the token itself"),
]
"""Each generate call costs about half a second on two busy cores: four cases are generated
(two languages, both tasks, detection), two only built."""


def test_whisper_prompts_are_generates_for_each_language_and_task(
    multilingual: tuple[Any, Path, Path],
) -> None:
    """The decoder's prompt (start, language, task, no timestamps) built as Whisper's
    ``generate(language=..., task=...)`` builds it from an openai-shaped generation config: the
    answers (the tokens after the prompt) are ``generate``'s, sample by sample, and the
    language and task change them."""
    import torch
    from transformers import WhisperForConditionalGeneration

    from pinbench.registry.generation import GenerationSpec

    _, folder, root = multilingual
    features = _features(folder, root)[1:3]  # two sounds the languages answer differently
    batch = torch.from_numpy(np.concatenate(features))  # one generate call per case
    model = WhisperForConditionalGeneration.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    generator = _opened(folder)
    answers: dict[tuple[str | None, str | None], list[list[int]]] = {}
    try:
        for language, task, prompt, generated, why in PROMPTS:
            spec = GenerationSpec(max_new_tokens=NEW, language=language, task=task)
            assert generator.speech_prompt(spec) == prompt, why
            if not generated:
                continue
            asked = {k: v for k, v in (("language", language), ("task", task)) if v is not None}
            with torch.inference_mode():
                out = model.generate(batch, max_new_tokens=NEW, **asked).tolist()
            for i, f in enumerate(features):
                mine = generator.generate_features(f, spec, i, lambda: None)
                assert _generated(mine) == _generated(out[i]), (why, i)
                answers.setdefault((language, task), []).append(mine)
    finally:
        generator.close()
    assert answers[("en", "transcribe")] != answers[("de", "translate")]


DROP = object()
"""A setting the case removes from the generation config."""


@pytest.mark.parametrize(
    ("change", "language", "task", "prompt"),
    [  # each a checkpoint shape other than openai/whisper-*'s
        (  # a fine-tuned checkpoint: its forced_decoder_ids name the language
            {"forced_decoder_ids": [[1, DE], [2, TRANSLATE], [3, NO_STAMPS]]},
            *(None, None, (50, DE, TRANSLATE, NO_STAMPS)),
        ),
        ({"language": "fr", "task": "translate"}, None, None, (50, FR, TRANSLATE, NO_STAMPS)),
        ({"language": "fr"}, "de", None, (50, DE, TRANSCRIBE, NO_STAMPS)),  # the request's wins
        (  # openai/whisper-*.en: English only, no tables, no-timestamps forced at 1
            {"is_multilingual": False, "lang_to_id": DROP, "task_to_id": DROP}
            | {"forced_decoder_ids": [[1, NO_STAMPS]]},
            *(None, None, (50, NO_STAMPS)),
        ),
        (  # the language left open with no table to detect it from: generate drops it
            {"lang_to_id": DROP},
            *(None, None, (50, TRANSCRIBE, NO_STAMPS)),
        ),
        ({"no_timestamps_token_id": DROP}, "en", "transcribe", (50, EN, TRANSCRIBE)),
        ({"forced_decoder_ids": DROP, "lang_to_id": DROP}, None, None, (50, NO_STAMPS)),
    ],
)
def test_whisper_prompts_of_other_checkpoints_are_transformers_own(
    multilingual: tuple[Any, Path, Path],
    change: dict[str, Any],
    language: str | None,
    task: str | None,
    prompt: tuple[int, ...],
) -> None:
    """``whisper_prompt`` against transformers' own ``_retrieve_init_tokens`` (after
    ``_set_language_and_task``, as ``generate`` calls them) on the same generation config."""
    import torch
    from transformers import GenerationConfig, WhisperForConditionalGeneration
    from transformers.models.whisper.tokenization_whisper import TO_LANGUAGE_CODE

    from pinbench.worker.generation.whisper_prompt import whisper_prompt
    from tests.encdec_folders import whisper_generation_config

    settings = {**whisper_generation_config(), **change}
    config = GenerationConfig.from_dict({k: v for k, v in settings.items() if v is not DROP})
    mine = whisper_prompt(
        config.to_dict(), None, language=language, task=task, codes=TO_LANGUAGE_CODE
    )
    assert mine.tokens == prompt and not mine.languages
    model = WhisperForConditionalGeneration.from_pretrained(multilingual[1]).eval()  # type: ignore[no-untyped-call]
    model._set_return_timestamps(
        return_timestamps=None, is_shortform=True, generation_config=config
    )
    model._set_language_and_task(
        language=language, task=task, is_multilingual=None, generation_config=config
    )
    theirs = model._retrieve_init_tokens(
        torch.zeros((1, 16, 100)),
        batch_size=1,
        generation_config=config,
        config=model.config,
        num_segment_frames=100,
        kwargs={},
    )
    assert tuple(theirs[0].tolist()) == prompt


def test_a_whisper_run_with_a_language_is_generates_scored_by_jiwer(
    multilingual: tuple[Any, Path, Path],
) -> None:
    """The request's ``generation.language``/``task`` through lock and run: the ids are
    ``generate(language="de", task="translate")``'s, WER and CER jiwer's on their text, and
    the token counts (TTFT/TPOT's) hold the generated tokens alone, not the prompt."""
    import jiwer
    import torch
    from tokenizers import Tokenizer
    from transformers import WhisperForConditionalGeneration

    registry, folder, root = multilingual
    request = {
        "model": "speech/whisper-multi@1",
        "dataset": "tones@1",
        "generation": {"max_new_tokens": NEW, "language": "de", "task": "translate"},
        "scenario": {"mode": "accuracy"},
    }
    lock = registry.lock(request)[0]
    assert lock.body.body.request.generation.language == "de"
    run = lock.run(runner="local")
    assert run.status == "succeeded", run.error
    run.export_outputs(root / "multi-ids.npy")
    ids = np.load(root / "multi-ids.npy", allow_pickle=False)
    model = WhisperForConditionalGeneration.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    batch = torch.from_numpy(np.concatenate(_features(folder, root)))
    with torch.inference_mode():
        outs = model.generate(batch, max_new_tokens=NEW, language="de", task="translate")
    answers, generated = [], 0
    for row, out in zip(ids, outs.tolist(), strict=True):
        mine = row[row >= 0].tolist()
        assert _generated(mine) == _generated(out)
        generated += len(mine)
        answers.append(tokenizer.decode(_generated(out), skip_special_tokens=True))
    metrics = run.metrics
    assert metrics["wer"] == pytest.approx(jiwer.wer(TRANSCRIPTS, answers))
    assert metrics["cer"] == pytest.approx(jiwer.cer(TRANSCRIPTS, answers))
    assert metrics["tokens_count"] == generated  # the 4-token prompt is not counted
    details = run.view()["details"]["generation"]
    assert details["decoder_prompt"] == [50, DE, TRANSLATE, NO_STAMPS]


def _settings(folder: Path, tmp_path: Path, change: dict[str, Any]) -> Path:
    copy = shutil.copytree(folder, tmp_path / "whisper")
    settings = copy / "generation_config.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), **change}))
    return copy


@pytest.mark.parametrize(
    ("change", "generation", "message"),
    [
        ({}, {"language": "es"}, "'es': <|es|> is not in the model's `lang_to_id` (3 languages"),
        ({}, {"language": "klingon"}, "'klingon' is not a language Whisper names"),
        ({}, {"max_new_tokens": 29}, "after Whisper's prompt of 4 tokens passes the decoder's"),
        ({"num_beams": 4}, {}, "`num_beams`: 4 changes how transformers' Whisper generate"),
        ({"no_speech_threshold": 0.6}, {}, "`no_speech_threshold`: 0.6 changes how"),
        ({"return_timestamps": True}, {}, "`return_timestamps`: timestamp decoding"),
        ({"is_multilingual": False}, {"language": "en"}, "the model is English-only"),
        ({"forced_decoder_ids": [[2, TRANSCRIBE]]}, {}, "`forced_decoder_ids`: must be"),
        ({"lang_to_id": {"<|en|>": 10_000}}, {}, "names token 10000, past the output embedding"),
    ],
)
def test_a_whisper_setting_or_language_pinbench_would_not_honour_is_refused(
    multilingual: tuple[Any, Path, Path],
    tmp_path: Path,
    change: dict[str, Any],
    generation: dict[str, Any],
    message: str,
) -> None:
    """Each refused before anything is generated, naming the setting or the language."""
    from pinbench.registry.generation import GenerationSpec

    folder = _settings(multilingual[1], tmp_path, change)
    spec = GenerationSpec(**{"max_new_tokens": NEW, **generation})
    with pytest.raises(PinbenchError, match=_escaped(message)):
        generator = _opened(folder)
        try:
            generator.speech_prompt(spec)
        finally:
            generator.close()


def test_language_and_task_are_left_out_of_lockfiles_while_unset_and_refused_on_text(
    whisper: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    """Lockfiles made before the prompt was honoured keep their digests; a language on a text
    dataset is refused (it is a Whisper prompt's)."""
    from pinbench.registry.request import parse_request, request_data
    from tests.helpers import dump, sha

    base = {"model": "speech/whisper@1", "dataset": "tones@1"}
    plain = request_data(parse_request({**base, "generation": {"max_new_tokens": 2}}))
    assert plain["generation"].keys() >= {"max_new_tokens", "stop"}
    assert not plain["generation"].keys() & {"language", "task"}
    with pytest.raises(PinbenchError, match=r"generation\.task"):
        parse_request({**base, "generation": {"max_new_tokens": 2, "task": "summarize"}})

    registry = whisper[0]
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "w1", "reference": "w2"}\n')
    entry = {
        "path": "prompts.jsonl",
        "sha256": sha((tmp_path / "prompts.jsonl").read_bytes()),
        "size": (tmp_path / "prompts.jsonl").stat().st_size,
    }
    registry.publish(
        dump(
            tmp_path / "dataset.yaml",
            {
                "kind": "dataset",
                "name": "words",
                "version": "1.0.0",
                "task": "text-generation",
                "data": {"format": "prompts-jsonl", "path": "prompts.jsonl"},
                "labels": {"format": "prompt-references"},
                "files": [entry],
            },
        )
    )
    request = {
        **base,
        "dataset": "words@1",
        "generation": {"max_new_tokens": 2, "language": "en"},
        "scenario": {"mode": "accuracy"},
    }
    with pytest.raises(
        PinbenchError, match=_escaped("generation.language and generation.task are a")
    ):
        registry.lock(request)[0].run(runner="local")


def test_suppressed_tokens_are_never_chosen_as_generate_suppresses_them(
    whisper: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    """``suppress_tokens`` (every step) and ``begin_suppress_tokens`` (the first) of the
    generation config, as WhisperConfig's defaults set them: the answers are still ``generate``'s,
    and differ from the unsuppressed ones; an id past the vocabulary is refused naming it."""
    import torch
    from transformers import WhisperForConditionalGeneration

    from pinbench.registry.generation import GenerationSpec
    from pinbench.worker.datasets import SampleFile
    from pinbench.worker.generation.speech import audio_features, extractor_of
    from pinbench.worker.generation.torch_generator import TorchGenerator
    from pinbench.worker.predictors.base import ModelLoadError
    from pinbench.worker.predictors.config import ModelFiles

    _, source, root = whisper
    folder = shutil.copytree(source, tmp_path / "whisper")
    settings = folder / "generation_config.json"
    plain = json.loads(settings.read_text())
    clips = [SampleFile(f"clips/{i}.wav", root / "clips" / f"{i}.wav") for i in range(len(TONES))]
    spec = GenerationSpec(max_new_tokens=NEW)
    features = audio_features(
        clips, extractor_of(folder / "preprocessor_config.json", "p"), lambda: None
    )
    before = WhisperForConditionalGeneration.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    with torch.inference_mode():
        unsuppressed = [
            before.generate(torch.from_numpy(f), max_new_tokens=NEW)[0] for f in features
        ]
    common = [int(a[0]) for a in unsuppressed] + [int(a[1]) for a in unsuppressed]
    settings.write_text(
        json.dumps({**plain, "suppress_tokens": common[4:6], "begin_suppress_tokens": common[:2]})
    )
    model = WhisperForConditionalGeneration.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    generator = TorchGenerator()
    generator.open(ModelFiles({p.name: p for p in folder.iterdir()}, "hf-folder", None), None)
    answers = []
    try:
        for i, f in enumerate(features):
            mine = generator.generate_features(f, spec, i, lambda: None)
            with torch.inference_mode():
                theirs = model.generate(torch.from_numpy(f), max_new_tokens=NEW)[0].tolist()
            assert mine == theirs, f"sample {i}"
            assert mine[0] not in common[:2] and not set(mine) & set(common[4:6])
            answers.append(mine)
    finally:
        generator.close()
    assert answers[0] != unsuppressed[0].tolist()  # its first token was suppressed
    settings.write_text(json.dumps({**plain, "suppress_tokens": [10_000]}))
    with pytest.raises(
        ModelLoadError, match=r"`suppress_tokens`: names 10000, past the vocabulary"
    ):
        TorchGenerator().open(
            ModelFiles({p.name: p for p in folder.iterdir()}, "hf-folder", None), None
        )


def test_whisper_on_a_text_dataset_is_refused(
    whisper: tuple[Any, Path, Path],
) -> None:
    """The folder reads audio: a prompts dataset is refused naming the dataset it needs."""
    from pinbench.registry.generation import GenerationSpec
    from pinbench.worker.generation.torch_generator import TorchGenerator
    from pinbench.worker.predictors.config import ModelFiles

    folder = whisper[1]
    generator = TorchGenerator()
    generator.open(ModelFiles({p.name: p for p in folder.iterdir()}, "hf-folder", None), None)
    try:
        with pytest.raises(PinbenchError, match="run it on a speech-recognition dataset"):
            generator.encode_prompts(["w1 w2"], GenerationSpec(max_new_tokens=2), lambda: None)
    finally:
        generator.close()


def _escaped(message: str) -> str:
    import re

    return re.escape(message)
