"""Hugging Face heads read as what they are (issue 65, item 5; decision 281): a Wav2Vec2 CTC
folder takes a waveform and gives CTC logits decoded over its tokenizer's vocabulary with the
word delimiter as a space, equal to the processor's own decoding; an alphabet that keeps the
delimiter undeclared is refused at publish; token classification, question answering and audio
classification heads are written as their heads. Every folder is built here: transformers'
config classes at tiny sizes, random weights from a fixed seed, save_pretrained; no Hub."""

from __future__ import annotations

import json
import shutil
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.authoring.model import model_manifest
from pinbench.registry.manifest import parse_manifest
from tests.helpers import sha

RATE = 16_000
LETTERS = "ABCDEHILNORST"
VOCAB = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4} | {
    c: 5 + i for i, c in enumerate(LETTERS)
}


def _wav2vec2_folder(folder: Path, head: str = "ForCTC", *, normalize: bool = True) -> Path:
    import torch
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2CTCTokenizer,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForCTC,
        Wav2Vec2ForSequenceClassification,
    )

    folder.mkdir(parents=True)
    torch.manual_seed(0)
    config = Wav2Vec2Config(  # type: ignore[call-arg]
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=24,
        conv_dim=(8, 8),
        conv_stride=(5, 4),
        conv_kernel=(10, 8),
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2,
        pad_token_id=0,
        num_labels=3,
        classifier_proj_size=8,
        tdnn_dim=(8, 8),
        tdnn_kernel=(3, 1),
        tdnn_dilation=(1, 1),
        xvector_output_dim=8,
    )
    import transformers

    cls = {
        "ForCTC": Wav2Vec2ForCTC,
        "ForSequenceClassification": Wav2Vec2ForSequenceClassification,
    }.get(head) or getattr(transformers, f"Wav2Vec2{head}")
    cls(config).eval().save_pretrained(folder)
    Wav2Vec2FeatureExtractor(  # type: ignore[no-untyped-call]
        feature_size=1,
        sampling_rate=RATE,
        padding_value=0.0,
        do_normalize=normalize,
        return_attention_mask=False,
    ).save_pretrained(folder)
    if head == "ForCTC":
        (folder.parent / "vocab-src.json").write_text(json.dumps(VOCAB))
        tokenizer = Wav2Vec2CTCTokenizer(  # type: ignore[no-untyped-call]
            str(folder.parent / "vocab-src.json"), word_delimiter_token="|"
        )
        tokenizer.save_pretrained(folder)
    return folder


