"""Perplexity scores exactly the reference's tokens, as the prompt and reference tokenized
together have them (issue 47 item 1): no BOS between prompt and reference, no stray SentencePiece
``▁``, no end-of-text the tokenizer appends. Checked on a tiny untrained GPT-2 (fixed seed)
with two tokenizers built here in the styles the field publishes, against a teacher-forced
computation in torch whose token ids are spelled out word by word."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Cli

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "studies", "running"]
BOS, EOS = 1, 2


def _vocabulary(style: str) -> list[str]:
    """Token strings by id: the specials, then each word as it reads after a space (and, for
    byte-level, at the text's start)."""
    specials = ["<unk>", "<s>", "</s>"]
    if style == "legacy-metaspace":
        return [*specials, "▁", *(f"▁{w}" for w in WORDS), *"abcdefghijklmnopqrstuvwxyz"]
    return [*specials, *WORDS, *(f"Ġ{w}" for w in WORDS)]


def _tokenizer(style: str) -> Any:
    """``legacy-metaspace``: Llama 2's tokenizer.json shape (a normalizer that prepends ``▁``
    and turns spaces into ``▁``, BOS by the post-processor); ``bos-bytelevel``: Llama 3's
    (byte-level pre-tokenizer, offsets trimmed), its template adding BOS and, to be sure an
    appended token is not scored either, EOS."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = _vocabulary(style)
    if style == "legacy-metaspace":
        scores = [(p, -1.0 if p.startswith("▁") and len(p) > 1 else -5.0) for p in vocab]
        tokenizer = Tokenizer(models.Unigram(scores, unk_id=0, byte_fallback=False))
        tokenizer.normalizer = normalizers.Sequence(
            [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
        )
        tokenizer.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        template = "<s> $A"
    else:
        ids = {p: i for i, p in enumerate(vocab)}
        tokenizer = Tokenizer(models.WordLevel(ids, unk_token="<unk>"))
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        template = "<s> $A </s>"
    tokenizer.add_special_tokens(["<s>", "</s>"])
    processor: Any = processors.TemplateProcessing(
        single=template, special_tokens=[("<s>", BOS), ("</s>", EOS)]
    )
    if style == "bos-bytelevel":
        processor = processors.Sequence([processors.ByteLevel(trim_offsets=True), processor])
    tokenizer.post_processor = processor
    return tokenizer


def _ids(style: str, words: list[str]) -> list[int]:
    """The ids the words have after a space (and, byte-level, the first one without)."""
    vocab = {p: i for i, p in enumerate(_vocabulary(style))}
    if style == "legacy-metaspace":
        return [vocab[f"▁{w}"] for w in words]
    return [vocab[words[0]], *(vocab[f"Ġ{w}"] for w in words[1:])]


def _folder(tmp_path: Path, style: str, context: int = 64) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path / style
    config = GPT2Config(
        vocab_size=len(_vocabulary(style)),
        n_positions=context,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=BOS,
        eos_token_id=EOS,
    )
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    _tokenizer(style).save(str(folder / "tokenizer.json"))
    return folder


def _generator(folder: Path) -> Any:
    from pinbench.worker.generation.torch_generator import TorchGenerator
    from pinbench.worker.predictors.config import ModelFiles

    generator = TorchGenerator()
    files = {p.name: p for p in folder.iterdir()}
    generator.open(ModelFiles(files, "hf-folder", "GPT2LMHeadModel"), None)
    return generator


def _direct(model: Any, style: str, prompt: list[str], reference: list[str]) -> float:
    """Teacher forcing in torch: BOS, the prompt's words, the reference's words; the
    negative log-likelihood of the reference's, summed."""
    import torch

    context = [BOS, *_ids(style, prompt)]
    whole = [BOS, *_ids(style, prompt + reference)]
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([whole])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return -sum(float(logp[i - 1, whole[i]]) for i in range(len(context), len(whole)))


@pytest.mark.parametrize("style", ["legacy-metaspace", "bos-bytelevel"])
def test_perplexity_scores_the_references_own_tokens(tmp_path: Path, style: str) -> None:
    from pinbench.registry.generation import GenerationSpec
    from pinbench.tasks.generation.scores import perplexity

    folder = _folder(tmp_path, style)
    generator = _generator(folder)
    cases = _cases(7, 12)
    prompts = [" ".join(p) for p, _ in cases]
    prompts[0] += " "  # a prompt that ends in a space is followed by no second one
    references = [" " + " ".join(r) + "\n" for _, r in cases]  # stripped before joining
    spec = GenerationSpec(max_new_tokens=1)
    pairs = generator.reference_ids(prompts, references, spec, lambda: None)
    losses = [generator.reference_loss(ids, start) for ids, start in pairs]
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    expected = [_direct(model, style, p, r) for p, r in cases]
    for (loss, scored), (_, reference), nll in zip(losses, cases, expected, strict=True):
        assert scored == len(reference)  # one token per word: no BOS, no lone ▁, no EOS
        assert loss == pytest.approx(nll, rel=1e-5)
    total = sum(len(r) for _, r in cases)
    got = perplexity([loss for loss, _ in losses], sum(n for _, n in losses))
    assert got == pytest.approx(math.exp(sum(expected) / total), rel=1e-5)


def test_a_text_scored_from_its_start_is_scored_from_its_second_token(tmp_path: Path) -> None:
    """``start`` 0 (no prompt before the reference): the first token has nothing before it,
    so scoring begins at the second, as with ``start`` 1 (transformers' generator scored
    nothing and counted every token)."""
    import torch
    from transformers import GPT2LMHeadModel

    style = "bos-bytelevel"
    folder = _folder(tmp_path, style)
    generator = _generator(folder)
    ids = [BOS, *_ids(style, ["the", "cat", "sat"])]
    loss, scored = generator.reference_loss(ids, 0)
    assert (loss, scored) == generator.reference_loss(ids, 1) and scored == 3
    model = GPT2LMHeadModel.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    with torch.inference_mode():
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    assert loss == pytest.approx(-sum(float(logp[i - 1, ids[i]]) for i in (1, 2, 3)), rel=1e-5)
    assert generator.reference_loss(ids[:1], 0) == (0.0, 0)


def test_a_text_past_the_context_is_cut_at_its_end_whatever_the_tokenizer_file_says(
    tmp_path: Path,
) -> None:
    """BOS, 5 prompt words and 6 reference words in a context of 8: the first 2 reference
    words are scored, even with a tokenizer file that truncates on the left."""
    from tokenizers import Tokenizer
    from transformers import GPT2LMHeadModel

    from pinbench.registry.generation import GenerationSpec

    style = "legacy-metaspace"
    folder = _folder(tmp_path, style, context=8)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(8, direction="left")
    tokenizer.save(str(folder / "tokenizer.json"))
    generator = _generator(folder)
    prompt, reference = WORDS[:5], WORDS[5:11]
    spec = GenerationSpec(max_new_tokens=1)
    ((ids, start),) = generator.reference_ids(
        [" ".join(prompt)], [" ".join(reference)], spec, lambda: None
    )
    assert (ids, start) == ([BOS, *_ids(style, prompt + reference[:2])], 6)
    loss, scored = generator.reference_loss(ids, start)
    model = GPT2LMHeadModel.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    assert scored == 2
    assert loss == pytest.approx(_direct(model, style, prompt, reference[:2]), rel=1e-5)


def _cases(seed: int, count: int) -> list[tuple[list[str], list[str]]]:
    rng = random.Random(seed)
    return [
        (
            [rng.choice(WORDS) for _ in range(rng.randint(1, 6))],
            rng.sample(WORDS, rng.randint(1, 5)),
        )
        for _ in range(count)
    ]


def test_a_run_records_the_perplexity_of_the_references_own_tokens(
    cli: Cli, tmp_path: Path
) -> None:
    """The same through ``manifest model``, publish, lock and an accuracy run: the recorded
    perplexity is the direct computation's (the starting code scored BOS and the lone ``▁``
    too)."""
    import pinbench
    from pinbench.catalog import frameworks
    from tests.helpers import dump, sha

    style = "legacy-metaspace"
    folder = _folder(tmp_path, style)
    out = tmp_path / "model.yaml"
    done = cli("manifest", "model", str(folder), "--name", "text/tiny-legacy", "-o", str(out))
    assert done.code == 0, done.err
    cases = _cases(11, 8)
    lines = "".join(
        json.dumps({"prompt": " ".join(p), "reference": " ".join(r)}) + "\n" for p, r in cases
    ).encode()
    (tmp_path / "prompts.jsonl").write_bytes(lines)
    dataset = {
        "kind": "dataset",
        "name": "legacy-prompts",
        "version": "1.0.0",
        "task": "text-generation",
        "data": {"format": "prompts-jsonl", "path": "prompts.jsonl"},
        "labels": {"format": "prompt-references"},
        "files": [{"path": "prompts.jsonl", "sha256": sha(lines), "size": len(lines)}],
    }
    assert cli("init").code == 0
    registry = pinbench.Registry(tmp_path / "home")
    registry.publish(frameworks.write(tmp_path, "transformers"))
    registry.publish(out)
    registry.publish(dump(tmp_path / "dataset.yaml", dataset))
    request = {
        "model": "text/tiny-legacy@1",
        "dataset": "legacy-prompts@1",
        "generation": {"max_new_tokens": 2},
        "scenario": {"mode": "accuracy"},
    }
    run = registry.lock(request)[0].run(runner="local")
    assert run.status == "succeeded"

    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    nll = sum(_direct(model, style, p, r) for p, r in cases)
    total = sum(len(r) for _, r in cases)
    assert run.metrics["perplexity"] == pytest.approx(math.exp(nll / total), rel=1e-5)
