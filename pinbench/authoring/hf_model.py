"""A model manifest for a Hugging Face folder (``format: hf-folder``), read as data only.

The folder's every file (``.git`` left out) with its sha256; the architecture from
``config.json``; inputs and outputs from what the architecture is for, by transformers' own
naming of its heads:

- ``*ForCausalLM`` / ``*LMHeadModel``: a generative model, output ``logits`` of type
  ``generation`` (prompts are tokenized by the folder's tokenizer at the run; no inputs); an
  encoder-decoder's generating head (``*ForConditionalGeneration``) the same, its prompt the
  encoder's input;
- ``*ForSequenceClassification``: text inputs (the tokenizer's ``model_input_names``, each a
  ``tokenize`` step on ``tokenizer.json``), output ``logits`` of type ``classification``;
- ``*ForImageClassification``: one image input, ``pixel_values``, its steps written from the
  folder's ``preprocessor_config.json`` (``hf_processor``), output ``logits`` of type
  ``classification``;
- a speech model over a waveform (``*ForCTC``; an audio classifier), ``*ForTokenClassification``
  and ``*ForQuestionAnswering``: as their heads (``hf_heads``);
- any other (a bare encoder, ``BertModel``): the same inputs, output ``last_hidden_state`` of
  type ``embedding`` with mean pooling over the attention mask and L2 normalisation (sentence
  embeddings, as sentence-transformers computes them).

What it cannot know (the sequence length to pad to, other heads' meaning) is said as a note.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pinbench.artifacts.hf_folder import HfFolder, HfFolderRefused, describe
from pinbench.authoring.errors import AuthoringError, NotAModel
from pinbench.authoring.listing import Relative, file_entries

TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
DEFAULT_LENGTH = 128
GENERATIVE = ("ForCausalLM", "LMHeadModel")


def is_hf_folder(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def folder_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".git") for part in p.relative_to(folder).parts)
    )


HUB = re.compile(
    r"^hf:/{1,2}(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95})"
    r"@(?P<rev>[^/\n]{1,255})/?\Z"
)
"""``hf://ORG/NAME@REVISION``: a whole model repository at a branch, tag or commit (a path
the shell or ``pathlib`` gave as ``hf:/...`` is the same)."""


def hub_folder(text: str) -> tuple[str, str, Path] | None:
    """``(repo, commit, snapshot folder)`` of ``hf://ORG/NAME@REV``, fetched into the Hugging
    Face cache (offline from it with ``HF_HUB_OFFLINE=1``); None for anything else."""
    found = HUB.match(text)
    if found is None:
        return None
    from pinbench.artifacts.sources.hf import cache_dir, offline
    from pinbench.artifacts.sources.uri import COMMIT

    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise AuthoringError(
            "hf:// needs huggingface-hub: pip install 'pinbench[sources]'"
        ) from None
    repo, rev = found["repo"], found["rev"]
    try:
        folder = Path(
            snapshot_download(
                repo_id=repo, revision=rev, cache_dir=cache_dir(), local_files_only=offline()
            )
        )
    except Exception as exc:  # the hub client's own errors: offline, not found, no access
        raise NotAModel(path=text, reason=f"{type(exc).__name__}: {exc}") from None
    if not COMMIT.fullmatch(folder.name):
        raise NotAModel(path=text, reason=f"the hub gave no commit for {rev!r}")
    return repo, folder.name, folder


def hf_manifest(
    folder: Path,
    *,
    base: Path,
    name: str,
    version: str,
    framework_range: str | None,
    steps: list[Any] | dict[str, Any] | None,
    classification: list[str],
    hub: tuple[str, str] | None = None,
    beside: dict[Path, bytes] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The manifest's data and the notes for the author (validated by the caller). ``hub``:
    the folder is the snapshot of ``(repo, commit)``: every file is sourced from that commit
    (``hf://REPO@COMMIT/PATH``, fetched and checked at publish), paths relative to it."""
    from pinbench.catalog.files import SUPPORTED

    files = folder_files(folder)
    if hub is not None:
        entries = _hub_entries(folder, files, *hub)
        mapping = {e["path"]: folder / e["path"] for e in entries}
    else:
        relative = Relative(base)
        mapping = {relative(p): p for p in files}
        entries = file_entries(base, files)
    try:
        described = describe(mapping)
    except HfFolderRefused as exc:
        raise NotAModel(path=str(folder), reason=str(exc)) from None
    inputs, outputs, notes = _ports(described, mapping)
    if steps is not None:
        raise AuthoringError(
            "--steps: a Hugging Face folder's inputs are written from its tokenizer; edit "
            "their tokenize steps in the manifest instead"
        )
    by_name = {str(o["name"]): o for o in outputs}
    for wanted in classification:
        if wanted not in by_name:
            raise AuthoringError(
                f"--classification names output {wanted!r}; written: {', '.join(by_name)}"
            )
        by_name[wanted]["type"] = "classification"
        by_name[wanted].pop("steps", None)
    data: dict[str, Any] = {
        "kind": "model",
        "name": name,
        "version": version,
        "format": "hf-folder",
        "architecture": described.architecture,
        "framework": {
            "name": "transformers",
            "range": framework_range or SUPPORTED["transformers"],
        },
        "files": entries,
        "inputs": inputs,
        "outputs": outputs,
    }
    from pinbench.authoring.hf_heads import text_head

    head = text_head(described.architecture)
    if head is not None:
        data["attributes"] = {"task": head[0]}
    if head is not None and head[0] == "token-classification":
        from pinbench.authoring.hf_heads import label_names

        named = label_names(described, folder, base, hub, beside)
        if named is not None:
            entries.append(named)
            data["outputs"][0]["labels"] = {"path": named["path"]}
            notes.append(f"the label names are config.json's id2label, in {named['path']}")
    if described.pickled:
        data["trusted"] = False
        notes.append(
            f"the weights are pickles ({described.weights[0]}): `trusted: false` written, and "
            f"publish refuses it so. {TRUSTED_MEANS}; convert them to safetensors instead if "
            "you can"
        )
    return data, notes


