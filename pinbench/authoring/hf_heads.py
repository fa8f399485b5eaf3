"""A Hugging Face folder's head read as what it is (issue 65, item 5; decision 281): a speech
model that takes a waveform (``Wav2Vec2FeatureExtractor``: ``input_values``) and gives CTC
logits or class scores, and the text heads that are not embeddings (token classification,
extractive question answering). Only JSON is read; nothing of the model is run.

- ``*ForCTC``: input ``input_values`` written from ``preprocessor_config.json``
  (``decode_audio`` at its ``sampling_rate``, ``zero_mean_unit_var`` where ``do_normalize``,
  each clip at its own length, a batch padded with its ``padding_value``: ``pad_batch``) and
  ``attention_mask`` where the pipeline passes one (``_waveform_inputs``), output ``logits``
  of ``type: text`` decoded by CTC over the tokenizer's ``vocab.json`` (the blank: ``config.json``'s
  ``pad_token_id``) with the tokenizer's ``word_delimiter_token`` decoded as a space: a
  text-recognition dataset of audio files scores it;
- ``*ForSequenceClassification`` / ``*ForAudioClassification`` over such an extractor: the same
  input, output ``logits`` of ``type: classification``;
- ``*ForXVector`` over such an extractor: the same input, output ``embeddings`` of ``type:
  embedding`` (a speaker-verification dataset scores it); a bare ``*Model`` of the wav2vec 2.0
  family (its ``config.json`` has ``conv_dim``): the same input, ``last_hidden_state`` (each
  frame's state) of ``type: tensor``;
- ``*ForTokenClassification``: the text inputs, output ``logits`` ``(N, T, labels)``, task
  ``token-classification``; ``*ForQuestionAnswering``: ``start_logits`` and ``end_logits``,
  task ``question-answering``. The task is written as the manifest's ``attributes.task``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.artifacts.hf_folder import HfFolder, HfFolderRefused
from pinbench.authoring.errors import NotAModel

WAVEFORM_EXTRACTORS = ("Wav2Vec2FeatureExtractor",)
"""Feature extractors whose ``input_values`` are the waveform itself (normalised or not)."""
AUDIO_HEADS = ("ForCTC", "ForAudioClassification", "ForSequenceClassification", "ForXVector")
AUDIO_ENCODER_KEY = "conv_dim"
"""A ``config.json`` key of the wav2vec 2.0 family's convolutional feature encoder (wav2vec 2.0,
HuBERT, WavLM, UniSpeech, data2vec-audio): a bare ``*Model`` with it takes a waveform."""
TEXT_HEADS = {
    "ForTokenClassification": ("token-classification", ("logits",)),
    "ForQuestionAnswering": ("question-answering", ("start_logits", "end_logits")),
}
"""Each text head pinbench reads: its task and its outputs."""
MAX_RATE = 768_000


Ports = tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]


def audio_head(folder: HfFolder, files: dict[str, Path]) -> Ports | None:
    """Inputs, outputs and notes of a speech model over a waveform, or None where the folder
    is not one (its architecture names no audio head, or no extractor reads waveforms)."""
    arch = folder.architecture
    extractor = _extractor(folder, files)
    bare = arch.endswith("Model") and AUDIO_ENCODER_KEY in folder.config
    if not arch.endswith(AUDIO_HEADS) and not bare:
        return None
    if extractor is None:
        if arch.endswith("ForSequenceClassification") and AUDIO_ENCODER_KEY not in folder.config:
            return None  # a text classifier
        raise NotAModel(
            path=folder.processor or folder.path("config.json"),
            reason=f"{arch} takes audio, but no preprocessor_config.json (or "
            f"processor_config.json) of a "
            f"{' or '.join(WAVEFORM_EXTRACTORS)} says how its input_values are made from a "
            "waveform (another extractor's features are not computed by pinbench's steps: "
            "write a preprocess function, docs/processing.md)",
        )
    waveform, notes = _waveform_inputs(
        extractor, folder.processor or "", ctc=arch.endswith("ForCTC")
    )
    if arch.endswith("ForCTC"):
        output, said = _ctc_output(folder, files)
        notes += said
        notes.append(
            f"{arch} transcribes speech by CTC: run it on a text-recognition dataset whose "
            "samples are WAV files (data.format audio, labels text-csv/text-jsonl): CER, WER"
        )
        return waveform, [output], notes
    if arch.endswith("ForXVector"):
        notes.append(
            f"{arch} gives one speaker embedding per clip (`embeddings`, the x-vector): run it "
            "on a speaker-verification dataset of WAV files (labels speaker-trials): EER, minDCF"
        )
        return waveform, [{"name": "embeddings", "type": "embedding"}], notes
    if bare:
        notes.append(
            f"{arch} gives each frame's hidden state (`last_hidden_state`: frames x "
            "hidden_size), read as a tensor: a clip's embedding pools the frames, which the "
            "declarative steps do not do over a waveform (a `postprocess` function does: "
            "docs/processing.md)"
        )
        return waveform, [{"name": "last_hidden_state", "type": "tensor"}], notes
    labels = folder.config.get("id2label")
    count = len(labels) if isinstance(labels, dict) else "its"
    notes.append(
        f"{arch} classifies each clip into {count} classes (config.json's id2label): run it "
        "on a classification dataset of WAV files (data.format audio)"
    )
    return waveform, [{"name": "logits", "type": "classification"}], notes


def _extractor(folder: HfFolder, files: dict[str, Path]) -> dict[str, Any] | None:
    if folder.processor is None:
        return None
    from pinbench.artifacts.hf_processor_file import settings

    try:
        config = settings(files[folder.processor], folder.processor)
    except HfFolderRefused as exc:
        raise NotAModel(path=folder.processor, reason=exc.reason) from None
    if config.get("feature_extractor_type") not in WAVEFORM_EXTRACTORS:
        return None
    return config


def _waveform_inputs(
    pre: dict[str, Any], label: str, *, ctc: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """``input_values`` as a transformers pipeline feeds them (issue 86): each clip through
    the extractor alone (normalised over its own samples where ``do_normalize``), at its own
    length; a batch of several padded at the end to its longest with ``padding_value``, as the
    pipeline's collate pads it; and ``attention_mask`` where the pipeline passes one (the
    extractor returns one, ``return_attention_mask``; or a CTC head, for which the speech
    recognition pipeline always asks for it)."""
    rate = pre.get("sampling_rate")
    if isinstance(rate, bool) or not isinstance(rate, int) or not 0 < rate <= MAX_RATE:
        raise NotAModel(
            path=label,
            reason=f"`sampling_rate: {rate!r:.40}` must be an integer Hz, 1 to {MAX_RATE}",
        )
    if pre.get("feature_size", 1) != 1:
        raise NotAModel(path=label, reason="`feature_size` must be 1: one waveform per clip")
    normalize = pre.get("do_normalize", True)
    pad = pre.get("padding_value", 0.0)
    if not isinstance(normalize, bool) or not isinstance(pad, (int, float)) or not -1 <= pad <= 1:
        raise NotAModel(
            path=label,
            reason="`do_normalize` must be true or false and `padding_value` a number in [-1, 1]",
        )
    if pre.get("padding_side", "right") != "right":
        raise NotAModel(
            path=label,
            reason=f"`padding_side: {pre.get('padding_side')!r:.20}`: pinbench pads a batch's "
            "clips at their end (right)",
        )
    steps: list[dict[str, Any]] = [{"decode_audio": {"channel": "mix", "rate": rate}}]
    if normalize:
        steps.append({"zero_mean_unit_var": {}})
    masked = pre.get("return_attention_mask") is True or ctc
    notes = [
        f"input_values: each WAV file at {rate} Hz (resample others: a `resample: {{rate: "
        f"{rate}}}` step after decode_audio), "
        + (
            "made zero-mean and unit-variance over its own samples (do_normalize), "
            if normalize
            else ""
        )
        + f"fed at its own length; a batch of several clips is padded at the end with "
        f"{float(pad)} to its longest, as transformers' pipelines batch them"
        + (
            ", with attention_mask 1 over each clip and 0 over its padding"
            if masked
            else " (the extractor returns no attention mask: the model sees the padding)"
        )
    ]
    values = {
        "name": "input_values",
        "element_type": "float32",
        "steps": steps,
        "pad_batch": {"value": float(pad)},
    }
    if not masked:
        return [values], notes
    return [
        values,
        {"name": "attention_mask", "element_type": "int32", "mask_of": "input_values"},
    ], notes


def _ctc_output(folder: HfFolder, files: dict[str, Path]) -> tuple[dict[str, Any], list[str]]:
    """``logits`` decoded by CTC over ``vocab.json``, the blank ``pad_token_id``."""
    from pinbench.artifacts.hf_json import word_delimiter

    vocab = folder.path("vocab.json")
    if vocab not in files:
        raise NotAModel(
            path=folder.path("config.json"),
            reason=f"{folder.architecture} gives CTC logits over its tokenizer's vocabulary: "
            "the folder needs the tokenizer's vocab.json (save the processor with it)",
        )
    blank = folder.config.get("pad_token_id")
    if isinstance(blank, bool) or not isinstance(blank, int) or blank < 0:
        raise NotAModel(
            path=folder.path("config.json"),
            reason="`pad_token_id` (CTC's blank, as the model's CTC loss reads it) must be a "
            "class index",
        )
    ctc: dict[str, Any] = {"blank": blank, "alphabet": {"vocab": vocab}}
    notes: list[str] = []
    try:
        named = word_delimiter(files)
    except HfFolderRefused as exc:
        raise NotAModel(path=exc.path, reason=exc.reason) from None
    if named is not None:
        ctc["word_delimiter"] = named[1]
        notes.append(
            f"the tokenizer's word delimiter {named[1]!r} ({named[0]}) is decoded as a space, "
            "the text stripped at its ends, as the tokenizer decodes"
        )
    return {"name": "logits", "type": "text", "ctc": ctc}, notes


def text_head(arch: str) -> tuple[str, tuple[str, ...]] | None:
    """The task and outputs of a text head that is not an embedding model, or None."""
    return next((v for k, v in TEXT_HEADS.items() if arch.endswith(k)), None)


def text_head_notes(folder: HfFolder, task: str) -> list[str]:
    from pinbench.tasks.registry import TASKS

    labels = folder.config.get("id2label")
    what = {
        "token-classification": "labels each token (logits (N, T, labels), config.json's "
        f"id2label: {len(labels) if isinstance(labels, dict) else '?'} labels)",
        "question-answering": "gives each token's answer-start and answer-end scores "
        "(start_logits, end_logits); the question and the context are one tokenized pair",
    }[task]
    notes = [f"{folder.architecture} {what}: the task is {task} (attributes.task)"]
    if task not in TASKS:
        notes.append(f"this pinbench has no task {task!r} yet: no run scores these outputs")
    return notes


QA_LENGTH, QA_STRIDE, QA_QUERY = 384, 128, 64
"""MLPerf's BERT: features of 384 tokens, windows 128 context tokens apart, questions cut to 64
tokens (decision 283)."""


def question_inputs(inputs: list[dict[str, Any]], context: int | None) -> list[str]:
    """The text inputs of a question-answering head made MLPerf's (``QA_LENGTH``...), scaled
    down to a shorter context window (``max_position_embeddings``); the notes that say so."""
    length = min(context or QA_LENGTH, QA_LENGTH)
    stride = min(QA_STRIDE, max(1, length // 3))
    query = min(QA_QUERY, max(1, length // 6))
    for spec in inputs:
        spec["shape"] = [length]
        step = spec["steps"][0]["tokenize"]
        step.update(max_length=length, doc_stride=stride, max_query_length=query)
    return [
        f"each question and its context are one pair of {length} tokens (a feature); a longer "
        f"context is cut into windows {stride} context tokens apart and a question to its "
        f"first {query} tokens, as MLPerf's BERT does at {QA_LENGTH}, {QA_STRIDE} and "
        f"{QA_QUERY}: run it on a question-answering dataset (data.format questions-jsonl, "
        "labels squad-answers)"
    ]


MAX_LABEL_CHARS = 256


def label_names(
    folder: HfFolder,
    path: Path,
    base: Path,
    hub: tuple[str, str] | None,
    beside: dict[Path, bytes] | None,
) -> dict[str, Any] | None:
    """A file of ``config.json``'s ``id2label`` names, one a line in id order (what a
    token-classification run reads as the output's ``labels``), to be written beside the
    manifest (``beside``): its file entry, or None where it cannot be (a Hub snapshot, whose
    files are its commit's; no ``beside``; an id2label that is not ids 0..n-1 to names)."""
    import hashlib

    from pinbench.authoring.listing import Relative

    labels = folder.config.get("id2label")
    if hub is not None or beside is None or not isinstance(labels, dict) or not labels:
        return None
    names = [labels.get(str(i)) for i in range(len(labels))]
    if not all(
        isinstance(n, str) and n and "\n" not in n and "\r" not in n and len(n) <= MAX_LABEL_CHARS
        for n in names
    ):
        raise NotAModel(
            path=folder.path("config.json"),
            reason="`id2label` must map the ids 0 to n - 1 each to a name of one line (at most "
            f"{MAX_LABEL_CHARS} characters)",
        )
    data = "".join(f"{n}\n" for n in names).encode("utf-8")
    target = base / f"{path.name}-labels.txt"
    if target.exists() and target.read_bytes() != data:
        raise NotAModel(
            path=str(target),
            reason="the label names would be written here, where another file is: move it",
        )
    beside[target] = data
    return {
        "path": Relative(base)(target),
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
    }