def _clip(path: Path, seconds: float, seed: int) -> np.ndarray[Any, Any]:
    """A 16-bit mono WAV of noise and tones, and its samples as the file holds them."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(RATE * seconds)) / RATE
    wave_ = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(t.size)
    pcm = np.clip(np.round(wave_ * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(RATE)
        f.writeframes(pcm.tobytes())
    return pcm.astype(np.float32) / 32768.0


@pytest.fixture(scope="module")
def ctc_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wav2vec2_folder(tmp_path_factory.mktemp("w2v") / "wav2vec2")


def test_a_ctc_folder_is_read_as_audio_in_and_ctc_logits_out(ctc_folder: Path) -> None:
    """Not "takes text" and not an embedding: input_values from a waveform at the
    extractor's rate, normalised (do_normalize), a batch padded with its padding_value and
    masked as the speech-recognition pipeline masks it; logits
    decoded by CTC over vocab.json, pad_token_id the blank, `|` a space."""
    authored = model_manifest([ctc_folder], base=ctc_folder.parent)
    data = authored.data
    assert data["format"] == "hf-folder" and data["architecture"] == "Wav2Vec2ForCTC"
    assert data["inputs"] == [
        {
            "name": "input_values",
            "element_type": "float32",
            "steps": [
                {"decode_audio": {"channel": "mix", "rate": RATE}},
                {"zero_mean_unit_var": {}},
            ],
            "pad_batch": {"value": 0.0},
        },  # each clip at its own length (tests/test_audio_lengths.py)
        {"name": "attention_mask", "element_type": "int32", "mask_of": "input_values"},
    ]
    assert data["outputs"] == [
        {
            "name": "logits",
            "type": "text",
            "ctc": {
                "blank": 0,
                "alphabet": {"vocab": "wav2vec2/vocab.json"},
                "word_delimiter": "|",
            },
        }
    ]
    assert any("text-recognition" in n for n in authored.notes)
    assert not any("takes text" in n or "embedding" in n for n in authored.notes)


def test_without_do_normalize_no_normalisation_step_is_written(tmp_path: Path) -> None:
    folder = _wav2vec2_folder(tmp_path / "raw", normalize=False)
    steps = model_manifest([folder], base=tmp_path).data["inputs"][0]["steps"]
    assert [next(iter(s)) for s in steps] == ["decode_audio"]


def _alphabet(ctc_folder: Path, **ctc: Any) -> Any:
    from pinbench.registry.ports import Ctc, CtcAlphabet
    from pinbench.tasks.text_recognition.ctc import read_alphabet

    spec = Ctc(blank=0, alphabet=CtcAlphabet(vocab="vocab.json"), **ctc)
    return read_alphabet(spec, {"vocab.json": ctc_folder / "vocab.json"}, output="logits")


def test_ctc_decoding_equals_the_tokenizer_s_on_scores_it_did_not_choose(ctc_folder: Path) -> None:
    """Random scores (a seeded generator, heavy on the blank and the delimiter, so that words
    begin and end with delimiters and repeat across blanks) decoded by pinbench and by
    Wav2Vec2CTCTokenizer.batch_decode on the argmax ids: the same texts."""
    from transformers import Wav2Vec2CTCTokenizer

    from pinbench.tasks.text_recognition.ctc import best_path, decode

    tokenizer = Wav2Vec2CTCTokenizer.from_pretrained(ctc_folder)
    alphabet = _alphabet(ctc_folder, word_delimiter="|")
    rng = np.random.default_rng(65)
    scores = rng.standard_normal((40, 30, len(VOCAB))).astype(np.float32)
    scores[..., 0] += rng.uniform(0, 2.5, (40, 30))  # blanks
    scores[..., 4] += rng.uniform(0, 2.0, (40, 30))  # delimiters
    paths = best_path(scores, output="logits", first=0)
    ours = [decode(p, alphabet) for p in paths]
    theirs = tokenizer.batch_decode(scores.argmax(-1))
    assert ours == theirs
    assert any(" " in t for t in ours)  # words were decoded, not one run of letters


def test_a_kept_delimiter_is_what_made_wer_one(ctc_folder: Path) -> None:
    """The issue's trial: the same perfect answer with `|` kept as a character scores WER 1.0;
    declared as the word delimiter, 0.0."""
    from pinbench.tasks.text_recognition.ctc import decode
    from pinbench.tasks.text_recognition.metrics import text_metrics

    ids = [VOCAB[c] for c in "HELLO"] + [4] + [VOCAB[c] for c in "THERE"]
    ids = [i for c in ids for i in (c, 0)]  # a blank after each, so LL stays two
    path = np.array(ids, dtype=np.int64)
    kept = decode(path, _alphabet(ctc_folder))
    spaced = decode(path, _alphabet(ctc_folder, word_delimiter="|"))
    assert (kept, spaced) == ("HELLO|THERE", "HELLO THERE")
    assert text_metrics([kept], ["HELLO THERE"])["wer"] == 1.0
    assert text_metrics([spaced], ["HELLO THERE"])["wer"] == 0.0


def test_the_steps_make_the_extractor_s_input_values_and_the_model_s_transcript(
    ctc_folder: Path, tmp_path: Path
) -> None:
    """The manifest's steps on a WAV file give the Wav2Vec2FeatureExtractor's input_values
    bit for bit (a clip as long as fit_length, so no padding differs), and the model's logits
    on them decode to what Wav2Vec2Processor.batch_decode gives."""
    import torch
    from transformers import Wav2Vec2ForCTC, Wav2Vec2Processor

    from pinbench.registry.ports import Input
    from pinbench.tasks.text_recognition.ctc import best_path, decode
    from pinbench.worker.pipeline import preprocess_files

    samples = _clip(tmp_path / "clip.wav", 0.5, seed=3)
    spec = dict(model_manifest([ctc_folder], base=ctc_folder.parent).data["inputs"][0])
    spec["shape"] = [samples.size]
    spec["steps"] = [*spec["steps"][:2], {"fit_length": {"length": samples.size}}]
    import msgspec

    ours = preprocess_files(
        [("clip.wav", tmp_path / "clip.wav")], "audio", msgspec.convert(spec, Input)
    )
    processor = Wav2Vec2Processor.from_pretrained(ctc_folder)
    theirs = processor(samples, sampling_rate=RATE, return_tensors="np").input_values
    assert ours.dtype == np.float32 and np.array_equal(ours, theirs)
    model = Wav2Vec2ForCTC.from_pretrained(ctc_folder).eval()  # type: ignore[no-untyped-call]
    with torch.inference_mode():
        logits = model(torch.from_numpy(ours)).logits.numpy()
    text = decode(
        best_path(logits, output="logits", first=0)[0], _alphabet(ctc_folder, word_delimiter="|")
    )
    theirs = processor.batch_decode(logits.argmax(-1))  # type: ignore[no-untyped-call]
    assert text == theirs[0]


# ---------------------------------------------------------------- publish


def _publishable(ctc_folder: Path, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    root = tmp_path / "artifact"
    shutil.copytree(ctc_folder, root / "wav2vec2")
    return model_manifest([root / "wav2vec2"], base=root).data, root


def test_the_ctc_manifest_publishes_and_one_keeping_the_delimiter_is_refused(
    ws: Any, ctc_folder: Path, tmp_path: Path
) -> None:
    from sqlalchemy import func, select

    from pinbench.db.models import Artifact
    from pinbench.registry.formats import FormatMismatch
    from pinbench.registry.publish import publish

    data, root = _publishable(ctc_folder, tmp_path)
    kept = json.loads(json.dumps(data))
    del kept["outputs"][0]["ctc"]["word_delimiter"]
    kept["version"] = "2.0.0"
    with pytest.raises(FormatMismatch) as refused:
        publish(ws, parse_manifest(kept), manifest_dir=root, publisher="test")
    assert refused.value.path == "wav2vec2/tokenizer_config.json"
    assert "holds the tokenizer's word delimiter '|' (word_delimiter_token)" in str(refused.value)
    assert "WER 1.0" in str(refused.value)
    with ws.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Artifact)) == 0
    assert publish(ws, parse_manifest(data), manifest_dir=root, publisher="test").created


def test_a_vocab_alphabet_is_checked_as_data(tmp_path: Path) -> None:
    from pinbench.tasks.text_recognition.ctc import AlphabetProblem

    cases = [
        ({"a": 0, "b": 2}, "ids are 0 to 1"),
        ({"a": 0, "b": 0}, "both have id 0"),
        ({"a": 0, "b": True}, "has id True"),
        ([1, 2], "not a JSON object"),
    ]
    for doc, says in cases:
        (tmp_path / "vocab.json").write_text(json.dumps(doc))
        with pytest.raises(AlphabetProblem, match=says):
            _alphabet(tmp_path)
    (tmp_path / "vocab.json").write_text(json.dumps({"<pad>": 0, "a": 1}))
    with pytest.raises(AlphabetProblem, match="word delimiter '\\|' must be exactly one class"):
        _alphabet(tmp_path, word_delimiter="|")


def test_an_old_ctc_manifest_keeps_its_digest() -> None:
    """The new fields are late: a manifest without them stores exactly what it stored."""
    from pinbench.registry.manifest import manifest_data

    doc = {
        "kind": "model",
        "name": "ocr/rec",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": ">=1.17 <2"},
        "files": [{"path": "rec.onnx", "sha256": "0" * 64}, {"path": "k.txt", "sha256": "1" * 64}],
        "outputs": [
            {"name": "y", "type": "text", "ctc": {"blank": 0, "alphabet": {"file": "k.txt"}}}
        ],
    }
    stored = manifest_data(parse_manifest(doc))
    assert stored["outputs"][0]["ctc"] == {
        "blank": 0,
        "alphabet": {"file": "k.txt", "metadata": None},
        "space": False,
    }


# ---------------------------------------------------------------- other heads


def _bert_head(folder: Path, cls_name: str) -> Path:
    import torch
    import transformers

    from pinbench.catalog.minilm import TOKENIZER

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        id2label={0: "O", 1: "B-PER", 2: "I-PER"},
        label2id={"O": 0, "B-PER": 1, "I-PER": 2},
    )
    getattr(transformers, cls_name)(config).eval().save_pretrained(folder)
    shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
    names = ["input_ids", "token_type_ids", "attention_mask"]
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_input_names": names}))
    return folder


@pytest.mark.parametrize(
    ("cls_name", "task", "outputs"),
    [
        ("BertForTokenClassification", "token-classification", ["logits"]),
        ("BertForQuestionAnswering", "question-answering", ["start_logits", "end_logits"]),
    ],
)
def test_text_heads_are_written_as_their_heads_with_their_task(
    tmp_path: Path, cls_name: str, task: str, outputs: list[str]
) -> None:
    from pinbench.tasks.registry import TASKS

    folder = _bert_head(tmp_path / "bert", cls_name)
    authored = model_manifest([folder], base=tmp_path)
    data = authored.data
    assert [o["name"] for o in data["outputs"]] == outputs
    assert all(o["type"] == "tensor" and "steps" not in o for o in data["outputs"])
    assert data["attributes"] == {"task": task}
    if task == "token-classification":  # id2label, one name a line, beside the manifest
        assert data["outputs"][0]["labels"] == {"path": "bert-labels.txt"}
        assert authored.beside == {tmp_path / "bert-labels.txt": b"O\nB-PER\nI-PER\n"}
        assert {"path": "bert-labels.txt", "sha256": sha(b"O\nB-PER\nI-PER\n"), "size": 14} in (
            data["files"]
        )
    assert [i["name"] for i in data["inputs"]] == ["input_ids", "token_type_ids", "attention_mask"]
    assert any(f"the task is {task}" in n for n in authored.notes)
    assert not any("sentence-embedding" in n for n in authored.notes)
    missing = f"this pinbench has no task {task!r} yet"
    assert any(missing in n for n in authored.notes) == (task not in TASKS)


def test_an_audio_classifier_takes_a_waveform_and_gives_class_scores(tmp_path: Path) -> None:
    folder = _wav2vec2_folder(tmp_path / "kws", "ForSequenceClassification")
    data = model_manifest([folder], base=tmp_path).data
    assert data["inputs"][0]["name"] == "input_values"
    assert data["inputs"][0]["steps"][0] == {"decode_audio": {"channel": "mix", "rate": RATE}}
    assert data["outputs"] == [{"name": "logits", "type": "classification"}]


@pytest.mark.parametrize(
    ("head", "output", "said"),
    [
        ("ForXVector", {"name": "embeddings", "type": "embedding"}, "speaker-verification"),
        ("Model", {"name": "last_hidden_state", "type": "tensor"}, "each frame's hidden state"),
    ],
)
def test_speaker_and_audio_embedding_heads_take_a_waveform(
    tmp_path: Path, head: str, output: dict[str, Any], said: str
) -> None:
    """Not "takes text but the folder has no tokenizer.json" (issue 73, item 4): an x-vector
    head gives a speaker embedding per clip, the bare encoder each frame's state."""
    folder = _wav2vec2_folder(tmp_path / head, head)
    authored = model_manifest([folder], base=tmp_path)
    data = authored.data
    assert data["architecture"] == f"Wav2Vec2{head}"
    assert data["inputs"][0]["name"] == "input_values"
    assert data["inputs"][0]["steps"][0] == {"decode_audio": {"channel": "mix", "rate": RATE}}
    assert data["outputs"] == [output]
    assert any(said in n for n in authored.notes)
    assert not any("takes text" in n for n in authored.notes)
    parse_manifest(data)  # a manifest pinbench reads
    (folder / "preprocessor_config.json").unlink()  # no extractor: said to take audio still
    from pinbench.authoring.errors import NotAModel

    with pytest.raises(NotAModel, match=f"Wav2Vec2{head} takes audio"):
        model_manifest([folder], base=tmp_path)


