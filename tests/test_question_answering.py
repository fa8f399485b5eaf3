"""Extractive question answering (decision 283): SQuAD v1.1's exact match and F1 equal to the
official script's (vendored from MLPerf's BERT, ``tests/squad_reference.py``) and to
torchmetrics' ``squad`` on texts Hypothesis chooses; the features of questions about contexts
a seeded generator writes equal to MLPerf's ``convert_examples_to_features`` (BERT's slow
tokenizer over the same vocabulary), windows and max-context flags included; each question's
answer from random logits equal to MLPerf's ``write_predictions``; the files' and settings'
refusals; and a ``BertForQuestionAnswering`` folder from ``manifest model`` to a recorded run
whose figures are the reference pipeline's over transformers' own logits."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinbench.registry.steps import Tokenize
from pinbench.tasks.question_answering.spans import QuestionFeatures, answer, max_context
from pinbench.tasks.question_answering.squad import squad_scores
from pinbench.tasks.question_answering.truth import read_answers
from pinbench.worker.lines import LabelProblem
from pinbench.worker.qa_features import encode_questions
from pinbench.worker.questions import Question, read_questions
from pinbench.worker.tokenizing import TokenizeProblem
from tests import squad_reference

ref: Any = squad_reference  # vendored as it is, untyped

# --- the scores ------------------------------------------------------------------------------

PIECES = ["a", "an", "the", "The", "An", "cat", "Cat", "dog", "x", "café", "Zürich", "naïve",
          "ß", "日本", "1,000", "9.5", "'s", "-", ",", ".", "!", "“", "”", "(", ")",
          "—"]  # fmt: skip
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\u00a0", ""]


@st.composite
def texts(draw: Any) -> str:
    words = draw(st.lists(st.sampled_from(PIECES), min_size=0, max_size=6))
    gaps = draw(st.lists(st.sampled_from(SPACES), min_size=len(words), max_size=len(words)))
    return "".join(w + g for w, g in zip(words, gaps, strict=True))


@st.composite
def scored(draw: Any) -> tuple[list[str], list[list[str]]]:
    count = draw(st.integers(1, 6))
    answers = [draw(texts()) for _ in range(count)]
    references = [draw(st.lists(texts(), min_size=1, max_size=3)) for _ in range(count)]
    for i in range(count):  # an answer that is one of its references, now and then
        if draw(st.booleans()):
            references[i][0] = answers[i] + draw(st.sampled_from(["", ".", " the", "  "]))
    return answers, references


@settings(max_examples=150, deadline=None)
@given(scored())
def test_scores_equal_the_official_script_and_torchmetrics(case: Any) -> None:
    from torchmetrics.functional.text import squad

    answers, references = case
    found = squad_scores(answers, references)
    data = [
        {
            "paragraphs": [
                {
                    "qas": [
                        {"id": str(i), "answers": [{"text": t} for t in refs]}
                        for i, refs in enumerate(references)
                    ]
                }
            ]
        }
    ]
    official = ref.evaluate(data, {str(i): a for i, a in enumerate(answers)})
    assert found["squad_exact_match_pct"] == official["exact_match"]
    assert found["squad_f1_pct"] == official["f1"]
    assert found["questions_count"] == len(answers)
    texts = [*answers, *(t for refs in references for t in refs)]
    if any(not ref.normalize_answer(t) for t in texts):
        return  # torchmetrics scores F1 of texts that normalise to nothing as SQuAD v2 does
    theirs = squad(
        [{"prediction_text": a, "id": str(i)} for i, a in enumerate(answers)],
        [
            {"answers": {"answer_start": [0] * len(r), "text": r}, "id": str(i)}
            for i, r in enumerate(references)
        ],
    )
    assert found["squad_exact_match_pct"] == pytest.approx(float(theirs["exact_match"]), abs=1e-4)
    assert found["squad_f1_pct"] == pytest.approx(float(theirs["f1"]), abs=1e-4)


@pytest.mark.parametrize(
    ("answer", "reference", "em", "f1"),
    [
        ("The Cat!", "cat", 100.0, 100.0),  # case, article, punctuation
        ("a cat sat", "the cat", 0.0, 100 * 2 * (1 / 2) * 1 / (1 / 2 + 1)),  # partial: 2/3
        ("Zürich", "zürich", 100.0, 100.0),  # lower-cased, accents kept
        ("“cat”", "cat", 0.0, 0.0),  # curly quotes are not ASCII punctuation
        ("the", "a", 100.0, 0.0),  # both normalise to nothing: equal, yet no word in common
    ],
)
def test_normalisation_as_the_official_script_does_it(
    answer: str, reference: str, em: float, f1: float
) -> None:
    found = squad_scores([answer], [[reference]])
    assert found["squad_exact_match_pct"] == em
    assert found["squad_f1_pct"] == pytest.approx(f1, abs=1e-12)


# --- features and spans against MLPerf's reference ---------------------------------------------


@pytest.fixture(scope="module")
def vocab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The catalog's BERT uncased WordPiece tokenizer as a ``vocab.txt`` (BERT's slow tokenizer
    reads that) and the whole words it holds."""
    from pinbench.catalog.minilm import TOKENIZER

    table = json.loads(Path(TOKENIZER).read_text())["model"]["vocab"]
    words = sorted(table, key=table.__getitem__)
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("".join(w + "\n" for w in words))
    whole = [w for w in words if w.isascii() and w.isalpha() and len(w) > 2]
    return path, whole