TRUSTED_MEANS = (
    "Unpickling runs whatever code the pickle holds: set `trusted: true` only if you "
    "vouch for whoever made these files (runs then also need --allow-pickle)"
)
"""What ``trusted`` means, written beside ``trusted: false`` for a pickled folder: the manifest
never says ``true`` by itself, a person decides (decision 200)."""
TRUSTED_COMMENT = (
    "pickled weights run code when loaded; true only if you vouch for their maker "
    "(runs then need --allow-pickle)"
)


def _hub_entries(folder: Path, files: list[Path], repo: str, commit: str) -> list[dict[str, Any]]:
    """Each snapshot file (a link into the cache's blobs) with its sha256, size and source."""
    from pinbench.authoring.listing import file_hash

    out = []
    for path in files:
        rel = path.relative_to(folder).as_posix()
        sha256, size = file_hash(path)
        out.append(
            {"path": rel, "sha256": sha256, "size": size, "source": f"hf://{repo}@{commit}/{rel}"}
        )
    return out


def _ports(
    folder: HfFolder, files: dict[str, Path]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    arch = folder.architecture
    if folder.speech:
        notes = [
            f"{arch} is a speech encoder-decoder (log-mel features of audio, computed by its "
            f"{folder.processor}): run it on a speech-recognition dataset (data.format audio, "
            "labels transcript-txt/csv/jsonl) with a request's `generation: {max_new_tokens: N}`"
        ]
        return [], [{"name": "logits", "type": "generation"}], notes
    if folder.decoder_start is not None:
        notes = [
            f"{arch} is an encoder-decoder that generates from decoder_start_token_id "
            f"{folder.decoder_start}: run it on a text-generation dataset (data.format "
            "prompts-jsonl: each prompt is the encoder's input) with a request's "
            "`generation: {max_new_tokens: N}`"
        ]
        return [], [{"name": "logits", "type": "generation"}], notes
    if arch.endswith(GENERATIVE):
        notes = [
            f"{arch} generates text: run it on a text-generation dataset (data.format "
            "prompts-jsonl) with a request's `generation: {max_new_tokens: N}`"
        ]
        return [], [{"name": "logits", "type": "generation"}], notes
    if arch.endswith("ForImageClassification"):
        if folder.processor is None:
            raise NotAModel(
                path=folder.path("config.json"),
                reason=f"{arch} takes images but the folder has no preprocessor_config.json (nor "
                "processor_config.json) "
                "to write its input steps from (add it, or write the manifest by hand)",
            )
        from pinbench.artifacts.hf_processor_file import settings
        from pinbench.authoring.hf_processor import image_input

        try:
            config = settings(files[folder.processor], folder.processor)
        except HfFolderRefused as exc:
            raise NotAModel(path=folder.processor, reason=exc.reason) from None
        image, notes = image_input(config, folder.processor)
        return [image], [{"name": "logits", "type": "classification"}], notes
    from pinbench.authoring.hf_heads import audio_head, text_head, text_head_notes

    audio = audio_head(folder, files)
    if audio is not None:
        return audio
    if folder.tokenizer is None:
        raise NotAModel(
            path=folder.path("config.json"),
            reason=f"{arch} takes text but the folder has no tokenizer.json; pinbench reads "
            "only that tokenizer format (save the tokenizer with a fast tokenizer)",
        )
    unknown = [n for n in folder.input_names if n not in TEXT_INPUTS]
    if unknown:
        raise NotAModel(
            path=folder.path("tokenizer_config.json"),
            reason=f"model input {unknown[0]!r} is not one a tokenize step gives "
            f"({', '.join(TEXT_INPUTS)})",
        )
    length = min(folder.context or DEFAULT_LENGTH, DEFAULT_LENGTH)
    inputs: list[dict[str, Any]] = [
        {
            "name": n,
            "type": "text",
            "element_type": "int64",
            "shape": [length],
            "steps": [
                {"tokenize": {"tokenizer": folder.tokenizer, "output": n, "max_length": length}}
            ],
        }
        for n in folder.input_names
    ]
    notes = [
        f"inputs are padded to {length} tokens and a longer text fails the run: change "
        "max_length (and shape), or add `truncation: true`"
    ]
    if arch.endswith("ForSequenceClassification"):  # each text as the pipeline feeds it
        for spec in inputs:
            del spec["shape"]
            spec["steps"][0]["tokenize"]["padding"] = "longest"
        notes = [
            "each text is fed at its own length, a batch of several padded to its longest "
            f"(the tokenizer's pad, attention_mask 0), as transformers' pipelines feed them; a "
            f"text of more than {length} tokens fails the run: change max_length, or add "
            "`truncation: true`"
        ]
        return inputs, [{"name": "logits", "type": "classification"}], notes
    head = text_head(arch)
    if head is not None:
        task, names = head
        if names == ("start_logits", "end_logits"):  # spans over a question's context
            from pinbench.authoring.hf_heads import question_inputs

            notes = question_inputs(inputs, folder.context)
        return (
            inputs,
            [{"name": n, "type": "tensor"} for n in names],
            notes + text_head_notes(folder, task),
        )
    if "attention_mask" not in folder.input_names:
        raise NotAModel(
            path=folder.path("config.json"),
            reason=f"{arch}: an embedding is pooled over the attention mask, which the "
            "tokenizer does not give",
        )
    pooled = [{"pool": {"mode": "mean", "mask": "attention_mask"}}, {"l2_normalize": {}}]
    notes.append(
        f"{arch} is read as a sentence-embedding model (mean-pooled last_hidden_state); for "
        "another head, edit the outputs"
    )
    return inputs, [{"name": "last_hidden_state", "type": "embedding", "steps": pooled}], notes
