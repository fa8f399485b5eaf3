"""The generation config's settings (decision 272): tiny random-weight BART, Marian and GPT-2
folders built here (seeded, no Hub), each with a generation_config.json that sets what changes
a greedy answer; pinbench's ids are transformers' own ``generate`` reading the same folder
(greedy, the same ``max_new_tokens``), and each setting is shown to change the answer. A
setting pinbench does not apply is refused naming it and the file; a bad value is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinbench.worker.generation.processors import (
    MAX_NGRAM,
    MAX_SEQUENCES,
    GenerationSettingRefused,
    Processors,
    check_settings,
)

SMALL: dict[str, Any] = {
    "vocab_size": 40,
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 32,
    "decoder_ffn_dim": 32,
    "max_position_embeddings": 64,
}
MARIAN: dict[str, Any] = {"pad_token_id": 39, "decoder_start_token_id": 39, "eos_token_id": 0}
PROMPT = [0, 5, 9, 14, 22, 7, 2]
"""BART's: its start token 2 ends the answer at once unless held back."""
MARIAN_PROMPT = [3, 4, 5, 6, 0]
"""Marian's: its pad 39, favoured by the output bias, is the answer unless banned."""
NEW = 16


def _tokenizer(folder: Path, specials: list[str]) -> None:
    from tokenizers import Tokenizer, models

    vocab = {**{s: i for i, s in enumerate(specials)}}
    vocab.update({f"w{i}": i for i in range(len(specials), 40) if f"w{i}" not in vocab})
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=specials[-1]))
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"})
    )


def _build(folder: Path, kind: str) -> Path:
    import torch
    import transformers

    torch.manual_seed(1 if kind == "marian" else 0)
    if kind == "bart":
        model: Any = transformers.BartForConditionalGeneration(transformers.BartConfig(**SMALL))
        specials = ["<s>", "<pad>", "</s>", "<unk>"]
    elif kind == "marian":
        config: Any = transformers.MarianConfig(**SMALL, **MARIAN, forced_eos_token_id=0)
        model = transformers.MarianMTModel(config)
        with torch.no_grad():  # the pad favoured, as a briefly trained Marian may
            model.final_logits_bias[0, 39] = 3.0
        specials = ["</s>", "<unk>"]
    else:
        config = transformers.GPT2Config(
            vocab_size=40, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=0,
            eos_token_id=2,
        )  # fmt: skip
        model = transformers.GPT2LMHeadModel(config)
        specials = ["<s>", "<pad>", "</s>", "<unk>"]
    model.eval().save_pretrained(folder)
    _tokenizer(folder, specials)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("settings")
    return {k: _build(root / k, k) for k in ("bart", "marian", "gpt2")}


def _with(folder: Path, where: Path, settings: dict[str, Any]) -> Path:
    """A copy of ``folder`` whose generation_config.json also sets ``settings``."""
    import shutil

    copy = shutil.copytree(folder, where)
    file = copy / "generation_config.json"
    file.write_text(json.dumps({**json.loads(file.read_text()), **settings}))
    return copy


def _open(folder: Path) -> Any:
    from pinbench.worker.generation.torch_generator import TorchGenerator
    from pinbench.worker.predictors.config import ModelFiles

    generator = TorchGenerator()
    generator.open(ModelFiles({p.name: p for p in folder.iterdir()}, "hf-folder", None), None)
    return generator


def _pinbench(folder: Path, prompt: list[int]) -> list[int]:
    from pinbench.registry.generation import GenerationSpec

    ids: list[int] = _open(folder).generate(prompt, GenerationSpec(max_new_tokens=NEW), 0, _none)
    return ids


def _none() -> None:
    return None


def _generate(folder: Path, prompt: list[int]) -> list[int]:
    """transformers' greedy ``generate``, reading the folder's generation config; the answer is
    the ids after the decoder's start token (after the prompt, for GPT-2)."""
    import torch
    import transformers

    config = json.loads((folder / "config.json").read_text())
    model = getattr(transformers, config["architectures"][0]).from_pretrained(folder).eval()
    out = model.generate(torch.tensor([prompt]), max_new_tokens=NEW)[0].tolist()
    skip = 1 if config.get("is_encoder_decoder") else len(prompt)
    return [int(i) for i in out[skip:]]