def test_an_audio_head_over_features_pinbench_does_not_compute_is_refused(
    tmp_path: Path,
) -> None:
    import torch
    from transformers import ASTConfig, ASTFeatureExtractor, ASTForAudioClassification

    from pinbench.authoring.errors import NotAModel

    torch.manual_seed(0)
    folder = tmp_path / "ast"
    config = ASTConfig(  # type: ignore[call-arg]
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=24,
        max_length=64,
        num_mel_bins=16,
        num_labels=2,
    )
    ASTForAudioClassification(config).eval().save_pretrained(folder)  # type: ignore[no-untyped-call]
    ASTFeatureExtractor(num_mel_bins=16, max_length=64).save_pretrained(folder)  # type: ignore[no-untyped-call]
    with pytest.raises(NotAModel) as refused:
        model_manifest([folder], base=tmp_path)
    assert "ASTForAudioClassification takes audio" in refused.value.reason
    assert "preprocess function" in refused.value.reason


# ---------------------------------------------------------------- end to end

TRANSCRIPTS = ["HELLO THERE", "A CAT", "ONE", "STREET LIGHTS ON"]


def test_a_ctc_folder_runs_on_audio_with_the_processor_s_texts_and_jiwer_s_wer(
    ctc_folder: Path, tmp_path: Path
) -> None:
    """From `manifest model` to a recorded text-recognition run over WAV files: the run's
    decoded texts are Wav2Vec2Processor.batch_decode's on transformers' own logits, and its
    WER and CER are jiwer's on them."""
    import jiwer
    import torch
    from transformers import Wav2Vec2ForCTC, Wav2Vec2Processor

    import pinbench
    from pinbench.catalog import frameworks
    from tests.helpers import dump, sha

    data, root = _publishable(ctc_folder, tmp_path)
    data["name"], data["version"] = "speech/w2v", "1.0.0"
    dump(root / "model.yaml", data)
    clips = tmp_path / "data" / "clips"
    clips.mkdir(parents=True)
    waves = [_clip(clips / f"{i}.wav", 0.5, seed=i) for i in range(len(TRANSCRIPTS))]
    csv = "file,text\n" + "".join(f"{i}.wav,{t}\n" for i, t in enumerate(TRANSCRIPTS))
    (tmp_path / "data" / "texts.csv").write_text(csv)
    names = [f"clips/{i}.wav" for i in range(len(TRANSCRIPTS))] + ["texts.csv"]
    entries = [{"path": n, "sha256": sha((tmp_path / "data" / n).read_bytes())} for n in names]
    dataset = dump(
        tmp_path / "data" / "dataset.yaml",
        {
            "kind": "dataset",
            "name": "spoken",
            "version": "1.0.0",
            "task": "text-recognition",
            "data": {"format": "audio", "path": "clips"},
            "labels": {"format": "text-csv", "path": "texts.csv"},
            "files": entries,
        },
    )
    registry = pinbench.Registry(tmp_path / "home")
    registry.init()
    registry.publish(frameworks.write(tmp_path, "transformers"))
    registry.publish(root / "model.yaml")
    registry.publish(dataset)
    lock = registry.lock(
        {"model": "speech/w2v@1", "dataset": "spoken@1", "scenario": {"mode": "accuracy"}}
    )[0]
    run = lock.run(runner="local")
    assert run.status == "succeeded", run.info.get("error")

    processor = Wav2Vec2Processor.from_pretrained(ctc_folder)
    model = Wav2Vec2ForCTC.from_pretrained(ctc_folder).eval()  # type: ignore[no-untyped-call]
    values = processor(waves, sampling_rate=RATE, return_tensors="pt").input_values
    with torch.inference_mode():
        logits = model(values).logits.numpy()
    texts = processor.batch_decode(logits.argmax(-1))  # type: ignore[no-untyped-call]
    recorded = [row["text"] for row in run.info["details"]["samples"]]
    assert recorded == texts
    assert run.metrics["wer"] == pytest.approx(jiwer.wer(TRANSCRIPTS, texts), abs=1e-12)
    assert run.metrics["cer"] == pytest.approx(jiwer.cer(TRANSCRIPTS, texts), abs=1e-12)


