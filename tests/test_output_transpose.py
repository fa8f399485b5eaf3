"""An output's ``transpose`` step (issue 50): a model whose answer is not batch-first, such as
a CTC recogniser exported time-first ``(T, N, C)``, is read as its task reads outputs after
the declared perm, with no edit to the model file. The step is the output's first, it is
refused on generation outputs and with a streamed input, its perm must be a permutation, and
an answer of another rank fails the run before anything is timed. End to end, an ONNX model
that gives time-first CTC scores is published unmodified, run in batches of two (the answers
split along their batch axis, axis 1) and decodes every text."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
import yaml
from PIL import Image

from pinbench.catalog import frameworks
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.output_steps import OutputStepRefused, check_output_steps
from pinbench.registry.ports import Output
from pinbench.worker.output_axes import (
    TransposeMismatch,
    batch_axes,
    one_sample,
    perms,
    reorder,
)
from tests.helpers import Cli, dump, write_files

RNG = np.random.default_rng(50)


def output(data: dict[str, Any]) -> Output:
    return msgspec.convert(data, type=Output)


# ---------------------------------------------------------------- the step itself


def test_reorder_is_numpy_transpose_and_the_batch_axis_is_the_perm_s_first() -> None:
    outs = [
        output(
            {
                "name": "ctc",
                "type": "text",
                "ctc": {"blank": 0, "alphabet": {"file": "k"}},
                "steps": [{"transpose": {"perm": [1, 0, 2]}}],
            }
        ),
        output({"name": 3, "steps": [{"transpose": {"perm": [2, 0, 1, 3]}}]}),
        output({"name": "plain"}),
    ]
    assert perms(outs) == {"ctc": (1, 0, 2), "3": (2, 0, 1, 3)}
    assert batch_axes(outs) == {"ctc": 1, "3": 2}
    time_first = RNG.normal(size=(7, 2, 5))
    four = RNG.normal(size=(3, 4, 2, 6))
    plain = RNG.normal(size=(2, 9))
    got = reorder({"ctc": time_first, "3": four, "plain": plain}, perms(outs))
    assert np.array_equal(got["ctc"], np.transpose(time_first, (1, 0, 2)))
    assert got["ctc"].shape == (2, 7, 5) and got["3"].shape == (2, 3, 4, 6)
    assert np.array_equal(got["3"], np.einsum("abcd->cabd", four))
    assert got["plain"] is plain
    # a batch's answer split along the batch axis, then reordered: each sample's own rows
    for i in range(2):
        sample = reorder({"ctc": one_sample(time_first, i, 1)}, perms(outs))["ctc"]
        assert np.array_equal(sample[0], time_first[:, i, :])


def test_an_answer_of_another_rank_is_refused_naming_the_output() -> None:
    found = perms([output({"name": "y", "steps": [{"transpose": {"perm": [1, 0, 2]}}]})])
    with pytest.raises(TransposeMismatch, match=r"output 'y' has shape \[4, 5\] \(2 axes\)"):
        reorder({"y": np.zeros((4, 5))}, found)


BAD_STEPS = [
    # (why, output, message)
    (
        "not a permutation: an axis twice",
        {"name": "y", "steps": [{"transpose": {"perm": [0, 0, 2]}}]},
        "transpose perm must be a permutation of 0..2",
    ),
    (
        "not a permutation: an axis past the rank",
        {"name": "y", "steps": [{"transpose": {"perm": [0, 3]}}]},
        "transpose perm must be a permutation of 0..1",
    ),
    (
        "one axis cannot be reordered",
        {"name": "y", "steps": [{"transpose": {"perm": [0]}}]},
        "at least 2 axes",
    ),
    ("an axis past NumPy's 64", {"name": "y", "steps": [{"transpose": {"perm": [64, 0]}}]}, "63"),
]


@pytest.mark.parametrize(
    ("data", "message"), [c[1:] for c in BAD_STEPS], ids=[c[0] for c in BAD_STEPS]
)
def test_a_perm_that_is_not_a_permutation_is_refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=message):
        output(data)


REFUSED = [
    (
        "after another step: it reorders the raw answer",
        {
            "name": "y",
            "type": "classification",
            "steps": [{"softmax": {}}, {"transpose": {"perm": [1, 0]}}],
        },
        "an output's transpose is its first step",
    ),
    (
        "twice",
        {"name": "y", "steps": [{"transpose": {"perm": [1, 0]}}, {"transpose": {"perm": [1, 0]}}]},
        "an output's transpose is its first step, and it has one",
    ),
    (
        "on generation logits, which the generator reads itself",
        {"name": "logits", "type": "generation", "steps": [{"transpose": {"perm": [1, 0, 2]}}]},
        "declares a `transpose` step, which is not applied: the text-generation task",
    ),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_transpose_nothing_would_apply_as_declared_is_refused(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(OutputStepRefused, match=message):
        check_output_steps([output(data)])


def test_a_transposed_output_of_a_streamed_model_is_refused() -> None:
    doc = {
        "kind": "model", "name": "t/streamed", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": [{"path": "m.onnx", "sha256": "0" * 64}],
        "inputs": [{"name": "x", "stream": {"chunk": 4}}],
        "outputs": [{"name": "y", "type": "binary", "steps": [{"transpose": {"perm": [1, 0]}}]}],
    }  # fmt: skip
    with pytest.raises(ManifestError, match="declares a transpose step but input 'x' is streamed"):
        parse_manifest(doc)


# ---------------------------------------------------------------- end to end

ALPHABET = "abc"
TEXTS = ["abc", "cab", "ba", "c", "aacb"]  # "aacb": a blank between the two a's keeps both
WIDTH = 10  # time steps


def classes_of(text: str) -> list[int]:
    """Each time step's class (blank 0, then the alphabet's), a blank between repeats."""
    steps: list[int] = []
    for ch in text:
        k = ALPHABET.index(ch) + 1
        if steps and steps[-1] == k:
            steps.append(0)
        steps.append(k)
    return steps + [0] * (WIDTH - len(steps))


def one_hot_png(text: str) -> bytes:
    """A ``(classes, T)`` grey image: column t white at row ``class(t)``, black elsewhere."""
    pixels = np.zeros((len(ALPHABET) + 1, WIDTH), dtype=np.uint8)
    for t, k in enumerate(classes_of(text)):
        pixels[k, t] = 255
    buf = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(buf, format="PNG")
    return buf.getvalue()


def time_first_model() -> bytes:
    """``x (N, 1, C, T)`` -> ``scores (T, N, C)``: the image's columns as time steps, rows as
    class scores, time first, as a recogniser exported with PyTorch's CTC layout gives it."""
    from onnx import TensorProto, helper

    c = len(ALPHABET) + 1
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        [
            helper.make_node("Squeeze", ["x", "axes"], ["nct"]),
            helper.make_node("Transpose", ["nct"], ["scores"], perm=[2, 0, 1]),
        ],
        "time_first",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, c, WIDTH])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [WIDTH, "N", c])],
        [axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def test_a_time_first_ctc_output_is_read_through_its_transpose(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = "".join(f"{i}.png,{t}\n" for i, t in enumerate(TEXTS))
    write_files(
        tmp_path,
        {
            **{f"lines/{i}.png": one_hot_png(t) for i, t in enumerate(TEXTS)},
            "texts.csv": f"file,text\n{rows}".encode(),
        },
    )
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "onnxruntime"))).code == 0
    made = cli(
        *("manifest", "dataset", "lines", "--labels-format", "text-csv", "--labels"),
        *("texts.csv", "--name", "test/lines", "-o", "lines.yaml"),
    )
    assert made.code == 0, made.err
    assert cli("publish", "lines.yaml").code == 0
    files = write_files(
        tmp_path / "rec",
        {"rec.onnx": time_first_model(), "keys.txt": "".join(c + "\n" for c in ALPHABET).encode()},
    )

    def manifest(version: str, steps: list[dict[str, Any]]) -> Path:
        doc = {
            "kind": "model", "name": "test/time-first", "version": version, "format": "onnx",
            "framework": {"name": "onnxruntime"}, "files": files,
            "inputs": [{"name": "x", "type": "image", "shape": [1, len(ALPHABET) + 1, WIDTH],
                        "steps": [{"decode": {"color_mode": "grayscale"}},
                                  {"normalize": {"scale": 1 / 255}}, {"layout": {"to": "NCHW"}}]}],
            "outputs": [{"name": "scores", "type": "text", "steps": steps,
                         "ctc": {"blank": 0, "alphabet": {"file": "keys.txt"}}}],
        }  # fmt: skip
        return dump(tmp_path / "rec" / f"{version}.yaml", doc)

    def run(version: str) -> tuple[int, str, dict[str, Any]]:
        request = {
            "model": f"test/time-first@{version}",
            "dataset": "test/lines@1",
            "batch_size": 2,  # the answers are split into samples along axis 1, not 0
            "scenario": {"mode": "accuracy"},
        }
        lock = f"{version}.lock"
        locked = cli("lock", str(dump(tmp_path / "request.yaml", request)), "-o", lock)
        assert locked.code == 0, locked.err
        ran = cli("run", lock, "--runner", "local")
        listed = json.loads(cli("runs", "list", "--json").out)
        shown = cli("runs", "show", listed[0]["id"], "--json")
        return ran.code, ran.err, json.loads(shown.out)

    transposed = manifest("1.0.0", [{"transpose": {"perm": [1, 0, 2]}}])
    assert cli("publish", str(transposed)).code == 0
    published = yaml.safe_load(cli("show", "model/test/time-first@1.0.0", "--json").out)
    assert published["manifest"]["outputs"][0]["steps"] == [{"transpose": {"perm": [1, 0, 2]}}]
    code, err, record = run("1.0.0")
    assert code == 0, err
    assert record["status"] == "succeeded", record["error"]
    assert [row["text"] for row in record["details"]["samples"]] == TEXTS
    assert record["cer"] == 0.0 and record["exact_match"] == 1.0
    assert record["accuracy_samples_count"] == len(TEXTS)

    # without the step the time axis is read as the batch's: refused before anything is timed
    assert cli("publish", str(manifest("1.0.1", []))).code == 0
    code, err, record = run("1.0.1")
    assert code == 1 and "its first axis must be the batch's 2 samples" in err, err
    assert record["status"] == "failed" and "cer" not in record
    # a perm of another rank: the run fails on its first answer, naming the output
    assert cli("publish", str(manifest("1.0.2", [{"transpose": {"perm": [1, 0]}}]))).code == 0
    code, err, record = run("1.0.2")
    assert code == 1 and "output 'scores' has shape [10, 2, 4] (3 axes)" in err, err
    assert "Traceback" not in err and record["status"] == "failed"
