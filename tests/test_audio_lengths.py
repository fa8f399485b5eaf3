"""Clips at their own length, as the field feeds them (issue 86, item 1): a Hugging Face audio
head's ``manifest model`` writes ``input_values`` with no fixed length (each clip through the
extractor alone, normalised over its own samples), a batch of several padded at the end with
the extractor's ``padding_value`` (``pad_batch``), and ``attention_mask`` where transformers'
pipeline passes one (``mask_of``). Each head's run equals transformers on every clip alone
(batch size 1) and on one padded batch of all of them: the audio-classification and speech-
recognition pipelines, and for an x-vector head (no pipeline) the extractor and the model as a
pipeline would batch them. Folders are built here: tiny configs, seeded random weights."""

from __future__ import annotations

import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.authoring.model import model_manifest
from tests.helpers import dump, sha

RATE = 16_000
SECONDS = (1.0, 1.5, 2.3, 0.7)
"""Four clips of different lengths; the batch of all four is padded to 2.3 s."""
VOCAB = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4} | {
    c: 5 + i for i, c in enumerate("ABCDEHILNORST")
}
TINY = {
    "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "intermediate_size": 24, "conv_dim": (8, 8), "conv_stride": (5, 4), "conv_kernel": (10, 8),
    "num_conv_pos_embeddings": 8, "num_conv_pos_embedding_groups": 2, "num_labels": 3,
    "classifier_proj_size": 8, "tdnn_dim": (8, 8), "tdnn_kernel": (3, 1),
    "tdnn_dilation": (1, 1), "xvector_output_dim": 8, "vocab_size": len(VOCAB),
    "pad_token_id": 0,
}  # fmt: skip
HEADS = {
    # architecture: (config, extractor's return_attention_mask, feature encoder's norm)
    "HubertForSequenceClassification": ("HubertConfig", False, "group"),
    "Wav2Vec2ForCTC": ("Wav2Vec2Config", False, "group"),
    "UniSpeechSatForXVector": ("UniSpeechSatConfig", True, "layer"),
}


def _folder(root: Path, arch: str) -> Path:
    import json

    import torch
    import transformers
    from transformers import Wav2Vec2CTCTokenizer, Wav2Vec2FeatureExtractor

    config_name, masked, norm = HEADS[arch]
    folder = root / arch
    folder.mkdir(parents=True)
    torch.manual_seed(86)
    config = getattr(transformers, config_name)(**TINY, feat_extract_norm=norm)
    getattr(transformers, arch)(config).eval().save_pretrained(folder)
    Wav2Vec2FeatureExtractor(  # type: ignore[no-untyped-call]
        feature_size=1, sampling_rate=RATE, padding_value=0.0, do_normalize=True,
        return_attention_mask=masked,
    ).save_pretrained(folder)  # fmt: skip
    if arch.endswith("ForCTC"):
        (root / "vocab.json").write_text(json.dumps(VOCAB))
        Wav2Vec2CTCTokenizer(  # type: ignore[no-untyped-call]
            str(root / "vocab.json"), word_delimiter_token="|"
        ).save_pretrained(folder)
    return folder


