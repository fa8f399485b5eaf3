"""Token classification (decision 282): entity precision, recall and F1 equal to seqeval's
(its default mode, micro-averaged) on tag sequences Hypothesis chooses and to a direct count on
IOB2 ones; words matched to their first sub-token from the tokenizer's offsets, or refused; the
labels' rules; and a run end to end through the CLI of a tiny ONNX tagger with a WordPiece
tokenizer built here, its figures equal to seqeval's over the tags read with the tokenizer's own
``word_ids``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from seqeval.metrics import f1_score, precision_score, recall_score

from pinbench.tasks.tokens.entities import entity_metrics
from pinbench.tasks.tokens.truth import read_tags
from pinbench.tasks.tokens.words import Unaligned, first_tokens
from pinbench.worker.lines import LabelProblem
from pinbench.worker.undefined import UndefinedMetric
from tests.helpers import Cli, dump, onnx_accuracy_run, write_files

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def sentences(tags: st.SearchStrategy[str]) -> st.SearchStrategy[list[list[str]]]:
    return st.lists(st.lists(tags, min_size=1, max_size=8), min_size=1, max_size=5)


@st.composite
def pairs(draw: Any) -> tuple[list[list[str]], list[list[str]]]:
    truth = draw(sentences(st.sampled_from(TAGS)))
    guess = [draw(st.lists(st.sampled_from(TAGS), min_size=len(s), max_size=len(s))) for s in truth]
    return truth, guess


@settings(max_examples=400, deadline=None)
@given(pairs())
def test_entity_metrics_equal_seqeval_s_default_mode(tagged: Any) -> None:
    truth, guess = tagged
    try:
        found = entity_metrics(truth, guess)
    except UndefinedMetric as exc:
        assert exc.metric in ("entity_recall", "entity_precision")
        return
    assert found["entity_precision"] == precision_score(truth, guess)
    assert found["entity_recall"] == recall_score(truth, guess)
    assert found["entity_f1"] == f1_score(truth, guess)


def iob2(draw_tags: list[str]) -> list[str]:
    """Tags made valid IOB2: an I- that continues no entity of its type becomes B-."""
    out: list[str] = []
    for tag in draw_tags:
        if tag.startswith("I-") and (not out or out[-1] == "O" or out[-1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        out.append(tag)
    return out


def spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """IOB2's entities read directly: a B- and the I-s of its type after it."""
    found, i = set(), 0
    while i < len(tags):
        if tags[i].startswith("B-"):
            j = i + 1
            while j < len(tags) and tags[j] == "I-" + tags[i][2:]:
                j += 1
            found.add((tags[i][2:], i, j - 1))
            i = j
        else:
            i += 1
    return found


@settings(max_examples=300, deadline=None)
@given(pairs())
def test_entity_metrics_equal_a_direct_count_on_iob2(tagged: Any) -> None:
    truth = [iob2(s) for s in tagged[0]]
    guess = [iob2(s) for s in tagged[1]]
    tp = sum(len(spans(t) & spans(g)) for t, g in zip(truth, guess, strict=True))
    true_count = sum(len(spans(t)) for t in truth)
    predicted = sum(len(spans(g)) for g in guess)
    if not true_count or not predicted:
        with pytest.raises(UndefinedMetric):
            entity_metrics(truth, guess)
        return
    found = entity_metrics(truth, guess)
    assert found["entity_precision"] == pytest.approx(tp / predicted, abs=1e-15)
    assert found["entity_recall"] == pytest.approx(tp / true_count, abs=1e-15)
    assert found["entity_f1"] == pytest.approx(2 * tp / (true_count + predicted), abs=1e-15)
    assert found["entities_count"] == true_count


def test_no_entity_is_undefined_not_zero() -> None:
    with pytest.raises(UndefinedMetric) as caught:
        entity_metrics([["O", "O"]], [["B-PER", "O"]])
    assert caught.value.metric == "entity_recall"
    with pytest.raises(UndefinedMetric) as caught:
        entity_metrics([["B-PER", "O"]], [["O", "O"]])
    assert caught.value.metric == "entity_precision"