def test_a_token_classifier_folder_runs_as_its_head_with_seqeval_s_numbers(
    tmp_path: Path,
) -> None:
    """`manifest model` on a BertForTokenClassification folder (the token-classification
    tests' tokenizer and tags, random weights) to a recorded token-classification run whose
    entity precision, recall and F1 are seqeval's on transformers' own logits."""
    import torch
    import transformers
    from seqeval.metrics import f1_score, precision_score, recall_score
    from tokenizers import Tokenizer

    import pinbench
    from pinbench.catalog import frameworks
    from tests.helpers import dump, write_files
    from tests.test_token_classification import MAX_LENGTH, SAMPLES, TAGS, VOCAB, tokenizer_json

    folder = tmp_path / "tagger"
    torch.manual_seed(1)
    config = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=24,
        max_position_embeddings=32,
        id2label=dict(enumerate(TAGS)),
        label2id={t: i for i, t in enumerate(TAGS)},
    )
    transformers.BertForTokenClassification(config).eval().save_pretrained(folder)  # type: ignore[no-untyped-call]
    (folder / "tokenizer.json").write_bytes(tokenizer_json())
    names = ["input_ids", "token_type_ids", "attention_mask"]
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_input_names": names}))
    authored = model_manifest([folder], base=tmp_path, name="text/bert-tagger")
    for path, content in authored.beside.items():
        path.write_bytes(content)
    data = authored.data
    for spec in data["inputs"]:
        spec["shape"] = [MAX_LENGTH]
        spec["steps"][0]["tokenize"]["max_length"] = MAX_LENGTH
    dump(tmp_path / "model.yaml", data)
    texts = list(SAMPLES)
    files = {
        "texts.txt": "".join(t + "\n" for t in texts).encode(),
        "tags.txt": "".join(SAMPLES[t] + "\n" for t in texts).encode(),
    }
    dataset = dump(
        tmp_path / "d" / "d.yaml",
        {
            "kind": "dataset",
            "name": "text/entities",
            "version": "1.0.0",
            "task": "token-classification",
            "files": write_files(tmp_path / "d", files),
            "data": {"format": "text-lines", "path": "texts.txt"},
            "labels": {"format": "iob2-tags", "path": "tags.txt"},
        },
    )
    registry = pinbench.Registry(tmp_path / "home")
    registry.init()
    registry.publish(frameworks.write(tmp_path, "transformers"))
    registry.publish(tmp_path / "model.yaml")
    registry.publish(dataset)
    lock = registry.lock(
        {
            "model": "text/bert-tagger@1",
            "dataset": "text/entities@1",
            "scenario": {"mode": "accuracy"},
        }
    )[0]
    run = lock.run(runner="local")
    assert run.status == "succeeded", run.info.get("error")

    tokenizer = Tokenizer.from_str(tokenizer_json().decode())
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]", length=MAX_LENGTH)
    model = transformers.BertForTokenClassification.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    truth, guess = [], []
    for text in texts:
        e = tokenizer.encode(text)
        with torch.inference_mode():
            logits = model(
                input_ids=torch.tensor([e.ids]),
                token_type_ids=torch.tensor([e.type_ids]),
                attention_mask=torch.tensor([e.attention_mask]),
            ).logits.numpy()
        firsts: dict[int, int] = {}
        for k, w in enumerate(e.word_ids):
            if w is not None:
                firsts.setdefault(w, k)
        guess.append([TAGS[int(np.argmax(logits[0, firsts[w]]))] for w in sorted(firsts)])
        truth.append(SAMPLES[text].split(" "))
    assert run.metrics["entity_precision"] == pytest.approx(
        precision_score(truth, guess), abs=1e-12
    )
    assert run.metrics["entity_recall"] == pytest.approx(recall_score(truth, guess), abs=1e-12)
    assert run.metrics["entity_f1"] == pytest.approx(f1_score(truth, guess), abs=1e-12)


