"""Encoder-decoder generation (decision 245): a tiny random-weight T5 built here, described by
``manifest model``, published, locked and run through pinbench; its answers are the token ids
transformers' own ``generate`` gives (one at a time and batched), its perplexity is the
decoder's loss on the references (``labels``) as transformers computes it, its TTFT/TPOT are
LoadGen's; folders pinbench cannot start a decoder for are refused naming why."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pinbench
from pinbench.artifacts.hf_folder import HfFolderRefused, describe
from tests.encdec_folders import T5_SENTENCES, t5_folder

NEW = 6
PROMPTS = [
    {"prompt": "the cat sat on the mat", "reference": "a dog sat"},
    {"prompt": "numbers are not words", "reference": "the words are numbers"},
    {"prompt": "a dog", "reference": "cat"},
    {"prompt": "the dogs sat", "reference": "on the mat"},
]


def _files(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in folder.iterdir()}


@pytest.fixture(scope="module")
def t5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """A registry with the T5 folder (its manifest written by ``manifest model``'s library),
    the transformers framework and a prompts dataset."""
    from pinbench.authoring.hf_model import hf_manifest
    from pinbench.catalog import frameworks
    from tests.helpers import dump, sha

    root = tmp_path_factory.mktemp("t5")
    folder = t5_folder(root / "t5", "T5ForConditionalGeneration", seed=2, factor=5.0)
    data, notes = hf_manifest(
        folder,
        base=root,
        name="text/t5",
        version="1.0.0",
        framework_range=None,
        steps=None,
        classification=[],
    )
    assert data["outputs"] == [{"name": "logits", "type": "generation"}]
    assert "decoder_start_token_id 0" in notes[0]
    reg = pinbench.Registry(root / "home")
    reg.init()
    reg.publish(frameworks.write(root, "transformers"))
    reg.publish(dump(root / "t5.yaml", data))
    lines = "".join(json.dumps(p) + "\n" for p in PROMPTS).encode()
    (root / "prompts.jsonl").write_bytes(lines)
    reg.publish(
        dump(
            root / "dataset.yaml",
            {
                "kind": "dataset",
                "name": "t5-prompts",
                "version": "1.0.0",
                "task": "text-generation",
                "data": {"format": "prompts-jsonl", "path": "prompts.jsonl"},
                "labels": {"format": "prompt-references"},
                "files": [{"path": "prompts.jsonl", "sha256": sha(lines), "size": len(lines)}],
            },
        )
    )
    yield reg, folder


def _run(registry: Any, batch: int = 1, **scenario: Any) -> Any:
    request = {
        "model": "text/t5@1",
        "dataset": "t5-prompts@1",
        "generation": {"max_new_tokens": NEW},
        "batch_size": batch,
        "scenario": scenario,
    }
    run = registry.lock(request)[0].run(runner="local")
    assert run.status == "succeeded", run.error
    return run


def _direct(folder: Path) -> tuple[Any, Any]:
    from tokenizers import Tokenizer
    from transformers import AutoModelForSeq2SeqLM

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, local_files_only=True).eval()
    return tokenizer, model


def test_t5_answers_are_transformers_own_generate_and_scored_as_generation(
    t5: tuple[Any, Path], tmp_path: Path
) -> None:
    """One prompt at a time, then Offline in batches of 3: the token ids are ``generate``'s
    (``decoder_start_token_id`` first, which ``generate`` returns and pinbench's answer leaves
    out); perplexity is exp of transformers' own mean loss with the reference as ``labels``;
    the token latencies are recorded as for a decoder-only model."""
    import torch

    registry, folder = t5
    tokenizer, model = _direct(folder)
    assert model.config.decoder_start_token_id == 0
    encoded = [tokenizer.encode(p["prompt"]).ids for p in PROMPTS]

    run = _run(registry, mode="accuracy")
    run.export_outputs(tmp_path / "one.npy")
    ids = np.load(tmp_path / "one.npy", allow_pickle=False)
    assert ids.shape == (len(PROMPTS), NEW)  # -1 past an answer's end
    answers = []
    for row, prompt in zip(ids, encoded, strict=True):
        with torch.inference_mode():
            out = model.generate(torch.tensor([prompt]), max_new_tokens=NEW, do_sample=False)
        assert out[0, 0] == 0  # the decoder's start
        assert row[row >= 0].tolist() == out[0, 1:].tolist()
        answers.append(out[0, 1:].tolist())
    assert len({tuple(a) for a in answers}) == len(PROMPTS)  # the prompts make a difference
    assert {len(a) for a in answers} == {3, NEW}  # one answer ends at </s>, the others run on

    total, count = 0.0, 0
    for prompt, p in zip(encoded, PROMPTS, strict=True):
        labels = tokenizer.encode(p["reference"]).ids
        assert labels[-1] == 1  # </s>, as transformers' tokenizer makes labels
        with torch.inference_mode():
            loss = model(input_ids=torch.tensor([prompt]), labels=torch.tensor([labels])).loss
        total += float(loss) * len(labels)
        count += len(labels)
    metrics = run.metrics
    assert metrics["perplexity"] == pytest.approx(math.exp(total / count), rel=1e-5)
    assert {"rouge_l", "rouge1", "exact_match"} <= set(metrics)
    assert metrics["tokens_count"] == sum(len(a) for a in answers)
    assert metrics["framework_tpot_mean_ns"] > 0 and metrics["framework_ttft_mean_ns"] > 0

    batched = _run(registry, 3, name="Offline", mode="accuracy")
    batches = batched.view()["details"]["generation"]["batches"]
    assert max(len(b) for b in batches) == 3
    batched.export_outputs(tmp_path / "batched.npy")
    ids = np.load(tmp_path / "batched.npy", allow_pickle=False)
    for batch in batches:
        rows = [encoded[i] for i in batch]
        width = max(len(r) for r in rows)
        padded = torch.tensor([r + [0] * (width - len(r)) for r in rows])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        with torch.inference_mode():
            out = model.generate(
                padded,
                attention_mask=mask,
                max_new_tokens=NEW,
                do_sample=False,
            )
        for row, i in enumerate(batch):
            mine = ids[i][ids[i] >= 0].tolist()
            assert mine == out[row, 1 : 1 + len(mine)].tolist(), f"prompt {i}"
            assert mine[-1] == 1 or len(mine) == NEW  # ended at </s> or at max_new_tokens


def test_a_performance_run_records_loadgens_ttft_and_tpot(t5: tuple[Any, Path]) -> None:
    run = _run(t5[0], mode="performance", min_query_count=8, min_duration_ms=0)
    metrics = run.metrics
    for key in ("ttft_p90_ns", "tpot_p90_ns", "framework_ttft_p90_ns", "framework_tpot_p90_ns"):
        assert metrics[key] > 0, key
    assert metrics["ttft_p90_ns"] <= metrics["latency_p90_ns"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            {"config": {"decoder_start_token_id": None}, "generation": None},
            "decoder starts from `decoder_start_token_id`, which neither",
            id="no start id anywhere",
        ),
        pytest.param(
            {"config": {}, "generation": {"decoder_start_token_id": 10_000}},
            "`decoder_start_token_id: 10000` is past the vocabulary",
            id="past the vocabulary (generation_config.json read first)",
        ),
        pytest.param(
            {"config": {"decoder_start_token_id": "0"}, "generation": None},
            "is not a token id",
            id="not an integer",
        ),
        pytest.param(
            {"config": {"relative_attention_num_buckets": 4096}, "generation": {}},
            "relative_attention_bias.weight has 32",
            id="buckets the weights do not hold",
        ),
        pytest.param(
            {"config": {"d_kv": 100_000}, "generation": {}},
            "heads of `d_kv: 100000`",
            id="head width past the weights",
        ),
        pytest.param(
            {"config": {"num_decoder_layers": 1000}, "generation": {}},
            "`num_decoder_layers: 1000`, but no numbered stack",
            id="decoder layers the weights do not hold",
        ),
    ],
)
def test_an_encoder_decoder_whose_decoder_cannot_start_or_whose_numbers_lie_is_refused(
    t5: tuple[Any, Path], tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    import shutil

    folder = shutil.copytree(t5[1], tmp_path / "t5")
    config = json.loads((folder / "config.json").read_text())
    for key, value in change["config"].items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    generation = folder / "generation_config.json"
    if change["generation"] is None:
        generation.unlink()
    else:
        generation.write_text(
            json.dumps({**json.loads(generation.read_text()), **change["generation"]})
        )
    with pytest.raises(HfFolderRefused, match=message.replace("(", r"\(").replace("`", "`")):
        describe(_files(folder))


def test_a_start_id_past_the_json_integer_bound_is_refused_without_vocab_size() -> None:
    """``decoder_start`` read alone (the folder's own 2**31 bound on config numbers aside)."""
    from pinbench.artifacts.hf_encdec import decoder_start

    config = {"decoder_start_token_id": 10**30, "is_encoder_decoder": True}
    with pytest.raises(HfFolderRefused, match=r"10{30}` is not a token id \(an integer from 0"):
        decoder_start(config, {}, {}, "config.json")


def test_a_start_id_past_the_output_embedding_is_refused_where_the_model_opens(
    t5: tuple[Any, Path], tmp_path: Path
) -> None:
    """Without ``vocab_size`` the folder cannot check ``decoder_start_token_id`` as data (T5's
    default vocabulary then sizes the weights): the output embedding's rows are checked when
    the model opens, before anything is generated, naming the key."""
    import shutil

    from transformers import T5ForConditionalGeneration

    from pinbench.worker.generation.torch_generator import TorchGenerator
    from pinbench.worker.predictors.base import ModelLoadError
    from pinbench.worker.predictors.config import ModelFiles

    folder = shutil.copytree(t5[1], tmp_path / "t5")
    model = T5ForConditionalGeneration.from_pretrained(folder)
    default_rows = 32128  # T5Config's vocab_size when config.json names none
    model.resize_token_embeddings(default_rows)
    model.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    del config["vocab_size"]
    (folder / "config.json").write_text(json.dumps(config))
    generation = folder / "generation_config.json"
    start = {"decoder_start_token_id": default_rows + 5}
    generation.write_text(json.dumps({**json.loads(generation.read_text()), **start}))
    assert describe(_files(folder)).decoder_start == default_rows + 5  # no vocab_size to check
    with pytest.raises(
        ModelLoadError, match=r"`decoder_start_token_id: 32133` is past the output embedding"
    ):
        TorchGenerator().open(ModelFiles(_files(folder), "hf-folder", None), None)


def test_the_sentences_tokenize_without_unknown_pieces() -> None:
    """The builder's tokenizer covers the words the prompts use (an ``<unk>`` would make every
    prompt alike)."""
    from tests.encdec_folders import T5_WORDS, unigram_tokenizer

    pieces = ["<pad>", "</s>", "<unk>", *(f"▁{w}" for w in T5_WORDS), *"abcdefghijklmnopqrstuvwxyz"]
    tokenizer = unigram_tokenizer(pieces, "</s>")
    for text in [*T5_SENTENCES, *(p["prompt"] for p in PROMPTS)]:
        assert 2 not in tokenizer.encode(text).ids, text