EXTRA = ["café", "Zürich", "naïve", "résumé", "1,000", "9.5", "U.S.", "don't", "(see", "it)"]


def writes(rng: random.Random, whole: list[str], count: int) -> str:
    """``count`` words: vocabulary words, some capitalised, some glued to another (split into
    word pieces), some with punctuation, a few with accents; one space between words."""
    out = []
    for _ in range(count):
        roll = rng.random()
        word = rng.choice(EXTRA) if roll < 0.08 else rng.choice(whole)
        if roll > 0.85:
            word += rng.choice(whole)
        if rng.random() < 0.2:
            word = word.capitalize()
        if rng.random() < 0.15:
            word += rng.choice([",", ".", "'s", ";", "?"])
        out.append(word)
    return " ".join(out)


def examples(seed: int, whole: list[str], count: int) -> list[Question]:
    rng = random.Random(seed)
    return [
        Question(
            writes(rng, whole, rng.randint(1, 14)) + "?", writes(rng, whole, rng.randint(1, 90))
        )
        for _ in range(count)
    ]


def mlperf_features(
    questions: list[Question], vocab: Path, max_length: int, stride: int, query: int
) -> list[Any]:
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    # the pure-Python WordPiece tokenizer, as MLPerf's BertTokenizer was (no ``tokenizers``)
    tokenizer = BertTokenizerLegacy(str(vocab), do_lower_case=True)  # type: ignore[no-untyped-call]
    data = [
        {
            "paragraphs": [
                {"context": q.context, "qas": [{"id": str(i), "question": q.question}]}
                for i, q in enumerate(questions)
            ]
        }
    ]
    out: list[Any] = []
    ref.convert_examples_to_features(
        ref.read_squad_examples(data), tokenizer, max_length, stride, query, out.append
    )
    return out


SETTINGS = [  # (max_length, doc_stride, max_query_length): why
    (48, 16, 12),  # windows overlap: most contexts give several features
    (40, 64, 8),  # a stride past the room: windows side by side
    (64, 1, 30),  # one token apart: many windows, max context decides every token
    (384, 128, 64),  # MLPerf's: one feature each
]


@pytest.mark.parametrize(("max_length", "stride", "query"), SETTINGS)
def test_features_equal_mlperf_s(
    vocab: tuple[Path, list[str]], max_length: int, stride: int, query: int
) -> None:
    from pinbench.catalog.minilm import TOKENIZER

    questions = examples(max_length + stride, vocab[1], 30)
    step = Tokenize(
        tokenizer="tokenizer.json",
        max_length=max_length,
        doc_stride=stride,
        max_query_length=query,
    )
    ours = encode_questions(questions, step, tokenizer=Path(TOKENIZER), pad_token=None)
    theirs = mlperf_features(questions, vocab[0], max_length, stride, query)
    assert ours.example is not None and ours.context is not None
    assert list(ours.example) == [f.example_index for f in theirs]
    assert ours.ids.tolist() == [f.input_ids for f in theirs]
    assert ours.type_ids.tolist() == [f.segment_ids for f in theirs]
    assert ours.attention_mask.tolist() == [f.input_mask for f in theirs]
    for q in range(len(questions)):
        rows = np.flatnonzero(ours.example == q)
        flags = max_context(ours.context[rows])
        for row, f in zip(rows, (theirs[int(r)] for r in rows), strict=True):
            held = np.flatnonzero(ours.context[row])
            assert held.tolist() == sorted(f.token_to_orig_map)
            k = row - rows[0]
            assert flags[k, held].tolist() == [f.token_is_max_context[p] for p in held]
    if max_length < 384:
        assert len(theirs) > len(questions) + 10  # several features for many questions