CASES = [
    pytest.param("bart", {"min_length": 12}, id="min_length: the decoder's ids from its start"),
    pytest.param("bart", {"min_new_tokens": 5}, id="min_new_tokens"),
    pytest.param(
        "bart",
        {"min_length": 12, "no_repeat_ngram_size": 3},
        id="no_repeat_ngram_size with min_length (the user's trial)",
    ),
    pytest.param(
        "bart",
        {"min_length": 12, "bad_words_ids": [[9, 9], [2, 25]]},
        id="bad_words_ids: two-token sequences, one starting at the decoder's start token",
    ),
    pytest.param(
        "bart",
        {"min_length": 12, "repetition_penalty": 1.8},
        id="repetition_penalty over the decoder's ids",
    ),
    pytest.param("marian", {"bad_words_ids": [[39]]}, id="bad_words_ids: the pad (opus-mt's)"),
    pytest.param("marian", {"no_repeat_ngram_size": 2}, id="no_repeat_ngram_size"),
    pytest.param(
        "gpt2",
        {"no_repeat_ngram_size": 2, "min_length": 20},
        id="decoder-only: n-grams and length counted from the prompt's start",
    ),
    pytest.param("gpt2", {"repetition_penalty": 1.6}, id="decoder-only: repetition_penalty"),
    pytest.param("gpt2", {"bad_words_ids": [[7], [12, 3]]}, id="decoder-only: bad_words_ids"),
]


@pytest.mark.parametrize(("kind", "settings"), CASES)
def test_the_answer_is_generates_with_each_setting_that_changes_it(
    folders: dict[str, Path], tmp_path: Path, kind: str, settings: dict[str, Any]
) -> None:
    prompt = {"bart": PROMPT, "marian": MARIAN_PROMPT, "gpt2": PROMPT[1:6]}[kind]
    folder = _with(folders[kind], tmp_path / kind, settings)
    expected = _generate(folder, prompt)
    assert expected != _generate(folders[kind], prompt), "the setting changes no answer here"
    assert _pinbench(folder, prompt) == expected
    assert _pinbench(folders[kind], prompt) == _generate(folders[kind], prompt)


