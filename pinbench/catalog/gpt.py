"""``text/tiny-gpt``: a small GPT-2 trained here, the catalog's generative model (issue 37).

No package ships the weights of a language model, so the catalog trains one, like the digits
CNN: fixed seeds, one thread, deterministic kernels, in the pinned numeric environment
(``numerics``). The text is the Python documentation that ships with CPython
(``pydoc_data.topics``, PSF licence): its topics in name order, every fifth held out. The
held-out topics give the prompts dataset (``PROMPTS``: the first words of a paragraph as the
prompt, the words that follow as the reference) and the perplexity text; the others train a
byte-level BPE tokenizer and then the model.

The text is the running interpreter's, so the bytes are the same wherever the same CPython
release builds them (a patch release may edit the documentation); the corpus' sha256 is in
the manifests' descriptions.

Written as a Hugging Face folder (``config.json``, ``model.safetensors``, ``tokenizer.json``,
``tokenizer_config.json``, ``generation_config.json``), the way the field publishes models.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

NAME = "text/tiny-gpt"
VERSION = "1.0.0"
DATASET = "python-doc-prompts"
SEED = 37
VOCAB = 512
CONTEXT = 128
LAYERS, HEADS, WIDTH = 2, 4, 96
STEPS, BATCH, WINDOW = 500, 16, 64
LEARNING_RATE = 3e-3
PROMPT_WORDS, REFERENCE_WORDS, PROMPTS = 8, 16, 24
END = "<|endoftext|>"
TEXT_DIR = "tiny-gpt-text"
"""Under the prepare stage's folder: ``train.txt`` and ``held-out.txt``."""
FOLDER_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)


def corpus() -> tuple[list[str], list[str]]:
    """The documentation topics as (training texts, held-out texts), in topic-name order."""
    from pydoc_data.topics import topics

    train: list[str] = []
    held: list[str] = []
    for i, key in enumerate(sorted(topics)):
        text = re.sub(r"[ \t]+\n", "\n", topics[key]).strip() + "\n"
        (held if i % 5 == 4 else train).append(text)
    return train, held


def write_text(out: Path) -> Path:
    """``TEXT_DIR/train.txt`` and ``held-out.txt`` (topics separated by ``END`` lines)."""
    folder = out / TEXT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    train, held = corpus()
    (folder / "train.txt").write_text(f"\n{END}\n".join(train), encoding="utf-8")
    (folder / "held-out.txt").write_text(f"\n{END}\n".join(held), encoding="utf-8")
    return folder


def read_text(folder: Path, name: str) -> list[str]:
    return (folder / TEXT_DIR / name).read_text(encoding="utf-8").split(f"\n{END}\n")


def prompts(held: list[str]) -> list[dict[str, str]]:
    """Prompt/reference pairs: the first ``PROMPT_WORDS`` words of each held-out paragraph of
    enough words, and the ``REFERENCE_WORDS`` after them; the first ``PROMPTS`` of them."""
    rows: list[dict[str, str]] = []
    for text in held:
        for paragraph in text.split("\n\n"):
            words = paragraph.split()
            if len(words) < PROMPT_WORDS + REFERENCE_WORDS or not words[0][:1].isalpha():
                continue
            rows.append(
                {
                    "prompt": " ".join(words[:PROMPT_WORDS]),
                    "reference": " ".join(words[PROMPT_WORDS : PROMPT_WORDS + REFERENCE_WORDS]),
                }
            )
            if len(rows) == PROMPTS:
                return rows
    return rows