@pytest.mark.parametrize(("max_length", "stride", "query"), SETTINGS[:3])
def test_answers_from_random_logits_equal_mlperf_s(
    vocab: tuple[Path, list[str]], max_length: int, stride: int, query: int
) -> None:
    from pinbench.catalog.minilm import TOKENIZER

    questions = examples(7 * max_length + stride, vocab[1], 40)
    step = Tokenize(
        tokenizer="tokenizer.json", max_length=max_length, doc_stride=stride, max_query_length=query
    )
    ours = encode_questions(questions, step, tokenizer=Path(TOKENIZER), pad_token=None)
    theirs = mlperf_features(questions, vocab[0], max_length, stride, query)
    rng = np.random.default_rng(max_length)
    shape = (len(theirs), max_length)
    # one decimal: equal logits, so ties are broken as MLPerf breaks them
    starts = np.round(rng.normal(size=shape), 1).astype(np.float32)
    ends = np.round(rng.normal(size=shape), 1).astype(np.float32)
    data = [
        {
            "paragraphs": [
                {"context": q.context, "qas": [{"id": str(i), "question": q.question}]}
                for i, q in enumerate(questions)
            ]
        }
    ]
    results = [
        ref.RawResult(f.unique_id, starts[i].astype(np.float64).tolist(), ends[i].tolist())
        for i, f in enumerate(theirs)
    ]
    expected = ref.write_predictions(ref.read_squad_examples(data), theirs, results, 20, 30, True)
    assert ours.context is not None and ours.example is not None
    for q, question in enumerate(questions):
        rows = np.flatnonzero(ours.example == q)
        got, _ = answer(
            question.context,
            QuestionFeatures(
                starts[rows].astype(np.float64),
                ends[rows].astype(np.float64),
                ours.context[rows],
                ours.starts[rows],  # type: ignore[index]
                ours.ends[rows],  # type: ignore[index]
            ),
        )
        assert got == expected[str(q)], q


def test_a_question_with_no_span_among_the_n_best_is_answered_empty_as_mlperf_does() -> None:
    context = np.zeros((1, 24), dtype=np.uint32)
    context[0, 22] = 1  # one context token, at position 22: "ab"
    starts, ends = np.zeros((1, 24), dtype=np.uint32), np.zeros((1, 24), dtype=np.uint32)
    ends[0, 22] = 2
    logits = np.concatenate([np.ones(22), [-1.0, -1.0]])[None]  # the 20 best: positions 0-19
    found = answer("ab", QuestionFeatures(logits, logits, context, starts, ends))
    assert found == ("empty", False)
    logits[0, 22] = 2.0  # now among them
    assert answer("ab", QuestionFeatures(logits, logits, context, starts, ends)) == ("ab", True)


# --- what is refused ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        ('["x"]\n', "1 lines of answers for 2 questions"),  # one line per question
        ('["x"]\n[]\n', "question 1 has no answer; .*v2's unanswerable"),  # SQuAD v2: refused
        ('["x"]\n{"text": "y"}\n', "line 2: not a JSON array"),
        ('["x"]\n["  "]\n', "answer 0 must be non-blank text"),
        ('["x"]\n[' + ",".join(['"a"'] * 65) + "]\n", "65 answers, more than 64"),
        ('["x"]\n["' + "a" * 4097 + '"]\n', "at most 4096 characters"),
    ],
)
def test_answer_files_are_refused_naming_why(tmp_path: Path, lines: str, reason: str) -> None:
    (tmp_path / "a.jsonl").write_text(lines)
    with pytest.raises(LabelProblem, match=reason):
        read_answers(tmp_path / "a.jsonl", where="a.jsonl", count=2)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"question": "q", "context": "c", "answers": ["c"]}', "unknown key 'answers'"),
        ('{"question": " ", "context": "c"}', "`question` must be non-blank text"),
        ('{"question": "q"}', "`context` must be non-blank text"),
        ('{"question": "q", "context": "' + "c" * 262_145 + '"}', "more than 262144"),
        ('{"question": "q", "context": "c", "id": 3}', "`id` must be text"),
        ('["q", "c"]', "not a JSON object"),
    ],
)
def test_question_files_are_refused_naming_why(tmp_path: Path, line: str, reason: str) -> None:
    (tmp_path / "q.jsonl").write_text(line + "\n")
    with pytest.raises(LabelProblem, match=reason):
        read_questions(tmp_path / "q.jsonl", where="q.jsonl")


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        ({"max_length": 8, "max_query_length": 5}, "holds its 5 tokens .* no context token"),
        ({"max_length": 64, "doc_stride": 1}, "gives 1... windows .* more than the 1024"),
        ({"max_length": 64, "truncation": True}, "takes no `truncation`"),
    ],
)
def test_settings_that_cannot_make_features_are_refused(step: dict[str, Any], reason: str) -> None:
    from pinbench.catalog.minilm import TOKENIZER

    long = Question("what is it in the end here?", " ".join(["word"] * 1100))
    made = Tokenize(tokenizer="tokenizer.json", **step)
    with pytest.raises(TokenizeProblem, match=reason):
        encode_questions([long], made, tokenizer=Path(TOKENIZER), pad_token=None)