@pytest.mark.parametrize(
    ("text", "ends", "first"),
    [
        ("anna lives", [0, 4, 10, 0, 0], [1, 2]),  # [CLS] anna lives [SEP] [PAD]
        ("bob visited", [0, 3, 9, 11, 0], [1, 2]),  # visit ##ed: the first sub-token
        ("bostonian x", [0, 3, 6, 9, 11, 0], [1, 4]),
    ],
)
def test_each_word_takes_its_first_sub_token(text: str, ends: list[int], first: list[int]) -> None:
    assert first_tokens(text, np.array(ends, dtype=np.uint32), sample=0) == first


@pytest.mark.parametrize(
    ("text", "ends", "reason"),
    [
        ("anna lives in", [0, 4, 10, 0], "word 2 \\('in'\\) has no token"),  # cut off
        ("anna lives", [0, 10, 0], "word 0 \\('anna'\\) has no token"),  # one token for two
        ("anna lives", [0, 5, 10], "token 1 ends on a space"),
        ("ab cd", [0, 5, 2], "word 0's first token comes after word 1's"),
        ("ab", [0, 9], "token 1 ends past the text"),
    ],
)
def test_ambiguous_alignments_are_refused(text: str, ends: list[int], reason: str) -> None:
    with pytest.raises(Unaligned, match=reason):
        first_tokens(text, np.array(ends, dtype=np.uint32), sample=3)


@pytest.mark.parametrize(
    ("texts", "tags", "reason"),
    [
        (["a b"], "O\nO\n", "2 lines of tags for 1 samples"),
        (["a b"], "O\n", "line 1 has 1 tags for the 2 words"),
        (["a  b"], "O O O\n", "sample 0 has an empty word"),
        (["a b"], "O E-PER\n", "tag 'E-PER' is not O, B-TYPE or I-TYPE"),
        (["a b"], "O B-\n", "tag 'B-' is not"),
    ],
)
def test_tag_files_refused_naming_why(
    tmp_path: Path, texts: list[str], tags: str, reason: str
) -> None:
    (tmp_path / "tags.txt").write_text(tags)
    with pytest.raises(LabelProblem, match=reason):
        read_tags(tmp_path / "tags.txt", where="tags.txt", texts=texts)


# --- end to end ------------------------------------------------------------------------------

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "anna", "lives", "in", "paris", "bob", "visit", "##ed",
    "berlin", "and", "new", "york", "bos", "##ton",
]  # fmt: skip
LABEL_OF = {  # each token's label in the tiny tagger; sub-tokens after the first are not read
    "anna": "B-PER", "bob": "B-PER", "paris": "B-LOC", "berlin": "B-LOC", "new": "B-LOC",
    "york": "I-LOC", "bos": "B-LOC", "##ton": "I-PER", "##ed": "B-PER",
}  # fmt: skip
MAX_LENGTH = 12
SAMPLES = {  # text: its tags as labelled
    "anna lives in paris": "B-PER O O B-LOC",
    "bob visited new york and boston": "B-PER O B-LOC I-LOC O B-LOC",
    "anna and bob visited berlin": "B-PER O B-PER O O",
    "in new york": "O B-LOC B-LOC",
}


def tokenizer_json() -> bytes:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok.to_str().encode()


