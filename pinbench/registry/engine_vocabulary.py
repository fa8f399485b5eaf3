"""An engine's own vocabulary checked at publish against the artifact's ``tokenizer.json``, as
data (issue 87): pinbench's tokenizer gives every engine its ids, and CTranslate2 reads the
prompt as its vocabulary's tokens, llama.cpp as ids into its GGUF file's vocabulary, so a
vocabulary in another order would give the engine other tokens than the ones pinbench
encoded. Checked again, with the tokenizer library, when the model opens
(``worker.generation.engine_folder.check_vocabulary``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.registry.sourcing import FileProblem

MAX_BYTES = 64 << 20
"""``tokenizer.json`` or ``vocabulary.json``: larger than any tokenizer's."""


class VocabularyRefused(FileProblem):
    """An engine's vocabulary that is not the artifact's tokenizer's."""


def _json(name: str, path: Path) -> Any:
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    if path.stat().st_size > MAX_BYTES:
        raise VocabularyRefused(path=name, reason=f"larger than {MAX_BYTES} bytes")
    try:
        return load_json(path.read_bytes())
    except JsonRefused as exc:
        raise VocabularyRefused(path=name, reason=f"not JSON pinbench reads: {exc}") from None


def tokenizer_tokens(name: str, path: Path) -> dict[int, str]:
    """``tokenizer.json``'s tokens by id: its model's vocabulary (a token-to-id object, or
    Unigram's list of pieces) and its added tokens."""
    data = _json(name, path)
    model = data.get("model") if isinstance(data, dict) else None
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        tokens = {i: t for t, i in vocab.items() if isinstance(i, int)}
    elif isinstance(vocab, list):
        tokens = {i: p[0] for i, p in enumerate(vocab) if isinstance(p, list) and p}
    else:
        raise VocabularyRefused(path=name, reason="its model has no vocabulary pinbench reads")
    for added in data.get("added_tokens") or []:
        if isinstance(added, dict) and isinstance(added.get("id"), int):
            tokens[added["id"]] = added.get("content")
    return tokens


def check_words(name: str, words: Any, tokenizer: dict[int, str]) -> None:
    """Refuse ``words`` (the engine's vocabulary, by id, from the file ``name``) unless it is
    ``tokenizer``'s, id for id."""
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise VocabularyRefused(path=name, reason="not a list of tokens")
    wrong = next(
        (i for i, w in enumerate(words) if tokenizer.get(i) != w),
        None if len(words) == len(tokenizer) else min(len(words), len(tokenizer)),
    )
    if wrong is not None:
        raise VocabularyRefused(
            path=name,
            reason=f"it is not tokenizer.json's vocabulary (id {wrong} differs; {len(words)} "
            f"tokens against {len(tokenizer)}): prompts would reach the engine as other tokens",
        )


def check_vocabulary_file(name: str, path: Path, tokenizer: dict[int, str]) -> None:
    """CTranslate2's ``vocabulary.json`` (a JSON list of tokens) against ``tokenizer``."""
    check_words(name, _json(name, path), tokenizer)