# --- end to end ------------------------------------------------------------------------------


def squad_json(questions: list[Question], answers: list[list[str]] | None = None) -> list[Any]:
    """SQuAD's JSON layout of ``questions`` (one paragraph each), as MLPerf's scripts read it."""
    return [
        {
            "paragraphs": [
                {
                    "context": q.context,
                    "qas": [
                        {
                            "id": str(i),
                            "question": q.question,
                            "answers": [{"text": t} for t in (answers[i] if answers else [])],
                        }
                    ],
                }
                for i, q in enumerate(questions)
            ]
        }
    ]


def test_a_question_answering_folder_runs_end_to_end_with_mlperf_s_figures(
    tmp_path: Path, vocab: tuple[Path, list[str]]
) -> None:
    """`manifest model` on a BertForQuestionAnswering folder (random weights from a seed, the
    catalog's BERT tokenizer) to a recorded run: its exact match and F1 are what MLPerf's
    reference pipeline gives over transformers' own logits (its features from BERT's
    pure-Python tokenizer, its write_predictions, SQuAD's evaluate script)."""
    import shutil

    import torch
    import transformers

    import pinbench
    from pinbench.authoring.model import model_manifest
    from pinbench.catalog import frameworks
    from pinbench.catalog.minilm import TOKENIZER
    from tests.helpers import dump, write_files

    folder = tmp_path / "bert-qa"
    torch.manual_seed(3)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    transformers.BertForQuestionAnswering(config).eval().save_pretrained(folder)  # type: ignore[no-untyped-call]
    shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
    names = ["input_ids", "token_type_ids", "attention_mask"]
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_input_names": names}))
    authored = model_manifest([folder], base=tmp_path, name="text/bert-qa")
    settings = [s["steps"][0]["tokenize"] for s in authored.data["inputs"]]
    # MLPerf's 384, 128 and 64 scaled to the model's 64 positions
    assert {(s["max_length"], s["doc_stride"], s["max_query_length"]) for s in settings} == {
        (64, 21, 10)
    }
    dump(tmp_path / "model.yaml", authored.data)

    questions = examples(11, vocab[1], 12)
    features = mlperf_features(questions, vocab[0], 64, 21, 10)
    assert len(features) > 2 * len(questions)  # most contexts take several windows
    model = transformers.BertForQuestionAnswering.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    results = []
    with torch.inference_mode():
        for f in features:
            out = model(
                input_ids=torch.tensor([f.input_ids]),
                token_type_ids=torch.tensor([f.segment_ids]),
                attention_mask=torch.tensor([f.input_mask]),
            )
            starts, ends = (x[0].double().tolist() for x in (out.start_logits, out.end_logits))
            results.append(ref.RawResult(f.unique_id, starts, ends))
    examples_ = ref.read_squad_examples(squad_json(questions))
    predicted = ref.write_predictions(examples_, features, results, 20, 30, True)
    rng = random.Random(5)
    answers = [  # the model's own answer for some, a word of the context or none for others
        [predicted[str(i)] + rng.choice(["", "."])]
        if i % 3 == 0
        else [rng.choice(q.context.split()), "no such thing"]
        for i, q in enumerate(questions)
    ]
    official = ref.evaluate(squad_json(questions, answers), predicted)
    assert 0 < official["exact_match"] < 100

    lines = {
        "questions.jsonl": "".join(
            json.dumps({"question": q.question, "context": q.context, "id": str(i)}) + "\n"
            for i, q in enumerate(questions)
        ).encode(),
        "answers.jsonl": "".join(json.dumps(a) + "\n" for a in answers).encode(),
    }
    dataset = dump(
        tmp_path / "d" / "d.yaml",
        {
            "kind": "dataset",
            "name": "text/squad-like",
            "version": "1.0.0",
            "task": "question-answering",
            "files": write_files(tmp_path / "d", lines),
            "data": {"format": "questions-jsonl", "path": "questions.jsonl"},
            "labels": {"format": "squad-answers", "path": "answers.jsonl"},
        },
    )
    registry = pinbench.Registry(tmp_path / "home")
    registry.init()
    registry.publish(frameworks.write(tmp_path, "transformers"))
    registry.publish(tmp_path / "model.yaml")
    registry.publish(dataset)
    request = {"model": "text/bert-qa@1", "dataset": "text/squad-like@1"}
    lock = registry.lock({**request, "scenario": {"mode": "accuracy"}})[0]
    run = lock.run(runner="local")
    assert run.status == "succeeded", run.info.get("error")
    assert run.metrics["squad_exact_match_pct"] == official["exact_match"]
    assert run.metrics["squad_f1_pct"] == official["f1"]
    assert run.metrics["questions_count"] == len(questions)
    assert run.metrics["features_count"] == len(features)
    shown = run.info["details"]["question_answering"]["answers"]
    assert [a["answer"] for a in shown] == [predicted[str(i)] for i in range(len(questions))]