def tagger() -> bytes:
    table = np.zeros((len(VOCAB), len(TAGS)), dtype=np.float32)
    for i, token in enumerate(VOCAB):
        table[i, TAGS.index(LABEL_OF.get(token, "O"))] = 1.0 + 0.1 * i
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["logits"])],
        "tagger",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["N", MAX_LENGTH])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", MAX_LENGTH, 5])],
        [numpy_helper.from_array(table, name="table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def test_a_token_classification_run_scores_entities_end_to_end(cli: Cli, tmp_path: Path) -> None:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    onnx, tok = tagger(), tokenizer_json()
    model_dir, data_dir = tmp_path / "m", tmp_path / "d"
    model = {
        "kind": "model",
        "name": "text/tiny-tagger",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(
            model_dir,
            {"model.onnx": onnx, "tokenizer.json": tok, "labels.txt": "\n".join(TAGS).encode()},
        ),
        "inputs": [
            {
                "name": "input_ids",
                "type": "text",
                "element_type": "int64",
                "shape": [MAX_LENGTH],
                "steps": [{"tokenize": {"tokenizer": "tokenizer.json", "max_length": MAX_LENGTH}}],
            }
        ],
        "outputs": [{"name": "logits", "type": "tensor", "labels": {"path": "labels.txt"}}],
    }
    texts = list(SAMPLES)
    files = {
        "texts.txt": "".join(t + "\n" for t in texts).encode(),
        "tags.txt": "".join(SAMPLES[t] + "\n" for t in texts).encode(),
    }
    dataset = {
        "kind": "dataset",
        "name": "text/tiny-entities",
        "version": "1.0.0",
        "task": "token-classification",
        "files": write_files(data_dir, files),
        "data": {"format": "text-lines", "path": "texts.txt"},
        "labels": {"format": "iob2-tags", "path": "tags.txt"},
    }
    manifests = [dump(model_dir / "m.yaml", model), dump(data_dir / "d.yaml", dataset)]
    onnx_accuracy_run(cli, tmp_path, manifests, "text/tiny-tagger@1", "text/tiny-entities@1")
    (run,) = json.loads(cli("runs", "list", "--json").out)
    assert run["status"] == "succeeded"

    tokenizer = Tokenizer.from_str(tok.decode())
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]", length=MAX_LENGTH)
    session = ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    truth, guess = [], []
    for text in texts:
        encoding = tokenizer.encode(text)
        (logits,) = session.run(None, {"input_ids": np.array([encoding.ids], dtype=np.int64)})
        firsts: dict[int, int] = {}
        for k, w in enumerate(encoding.word_ids):
            if w is not None:
                firsts.setdefault(w, k)
        guess.append([TAGS[int(np.argmax(logits[0, firsts[w]]))] for w in sorted(firsts)])
        truth.append(SAMPLES[text].split(" "))
    assert run["entity_precision"] == precision_score(truth, guess) == 7 / 9
    assert run["entity_recall"] == recall_score(truth, guess) == 7 / 9
    assert run["entity_f1"] == f1_score(truth, guess)
    assert run["entities_count"] == 9


def test_models_this_task_cannot_read_are_refused_naming_why(tmp_path: Path) -> None:
    from types import SimpleNamespace

    import msgspec

    from pinbench.registry.ports import Input, Output
    from pinbench.tasks.tokens.task import BadTokenScores, NotATokenModel, TokenClassification

    (tmp_path / "labels.txt").write_text("O\nB-PER\nI-PER\n")
    (tmp_path / "bioes.txt").write_text("O\nS-PER\n")
    ids = {
        "name": "input_ids",
        "type": "text",
        "element_type": "int64",
        "shape": [4],
        "steps": [{"tokenize": {"tokenizer": "tokenizer.json", "max_length": 4}}],
    }

    def context(output: dict[str, Any], inputs: list[dict[str, Any]]) -> Any:
        model = SimpleNamespace(
            outputs=[msgspec.convert(output, Output)],
            inputs=[msgspec.convert(i, Input) for i in inputs],
        )
        paths = {"labels.txt": tmp_path / "labels.txt", "bioes.txt": tmp_path / "bioes.txt"}
        return SimpleNamespace(model=model, model_ref="m@1", accuracy=True, model_paths=paths)

    logits: dict[str, Any] = {"name": "logits", "labels": {"path": "labels.txt"}}
    cases: list[tuple[dict[str, Any], list[dict[str, Any]], str]] = [
        ({"name": "logits"}, [ids], "declares 0 outputs with a `labels` file"),
        ({**logits, "type": "classification", "steps": [{"softmax": {}}]}, [ids], "steps"),
        (logits, [], "no input of token ids"),
        ({**logits, "labels": {"path": "bioes.txt"}}, [ids], "label 'S-PER' .* is not O"),
    ]
    for output, inputs, reason in cases:
        with pytest.raises(NotATokenModel, match=reason):
            TokenClassification().prepare(context(output, inputs))
    scorer = TokenClassification().prepare(context(logits, [ids]))
    assert scorer is not None
    with pytest.raises(BadTokenScores, match=r"shape \[2, 4, 5\] .* here \[2, 4, 3\]"):
        scorer.check({"logits": np.zeros((2, 4, 5))}, {}, 2)