def corpus_sha256(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in ("train.txt", "held-out.txt"):
        digest.update((folder / TEXT_DIR / name).read_bytes())
    return digest.hexdigest()


def train_tokenizer(texts: list[str]) -> Any:
    """A byte-level BPE of ``VOCAB`` tokens (GPT-2's scheme), ``END`` its one special token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=[END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def train(data: Path, out: Path) -> Path:
    """Tokenizer and weights, trained on ``data``'s training text, written as a Hugging Face
    folder ``out``; deterministic (one thread, fixed seeds, deterministic kernels)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    def build(vocab: int, end: int) -> Any:
        return GPT2LMHeadModel(
            GPT2Config(
                vocab_size=vocab,
                n_positions=CONTEXT,
                n_embd=WIDTH,
                n_layer=LAYERS,
                n_head=HEADS,
                bos_token_id=end,
                eos_token_id=end,
                resid_pdrop=0.0,
                embd_pdrop=0.0,
                attn_pdrop=0.0,
            )
        )

    return fit(data, out, build, seed=SEED)


def fit(data: Path, out: Path, build: Callable[[int, int], Any], *, seed: int) -> Path:
    """The byte-level BPE (``train_tokenizer``) and a causal language model (``build(vocab
    size, end-of-text id)``, made after seeding) trained on ``data``'s training text for
    ``STEPS`` steps of ``BATCH`` windows, written with its tokenizer and generation config as
    a Hugging Face folder ``out``; deterministic (one thread, fixed seeds, deterministic
    kernels)."""
    import torch
    from transformers import GenerationConfig

    texts = read_text(data, "train.txt")
    tokenizer = train_tokenizer(texts)
    end = tokenizer.token_to_id(END)
    ids: list[int] = []
    for text in texts:
        ids += [*tokenizer.encode(text).ids, end]
    stream = torch.tensor(ids, dtype=torch.long)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(seed)
        model = build(tokenizer.get_vocab_size(), end)
        optimiser = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.0)
        order = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(STEPS):
            starts = torch.randint(0, len(stream) - WINDOW - 1, (BATCH,), generator=order)
            batch = torch.stack([stream[s : s + WINDOW] for s in starts.tolist()])
            optimiser.zero_grad()
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            optimiser.step()
        model.eval()
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        generation = GenerationConfig(bos_token_id=end, eos_token_id=end, do_sample=False)  # type: ignore[no-untyped-call]
        generation.save_pretrained(out)
    finally:
        torch.use_deterministic_algorithms(False)
        torch.set_num_threads(threads)
    tokenizer.save(str(out / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": END,
        "eos_token": END,
        "model_max_length": CONTEXT,
        "model_input_names": ["input_ids", "attention_mask"],
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    return out


def write_dataset(root: Path, data: Path) -> Path:
    """The prompts dataset (``PROMPTS`` held-out prompts with references) under
    ``root/tiny-gpt-prompts/``, with its manifest."""
    from pinbench.catalog.files import dump, entry

    folder = root / "tiny-gpt-prompts"
    folder.mkdir(parents=True, exist_ok=True)
    rows = prompts(read_text(data, "held-out.txt"))
    path = folder / "prompts.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return dump(
        root / f"dataset-{DATASET}.yaml",
        {
            "kind": "dataset",
            "name": DATASET,
            "version": VERSION,
            "description": f"{len(rows)} prompts from CPython's documentation topics held out of "
            f"{NAME}'s training, each with the words that follow as its reference (corpus "
            f"sha256 {corpus_sha256(data)[:16]})",
            "license": "PSF-2.0",
            "task": "text-generation",
            "samples": len(rows),
            "data": {"format": "prompts-jsonl", "path": "prompts.jsonl"},
            "labels": {"format": "prompt-references"},
            "files": [entry(root, path)],
        },
    )


def export(root: Path, weights: Path) -> list[Path]:
    """The trained folder copied under ``root/tiny-gpt/`` with its model manifest."""
    description = (
        f"a {LAYERS}-layer GPT-2 ({WIDTH} wide, {VOCAB}-token byte-level BPE, context "
        f"{CONTEXT}) trained by pinbench's catalog on CPython's documentation topics, as a "
        "Hugging Face folder"
    )
    return [export_folder(root, weights, "tiny-gpt", f"{NAME}@{VERSION}", description)]


def export_folder(root: Path, weights: Path, folder_name: str, ref: str, description: str) -> Path:
    """A trained Hugging Face folder (``fit``'s) copied to ``root/folder_name/``, its manifest
    (``ref``: ``NAME@VERSION``; for transformers, its architecture from its config) written
    beside: the manifest's path."""
    name, version = ref.split("@")
    import shutil

    from pinbench.catalog.files import SUPPORTED, dump, entry

    folder = root / folder_name
    folder.mkdir(parents=True, exist_ok=True)
    for file in FOLDER_FILES:
        shutil.copyfile(weights / file, folder / file)
    config = json.loads((folder / "config.json").read_text())
    return dump(
        root / f"model-{folder_name}.yaml",
        {
            "kind": "model",
            "name": name,
            "version": version,
            "description": description,
            "license": "Apache-2.0",
            "format": "hf-folder",
            "architecture": config["architectures"][0],
            "framework": {"name": "transformers", "range": SUPPORTED["transformers"]},
            "files": [entry(root, folder / file) for file in FOLDER_FILES],
            "outputs": [{"name": "logits", "type": "generation"}],
        },
    )
