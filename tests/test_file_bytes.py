"""Raw file bytes as a sample (issue 50): a dataset of files of any kind (``data.format:
files``), each read by the input's ``read_bytes`` step as one row of its bytes, padded with
the declared value or refused when longer (unless ``crop``); an element type that cannot
hold every byte and the pad is refused. End to end, a model that tells PNG files by their
first byte is published, locked and run on a folder of files of several kinds."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from PIL import Image

from pinbench.catalog import frameworks
from pinbench.registry.ports import Input
from pinbench.registry.steps import ReadBytes
from pinbench.worker.file_bytes import read_bytes
from pinbench.worker.pipeline import preprocess_files
from pinbench.worker.pipeline_errors import PipelineError
from tests.helpers import Cli, dump, write_files


def test_a_file_is_its_bytes_padded_cropped_or_refused(tmp_path: Path) -> None:
    data = bytes(range(250, 256)) + b"abc"  # 9 bytes, the high ones included
    (tmp_path / "f").write_bytes(data)
    padded = read_bytes(tmp_path / "f", ReadBytes(length=12, pad=256), name="f")
    assert padded.dtype == np.int32 and padded.tolist() == [[*data, 256, 256, 256]]
    exact = read_bytes(tmp_path / "f", ReadBytes(length=9), name="f")
    assert exact.tolist() == [list(data)]
    cropped = read_bytes(tmp_path / "f", ReadBytes(length=4, crop=True), name="f")
    assert cropped.tolist() == [list(data[:4])]
    with pytest.raises(PipelineError, match="sample f holds more than the 4 bytes read"):
        read_bytes(tmp_path / "f", ReadBytes(length=4), name="f")
    (tmp_path / "empty").write_bytes(b"")
    assert read_bytes(tmp_path / "empty", ReadBytes(length=3, pad=7), name="e").tolist() == [
        [7, 7, 7]
    ]


def spec(element_type: str, pad: int = 0, steps: list[dict[str, Any]] | None = None) -> Input:
    data = {
        "name": "x",
        "element_type": element_type,
        "steps": steps or [{"read_bytes": {"length": 8, "pad": pad}}],
    }
    return msgspec.convert(data, type=Input)


@pytest.mark.parametrize(
    ("element_type", "pad", "accepted"),
    [
        ("uint8", 0, True),
        ("uint8", 256, False),  # magika's pad token needs a wider type
        ("int32", 256, True),
        ("float32", 65535, True),
        ("int8", 0, False),  # bytes above 127
        ("bool", 0, False),
        ("float16", 4096, False),  # not exact past 2048
    ],
)
def test_the_element_type_holds_every_byte_and_the_pad(
    element_type: str, pad: int, accepted: bool
) -> None:
    if accepted:
        spec(element_type, pad)
        return
    with pytest.raises(msgspec.ValidationError, match="does not hold exactly"):
        spec(element_type, pad)


def test_read_bytes_goes_first_on_files_and_nowhere_else(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros(3, np.int32))
    (tmp_path / "b.bin").write_bytes(b"xyz")
    with pytest.raises(PipelineError, match="must begin with a read_bytes step"):
        preprocess_files([("b.bin", tmp_path / "b.bin")], "files", spec("int32", steps=[
            {"expand_dims": {"axis": 0}}, {"read_bytes": {"length": 3}}]))  # fmt: skip
    with pytest.raises(PipelineError, match="reads sample files of any kind"):
        preprocess_files([("a.npy", tmp_path / "a.npy")], "npy-files", spec("int32"))
    got = preprocess_files([("b.bin", tmp_path / "b.bin")], "files", spec("int32"))
    assert got.tolist() == [[120, 121, 122, 0, 0, 0, 0, 0]]


def png_sniffer() -> bytes:
    """``x (N, 16)`` uint8 -> ``(N, 2)`` scores: class 1 where the first byte is PNG's 0x89."""
    from onnx import TensorProto, helper, numpy_helper

    consts: dict[str, np.ndarray[Any, Any]] = {
        "start": np.array([0], np.int64),
        "stop": np.array([1], np.int64),
        "axis": np.array([1], np.int64),
        "png": np.array(0x89, np.float32),
        "one": np.array(1.0, np.float32),
    }
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
            helper.make_node("Slice", ["xf", "start", "stop", "axis"], ["first"]),
            helper.make_node("Equal", ["first", "png"], ["is_png"]),
            helper.make_node("Cast", ["is_png"], ["yes"], to=TensorProto.FLOAT),
            helper.make_node("Sub", ["one", "yes"], ["no"]),
            helper.make_node("Concat", ["no", "yes"], ["scores"], axis=1),
        ],
        "sniffer",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, ["N", 16])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (3, 2), "red").save(buf, format="PNG")
    return buf.getvalue()


def test_a_folder_of_any_files_is_classified_from_their_bytes(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    samples = {
        "files/a.png": (png(), 1),
        "files/b.txt": (b"hello, world\n", 0),
        "files/c": (b"", 0),  # no suffix, no bytes: padded
        "files/d.bin": (bytes([0x89, 0x00]), 1),  # PNG's first byte, not a PNG: still class 1
        "files/e.zip": (b"PK\x03\x04" + b"\x00" * 100, 0),  # longer than 16: cropped
    }
    rows = "".join(f"{p.removeprefix('files/')},{c}\n" for p, (_, c) in samples.items())
    entries = write_files(
        tmp_path / "data",
        {
            **{p: data for p, (data, _) in samples.items()},
            "labels.csv": f"file,label\n{rows}".encode(),
        },
    )
    dataset = {
        "kind": "dataset", "name": "test/files", "version": "1.0.0", "task": "classification",
        "data": {"format": "files", "path": "files"},
        "labels": {"format": "class-index-csv", "path": "labels.csv", "classes": 2},
        "files": entries,
    }  # fmt: skip
    model = {
        "kind": "model", "name": "test/sniffer", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime"},
        "files": write_files(tmp_path / "model", {"sniffer.onnx": png_sniffer()}),
        "inputs": [{"name": "x", "element_type": "uint8", "shape": [16],
                    "steps": [{"read_bytes": {"length": 16, "pad": 0, "crop": True}}]}],
        "outputs": [{"name": "scores", "type": "classification"}],
    }  # fmt: skip
    assert cli("init").code == 0
    assert cli("publish", str(frameworks.write(tmp_path, "onnxruntime"))).code == 0
    for doc, folder in ((dataset, "data"), (model, "model")):
        done = cli("publish", str(dump(tmp_path / folder / "manifest.yaml", doc)))
        assert done.code == 0, done.err
    request = {
        "model": "test/sniffer@1",
        "dataset": "test/files@1",
        "scenario": {"mode": "accuracy"},
    }
    assert cli("lock", str(dump(tmp_path / "request.yaml", request)), "-o", "run.lock").code == 0
    ran = cli("run", "run.lock", "--runner", "local")
    assert ran.code == 0, ran.err
    run_id = json.loads(cli("runs", "list", "--json").out)[0]["id"]
    run = json.loads(cli("runs", "show", run_id, "--json").out)
    assert run["status"] == "succeeded", run["error"]
    assert run["top1"] == 1.0 and run["accuracy_samples_count"] == len(samples)
    rows_seen = [(r["sample"], r["top1"]) for r in run["details"]["samples"]]
    assert rows_seen == [(p, c) for p, (_, c) in samples.items()]