def test_a_batch_answers_each_row_as_alone_and_the_run_records_what_was_applied(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    """Offline batches: every row's processors read its own ids (an encoder-decoder's rows
    are alike; a decoder-only model's prompts differ in length, and are not counted padded)."""
    from pinbench.registry.generation import GenerationSpec

    spec = GenerationSpec(max_new_tokens=NEW)
    for kind, settings, rows in [
        ("bart", {"min_length": 12, "no_repeat_ngram_size": 3}, [PROMPT, PROMPT[:4], [0, 30, 2]]),
        ("gpt2", {"no_repeat_ngram_size": 2, "min_length": 20}, [PROMPT[1:6], [8, 3], [30]]),
    ]:
        generator = _open(_with(folders[kind], tmp_path / kind, settings))
        got: dict[int, list[int]] = {}
        generator.generate_batch(rows, spec, [0, 1, 2], _none, got.__setitem__)
        assert [got[r] for r in range(3)] == [generator.generate(p, spec, 0, _none) for p in rows]
        assert {k: generator.applied[k] for k in settings} == settings
    marian = _open(_with(folders["marian"], tmp_path / "m", {"bad_words_ids": [[39], [0]]}))
    assert marian.applied == {"bad_words_ids": [[39]], "forced_eos_token_id": [0]}  # [0]: its end


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"num_beams": 4}, "`num_beams`: 4 changes how transformers' generate answers"),
        ({"encoder_no_repeat_ngram_size": 3}, "`encoder_no_repeat_ngram_size`: 3"),
        ({"sequence_bias": [[[5], 2.0]]}, "`sequence_bias`"),
        ({"exponential_decay_length_penalty": [2, 1.5]}, "`exponential_decay_length_penalty`"),
        ({"guidance_scale": 1.5}, "`guidance_scale`: 1.5"),
        ({"remove_invalid_values": True}, "`remove_invalid_values`: True"),
        ({"no_repeat_ngram_size": 1000}, f"`no_repeat_ngram_size`: 1000 must be .* to {MAX_NGRAM}"),
        ({"min_length": -1}, "`min_length`: -1 must be an integer from 0"),
        ({"repetition_penalty": 2}, r"`repetition_penalty`: 2 must be a decimal number"),
        ({"repetition_penalty": 0.0}, "`repetition_penalty`: 0.0 must be a decimal number above 0"),
        ({"repetition_penalty": 1e6}, "`repetition_penalty`: 1000000.0 must be .* at most 100"),
        ({"bad_words_ids": [[5]] * (MAX_SEQUENCES + 1)}, "`bad_words_ids`: must be a list of 1"),
        ({"bad_words_ids": [[]]}, r"`bad_words_ids`: \[\]: each must be a list of 1 to 64 ids"),
        ({"bad_words_ids": [[5, -1]]}, "`bad_words_ids`: -1 is not a token id"),
        ({"bad_words_ids": [[5, 40]]}, r"`bad_words_ids`: names 40, past the vocabulary \(40"),
        (
            {"suppress_tokens": list(range(3, MAX_SEQUENCES + 4))},
            "`suppress_tokens`: must be a token",
        ),
    ],
)
def test_a_setting_not_applied_or_a_bad_value_is_refused_naming_it_and_the_file(
    folders: dict[str, Path], tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    from pinbench.worker.predictors.base import ModelLoadError

    folder = _with(folders["bart"], tmp_path / "bart", settings)
    with pytest.raises(ModelLoadError, match=message) as refused:
        _open(folder)
    assert "generation_config.json" in str(refused.value)


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"num_beams": 1, "num_return_sequences": 1}, id="beams at their default"),
        pytest.param({"repetition_penalty": 1.0, "no_repeat_ngram_size": 0}, id="off"),
        pytest.param({"diversity_penalty": 0.0, "encoder_repetition_penalty": 1}, id="neutral"),
        pytest.param({"do_sample": True, "temperature": 0.6, "top_p": 0.9}, id="llama's"),
        pytest.param({"length_penalty": 2.0, "early_stopping": True}, id="beam search's alone"),
        pytest.param({"max_length": 142, "cache_implementation": "static"}, id="no effect"),
    ],
)
def test_settings_at_their_defaults_or_replaced_by_the_request_are_not_refused(
    settings: dict[str, Any],
) -> None:
    check_settings(settings)
    assert not Processors.of(settings).applied()


def test_the_processors_give_the_same_choice_over_numpy_logits_as_over_torchs() -> None:
    """ONNX Runtime's generator hands NumPy logits to the same code."""
    import numpy as np
    import torch

    processors = Processors.of(
        {"eos_token_id": 2, "min_length": 6, "no_repeat_ngram_size": 2, "repetition_penalty": 1.3,
         "bad_words_ids": [[4], [5, 6]], "suppress_tokens": [7]}
    )  # fmt: skip
    rng = np.random.default_rng(0)
    steps = rng.standard_normal((12, 10)).astype(np.float32)
    steps[:, 5] += 3  # 5 then 6 would be chosen: the sequence ban has work to do
    as_numpy = processors.start([1, 5], 12)
    as_torch = processors.start([1, 5], 12)
    picked = [
        (as_numpy.token(s, lambda x: int(np.argmax(x))),
         as_torch.token(torch.from_numpy(s), lambda x: int(torch.argmax(x))))
        for s in steps
    ]  # fmt: skip
    assert [a for a, _ in picked] == [b for _, b in picked]
    assert 2 not in [a for a, _ in picked][:4] and 7 not in [a for a, _ in picked]


def test_a_refusal_names_the_setting() -> None:
    with pytest.raises(GenerationSettingRefused) as refused:
        check_settings({"penalty_alpha": 0.6, "top_k": 4})
    assert refused.value.key == "penalty_alpha"