def _clips(folder: Path) -> list[np.ndarray]:
    """WAV files of tones and noise, 16-bit, and their samples as decode_audio reads them."""
    rng = np.random.default_rng(2026)
    out = []
    for i, seconds in enumerate(SECONDS):
        t = np.arange(int(RATE * seconds)) / RATE
        x = 0.3 * np.sin(2 * np.pi * (180 + 60 * i) * t) + 0.05 * rng.standard_normal(t.size)
        pcm = np.clip(np.round(x * 32767), -32768, 32767).astype("<i2")
        path = folder / f"c{i % 3}" / f"{i}.wav"  # a folder per class: imagefolder labels
        path.parent.mkdir(parents=True, exist_ok=True)
        with wave.open(str(path), "wb") as f:
            f.setnchannels(1)
            f.setsampwidth(2)
            f.setframerate(RATE)
            f.writeframes(pcm.tobytes())
        out.append(pcm.astype(np.float32) / 32768.0)
    return out


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path, list[Any]]]:
    """A registry with the transformers framework, the three heads as `manifest model` wrote
    them, and the four clips as a classification, a text-recognition and a speaker dataset."""
    import pinbench
    from pinbench.catalog import frameworks

    root = tmp_path_factory.mktemp("lengths")
    registry = pinbench.Registry(root / "home")
    registry.init()
    registry.publish(frameworks.write(root, "transformers"))
    for arch in HEADS:
        folder = _folder(root / "models", arch)
        manifest = model_manifest([folder], base=root / "models").data
        manifest["name"], manifest["version"] = f"speech/{arch.lower()}", "1.0.0"
        registry.publish(dump(root / "models" / f"{arch}.yaml", manifest))
    data = root / "data"
    waves = _clips(data / "clips")
    clips = [f"c{i % 3}/{i}.wav" for i in range(len(SECONDS))]
    names = [f"clips/{c}" for c in clips]
    (data / "texts.csv").write_text("file,text\n" + "".join(f"{c},A CAT\n" for c in clips))
    trials = [(1, 0, 1), (0, 0, 2), (1, 2, 3), (0, 1, 3)]
    (data / "trials.txt").write_text("".join(f"{t} {clips[a]} {clips[b]}\n" for t, a, b in trials))
    for name, task, labels in (
        ("clips", "classification", {"format": "imagefolder"}),
        ("spoken", "text-recognition", {"format": "text-csv", "path": "texts.csv"}),
        ("voices", "speaker-verification", {"format": "speaker-trials", "path": "trials.txt"}),
    ):
        extra = [labels["path"]] if "path" in labels else []
        files = [{"path": n, "sha256": sha((data / n).read_bytes())} for n in [*names, *extra]]
        document = {
            "kind": "dataset", "name": name, "version": "1.0.0", "task": task,
            "data": {"format": "audio", "path": "clips"}, "labels": labels, "files": files,
        }  # fmt: skip
        registry.publish(dump(data / f"{name}.yaml", document))
    order = sorted(range(len(clips)), key=clips.__getitem__)  # a dataset's samples: by path
    yield registry, root, [waves[i] for i in order]


def _run(registry: Any, arch: str, dataset: str, batch_size: int) -> Any:
    """An accuracy run in Offline, where LoadGen issues every sample at once and the runner
    cuts batches of ``batch_size`` (SingleStream issues one sample a query)."""
    lock = registry.lock(
        {"model": f"speech/{arch.lower()}@1", "dataset": f"{dataset}@1",
         "scenario": {"mode": "accuracy", "name": "Offline"}, "batch_size": batch_size}
    )[0]  # fmt: skip
    run = lock.run(runner="local")
    assert run.status == "succeeded", run.info.get("error")
    return run


def _outputs(run: Any, out: Path) -> np.ndarray:
    run.export_outputs(out)
    got: np.ndarray = np.load(out, allow_pickle=False)
    return got


# ---------------------------------------------------------------- what manifest model writes


def test_an_audio_head_takes_each_clip_at_its_own_length_with_the_pipelines_mask(
    home: tuple[Any, Path, list[Any]],
) -> None:
    _, root, _ = home
    for arch, (_, masked, _) in HEADS.items():
        data = model_manifest([root / "models" / arch], base=root / "models").data
        values, *mask = data["inputs"]
        assert values == {
            "name": "input_values", "element_type": "float32",
            "steps": [{"decode_audio": {"channel": "mix", "rate": RATE}},
                      {"zero_mean_unit_var": {}}],
            "pad_batch": {"value": 0.0},
        }  # fmt: skip
        asks = masked or arch.endswith("ForCTC")  # the speech-recognition pipeline always asks
        want = [{"name": "attention_mask", "element_type": "int32", "mask_of": "input_values"}]
        assert mask == (want if asks else [])


# ---------------------------------------------------------------- equal to transformers


def _pipeline(task: str, folder: Path) -> Any:
    from transformers import pipeline

    made: Any = pipeline(  # type: ignore[call-overload]
        task, model=str(folder), feature_extractor=str(folder), device="cpu"
    )
    return made


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    out: np.ndarray = e / e.sum(-1, keepdims=True)
    return out