def _saved_as_a_processor(folder: Path, out: Path) -> Path:
    """The CTC folder as transformers 5 saves a ``Wav2Vec2Processor``: its extractor's
    settings in ``processor_config.json`` (under ``feature_extractor``), no
    ``preprocessor_config.json``."""
    from transformers import Wav2Vec2Processor

    processor = Wav2Vec2Processor.from_pretrained(folder)
    shutil.copytree(folder, out)
    for name in ("preprocessor_config.json", "tokenizer_config.json", "vocab.json"):
        (out / name).unlink(missing_ok=True)
    processor.save_pretrained(out)
    return out


def test_a_folder_transformers_5_saved_with_its_processor_is_read_alike(
    ctc_folder: Path, tmp_path: Path
) -> None:
    """transformers 5.23 writes a processor's extractor into ``processor_config.json``; the
    folder is read as the one with ``preprocessor_config.json`` (issue 73, item 5)."""
    saved = _saved_as_a_processor(ctc_folder, tmp_path / "wav2vec2")
    assert not (saved / "preprocessor_config.json").exists()
    held = json.loads((saved / "processor_config.json").read_text())
    assert held["feature_extractor"]["feature_extractor_type"] == "Wav2Vec2FeatureExtractor"
    before = model_manifest([ctc_folder], base=ctc_folder.parent).data
    after = model_manifest([saved], base=saved.parent).data
    assert after["inputs"] == before["inputs"]
    assert after["outputs"][0]["ctc"]["blank"] == before["outputs"][0]["ctc"]["blank"]
    assert "processor_config.json" in {f["path"].rsplit("/", 1)[-1] for f in after["files"]}


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("both, differing", "they differ"),
        ("neither key", "found neither"),
    ],
)
def test_a_processor_file_read_two_ways_is_refused(
    ctc_folder: Path, tmp_path: Path, case: str, said: str
) -> None:
    from pinbench.authoring.errors import NotAModel

    folder = _saved_as_a_processor(ctc_folder, tmp_path / "w2v")
    processor = folder / "processor_config.json"
    held = json.loads(processor.read_text())
    if case == "both, differing":
        older = {**held["feature_extractor"], "sampling_rate": 8000}
        (folder / "preprocessor_config.json").write_text(json.dumps(older))
    else:
        processor.write_text(json.dumps({"processor_class": "Wav2Vec2Processor"}))
    with pytest.raises(NotAModel, match=said):
        model_manifest([folder], base=tmp_path)