def _scorer_context(tmp_path: Path, outputs: list[dict[str, Any]], ids: bool) -> Any:
    from types import SimpleNamespace

    import msgspec

    from pinbench.registry.ports import Input, Output

    step = {"tokenize": {"tokenizer": "tokenizer.json", "max_length": 8, "max_query_length": 2}}
    ids_input = {"name": "input_ids", "type": "text", "element_type": "int64", "shape": [8]}
    inputs = [{**ids_input, "steps": [step]}]
    model = SimpleNamespace(
        outputs=[msgspec.convert(o, Output) for o in outputs],
        inputs=[msgspec.convert(i, Input) for i in inputs] if ids else [],
    )
    return SimpleNamespace(model=model, model_ref="m@1", accuracy=True, model_paths={})


START = {"name": "start_logits", "type": "tensor"}
END = {"name": "end_logits", "type": "tensor"}


@pytest.mark.parametrize(
    ("outputs", "ids", "reason"),
    [
        ([START], True, "want one output named \\*start_logits and one named \\*end_logits"),
        ([START, END, {**END, "name": "x_end_logits"}], True, "want one output"),  # ambiguous
        ([START, {**END, "steps": [{"softmax": {}}]}], True, "declare steps"),
        ([START, END], False, "no input of token ids"),
    ],
)
def test_models_this_task_cannot_read_are_refused_naming_why(
    tmp_path: Path, outputs: list[dict[str, Any]], ids: bool, reason: str
) -> None:
    from pinbench.tasks.question_answering.task import (
        NotAQuestionAnsweringModel,
        QuestionAnswering,
    )

    with pytest.raises(NotAQuestionAnsweringModel, match=reason):
        QuestionAnswering().prepare(_scorer_context(tmp_path, outputs, ids))


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (np.zeros((2, 9), dtype=np.float32), r"shape \[2, 9\] .* here \[2, 8\]"),  # not T wide
        (np.zeros((2, 8), dtype=np.int64), "of floats"),  # class ids, not logits
        (np.full((2, 8), np.nan, dtype=np.float32), "a NaN or an infinity"),
    ],
)
def test_logits_that_cannot_be_read_are_refused_on_the_first_answer(
    tmp_path: Path, answer: Any, reason: str
) -> None:
    from pinbench.tasks.question_answering.task import BadSpanScores, QuestionAnswering

    scorer = QuestionAnswering().prepare(_scorer_context(tmp_path, [START, END], True))
    assert scorer is not None
    fine = np.zeros((2, 8), dtype=np.float32)
    with pytest.raises(BadSpanScores, match=reason):
        scorer.check({"start_logits": fine, "end_logits": answer}, {}, 2)