@pytest.mark.parametrize("batch_size", [1, 4])
def test_an_audio_classifier_answers_as_the_audio_classification_pipeline(
    home: tuple[Any, Path, list[Any]], tmp_path: Path, batch_size: int
) -> None:
    """Batch 1: the pipeline on each clip alone; batch 4: the pipeline batching all four
    (padded to the longest, no mask: this extractor returns none, so the model sees the
    padding, as it does in the pipeline)."""
    registry, root, waves = home
    arch = "HubertForSequenceClassification"
    run = _run(registry, arch, "clips", batch_size)
    logits = _outputs(run, tmp_path / "o.npy")
    pipe = _pipeline("audio-classification", root / "models" / arch)
    got = pipe(waves, top_k=None, batch_size=batch_size)
    labels = pipe.model.config.id2label
    theirs = np.array([[{d["label"]: d["score"] for d in one}[labels[c]] for c in range(3)]
                       for one in got])  # fmt: skip
    np.testing.assert_allclose(_softmax(logits.astype(np.float64)), theirs, rtol=0, atol=2e-6)
    if batch_size == 4:  # the padding changed the answers: a fixed length would have too
        alone = np.array([[{d["label"]: d["score"] for d in one}[labels[c]] for c in range(3)]
                          for one in pipe(waves, top_k=None, batch_size=1)])  # fmt: skip
        assert not np.allclose(theirs[:3], alone[:3], atol=1e-4)


@pytest.mark.parametrize("batch_size", [1, 4])
def test_a_ctc_head_transcribes_as_the_speech_recognition_pipeline(
    home: tuple[Any, Path, list[Any]], batch_size: int
) -> None:
    registry, root, waves = home
    arch = "Wav2Vec2ForCTC"
    run = _run(registry, arch, "spoken", batch_size)
    pipe = _pipeline("automatic-speech-recognition", root / "models" / arch)
    theirs = [t["text"] for t in pipe(waves, batch_size=batch_size)]
    recorded = [row["text"] for row in run.info["details"]["samples"]]
    assert recorded == theirs


@pytest.mark.parametrize("batch_size", [1, 4])
def test_an_xvector_head_embeds_as_the_extractor_and_model_batch_it(
    home: tuple[Any, Path, list[Any]], tmp_path: Path, batch_size: int
) -> None:
    """No pipeline reads x-vectors: the reference is each clip through the extractor alone
    (with its mask) and the model, batched as a pipeline's collate pads them."""
    import torch
    from transformers import AutoFeatureExtractor, UniSpeechSatForXVector
    from transformers.pipelines.base import pad_collate_fn

    registry, root, waves = home
    arch = "UniSpeechSatForXVector"
    run = _run(registry, arch, "voices", batch_size)
    embeddings = _outputs(run, tmp_path / "o.npy")
    folder = root / "models" / arch
    extractor = AutoFeatureExtractor.from_pretrained(folder)  # type: ignore[no-untyped-call]
    model = UniSpeechSatForXVector.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    items = [extractor(w, sampling_rate=RATE, return_tensors="pt") for w in waves]
    collate = pad_collate_fn(None, extractor)  # type: ignore[no-untyped-call]
    batches = [items[i : i + batch_size] for i in range(0, len(items), batch_size)]
    with torch.inference_mode():
        theirs = torch.cat([model(**collate(b)).embeddings for b in batches]).numpy()
    np.testing.assert_allclose(embeddings, theirs, rtol=0, atol=1e-5)


# ---------------------------------------------------------------- padding, masks, refusals


def test_a_batch_is_padded_to_its_longest_and_masked_over_each_samples_own_length() -> None:
    from pinbench.worker.lengths import LengthMask
    from pinbench.worker.ragged import Ragged, RaggedBatch

    samples = [np.arange(1, n + 1, dtype=np.float32) for n in (3, 5, 2)]
    values = np.concatenate(samples)
    shapes = np.array([[3], [5], [2]], dtype=np.int64)
    names = ["a.wav", "b.wav", "c.wav"]
    padded = Ragged(values, shapes, input="x", names=names, pad=-0.5)
    np.testing.assert_array_equal(padded[[2, 0]], [[1, 2, -0.5], [1, 2, 3]])
    np.testing.assert_array_equal(padded[1:2], [[1, 2, 3, 4, 5]])  # alone: its own length
    mask = LengthMask(padded, "int32")
    assert mask[[2, 0]].tolist() == [[1, 1, 0], [1, 1, 1]] and mask[[2, 0]].dtype == np.int32
    assert mask[0:3].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert mask[1].tolist() == [[1, 1, 1, 1, 1]]  # an index is a batch of one
    same = LengthMask(np.zeros((2, 4), np.float32), "int64")  # clips of one length: all ones
    assert same[1].tolist() == [[1, 1, 1, 1]] and same.samples().shape == (2, 4)
    with pytest.raises(RaggedBatch, match=r"a.wav: \[3\]; b.wav: \[5\]\).*batch of 2.*pad_batch"):
        Ragged(values, shapes, input="x", names=names)[0:2]


AUDIO = [{"decode_audio": {"channel": "mix", "rate": RATE}}]
TEXT = [{"tokenize": {"tokenizer": "t.json", "max_length": 8, "padding": "longest"}}]


@pytest.mark.parametrize(
    ("inputs", "outputs", "message"),
    [
        ([{"name": "x", "steps": AUDIO}, {"name": "m", "element_type": "int32", "mask_of": "y"}],
         [], "input 'm': mask_of 'y' names no input of the model kept at its own length "
         "(waveforms without fit_length, texts tokenized with padding: longest; those: 'x')"),
        ([{"name": "x", "steps": [*AUDIO, {"fit_length": {"length": 9}}]},
          {"name": "m", "element_type": "int32", "mask_of": "x"}],
         [], "mask_of 'x' names no input of the model kept at its own length"),
        ([{"name": "x", "steps": AUDIO}, {"name": "m", "element_type": "int32", "mask_of": "x",
                                          "steps": [{"dtype": {"to": "int32"}}]}],
         [], "input 'm' is the mask of 'x': it is made at each call"),
        ([{"name": "x", "steps": AUDIO}, {"name": "m", "element_type": "float16", "mask_of": "x"}],
         [], "a mask's element_type is one of int32, int64, bool, float32, not float16"),
        ([{"name": "x", "steps": AUDIO}, {"name": "m", "element_type": "int32", "mask_of": "x"},
          {"name": "n", "element_type": "int64", "mask_of": "x"}],
         [], "inputs 'm' and 'n' are both the mask of 'x'"),
        ([{"name": "x"}, {"name": "c", "value": 3, "pad_batch": {}}],
         [], "input 'c': pad_batch pads waveforms kept at their own length"),
        ([{"name": "x", "steps": [*AUDIO, {"fit_length": {"length": 9}}], "pad_batch": {}}],
         [], "this input's samples are never of different lengths"),
        ([{"name": "x", "type": "text", "element_type": "int64", "steps": TEXT,
           "pad_batch": {"value": 7}}],
         [], "this input's samples are texts its tokenizer pads (with its own pad)"),
        ([{"name": "x", "steps": AUDIO}],
         [{"name": "h", "type": "embedding", "steps": [{"pool": {"mode": "cls"}}]}],
         "pooling answers of different lengths is not built"),
    ],
)  # fmt: skip
def test_a_mask_or_padding_that_cannot_mean_what_it_says_is_refused_at_publish(
    tmp_path: Path, inputs: list[Any], outputs: list[Any], message: str
) -> None:
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.manifest_parts import ManifestError
    from tests.helpers import write_files

    document = {
        "kind": "model", "name": "t/m", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(tmp_path, {"m.onnx": b"-", "t.json": b"{}"}),
        "inputs": inputs, "outputs": outputs,
    }  # fmt: skip
    with pytest.raises(ManifestError) as info:
        parse_manifest(document)
    assert message in str(info.value)