def test_the_host_refuses_logits_of_token_ids_it_did_not_make(tmp_path: Path) -> None:
    """An evaluator that fed the model other ids (another tokenizer, a shifted row) answers
    for other tokens: its logits cannot be placed in the context, and the run fails."""
    from types import SimpleNamespace

    from pinbench.catalog.minilm import TOKENIZER
    from pinbench.tasks.question_answering.task import BadSpanScores, QuestionAnswering

    context = _scorer_context(tmp_path, [START, END], True)
    context.model_paths = {"tokenizer.json": Path(TOKENIZER)}
    questions = [Question("who?", "anna and bob"), Question("where?", "in paris")]
    context.samples = SimpleNamespace(questions=questions, truth=[["anna"], ["paris"]])
    scorer = QuestionAnswering().prepare(context)
    assert scorer is not None and scorer.rows() == 2
    encoded = scorer.features()  # type: ignore[attr-defined]
    logits = np.zeros((1, 8), dtype=np.float32)
    answers: dict[int, Any] = {i: {"start_logits": logits, "end_logits": logits} for i in range(2)}
    fed = encoded.ids.astype(np.int64)
    scored = scorer.score(answers, {"input_ids": fed})
    assert scored.metrics["questions_count"] == 2
    fed[1, 3] += 1
    with pytest.raises(BadSpanScores, match="feature 1's token ids differ"):
        scorer.score(answers, {"input_ids": fed})


def test_windows_are_refused_on_samples_that_are_not_questions() -> None:
    import msgspec

    from pinbench.registry.ports import Input
    from pinbench.worker.pipeline_errors import PipelineError
    from pinbench.worker.text_inputs import preprocess_texts

    spec = msgspec.convert(
        {
            "name": "input_ids",
            "type": "text",
            "element_type": "int64",
            "steps": [{"tokenize": {"tokenizer": "t.json", "max_length": 8, "doc_stride": 4}}],
        },
        Input,
    )
    with pytest.raises(PipelineError, match="doc_stride and max_query_length window a question"):
        preprocess_texts(["a text"], spec, {})


def test_a_tokenize_step_without_windows_is_stored_as_before() -> None:
    """The two fields are late: a manifest published before them keeps its digest."""
    from pinbench.registry.late_fields import drop_unset_inputs

    step = {"tokenizer": "t.json", "max_length": 8, "doc_stride": None, "max_query_length": None}
    inputs: list[Any] = [{"name": "ids", "steps": [{"tokenize": step}]}]
    drop_unset_inputs(inputs)
    assert inputs[0]["steps"][0]["tokenize"] == {"tokenizer": "t.json", "max_length": 8}


def test_manifest_dataset_writes_a_question_answering_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``manifest dataset questions.jsonl --labels answers.jsonl`` (issue 73, item 7): a
    questions file is read as questions, its answers as SQuAD's, the task question answering;
    the manifest publishes. Without the answers, or with class names, it is refused."""
    from tests.helpers import in_process_cli

    rows = [("Who wrote it?", "It was written by Ada."), ("Where?", "In London, in 1843.")]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({"question": q, "context": c}) + "\n" for q, c in rows))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps(["Ada"]) + "\n" + json.dumps(["London", "in London"]) + "\n")
    cli = in_process_cli(monkeypatch, capsys, tmp_path / "home")
    out = tmp_path / "qa.yaml"
    done = cli("manifest", "dataset", str(questions), "--labels", str(answers), "-o", str(out))
    assert done.code == 0, done.err
    import yaml

    manifest = yaml.safe_load(out.read_text())
    assert manifest["task"] == "question-answering" and manifest["samples"] == 2
    assert manifest["data"] == {"format": "questions-jsonl", "path": "questions.jsonl"}
    assert manifest["labels"] == {"format": "squad-answers", "path": "answers.jsonl"}
    assert cli("init").code == 0
    published = cli("publish", str(out))
    assert published.code == 0, published.err
    for extra, said in (
        ([], "give --labels answers.jsonl"),
        (["--names", str(answers)], "no --names"),
    ):
        args = ["--labels", str(answers)] if extra else []
        refused = cli(
            "manifest", "dataset", str(questions), *args, *extra, "-o", str(tmp_path / "x.yaml")
        )
        assert refused.code == 1 and said in refused.err and "Traceback" not in refused.err
    assert not (tmp_path / "x.yaml").exists()
