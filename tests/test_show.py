"""``pinbench show`` prints what a manifest declares, not only its files; ``pinbench digest
--json`` gives what its text gives, as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinbench.cli.manifest_text import manifest_lines
from tests.helpers import Cli, dump, model_manifest, sha, tiny_onnx, write_files


def test_show_prints_a_models_inputs_steps_and_outputs_and_a_datasets_labels(
    cli: Cli, tmp_path: Path
) -> None:
    assert cli("init").code == 0
    files = write_files(tmp_path / "m", {"tiny.onnx": tiny_onnx(b"show")})
    model = model_manifest("test/tiny", "1.0.0", files) | {
        "inputs": [
            {
                "name": "x",
                "element_type": "float32",
                "shape": [10],
                "steps": [
                    {"normalize": {"mean": [0.5], "std": [2.0]}},
                    {"dtype": {"to": "float32"}},
                ],
            }
        ],
        "outputs": [
            {
                "name": "logits",
                "type": "classification",
                "steps": [{"softmax": {}}, {"topk": {"k": 3}}],
            }
        ],
    }
    assert cli("publish", str(dump(tmp_path / "m" / "m.yaml", model))).code == 0
    data = write_files(tmp_path / "d", {"x.npy": b"samples", "y.npy": b"labels"})
    dataset = {
        "kind": "dataset",
        "name": "test/numbers",
        "version": "1.0.0",
        "files": data,
        "samples": 4,
        "labels": {"format": "class-index-npy", "path": "y.npy", "classes": 10},
    }
    assert cli("publish", str(dump(tmp_path / "d" / "d.yaml", dataset))).code == 0

    shown = cli("show", "model/test/tiny@1.0.0")
    assert shown.code == 0, shown.err
    lines = [line.rstrip() for line in shown.out.splitlines()]
    start = lines.index("inputs")
    assert lines[start : start + 8] == [
        "inputs",
        "  x  tensor  float32  shape [10]",  # name, type, element type, shape
        "    1. normalize  mean=[0.5] std=[2.0]",  # the steps in the order they run
        "    2. dtype  to=float32",
        "outputs",
        "  logits  classification",
        "    1. softmax  axis=-1",  # as stored: the default the schema filled in
        "    2. topk  k=3",
    ]
    assert lines[start + 8] == "files"
    assert f"{sha(tiny_onnx(b'show'))}" in lines[start + 9]

    dataset_shown = cli("show", "dataset/test/numbers@1.0.0")
    assert dataset_shown.code == 0, dataset_shown.err
    assert "task classification" in dataset_shown.out
    assert "labels class-index-npy  path=y.npy classes=10" in dataset_shown.out
    assert "(4 samples)" in dataset_shown.out


@pytest.mark.parametrize(
    ("manifest", "wanted"),
    [
        (  # an output's task section, with its nested parameters
            {
                "kind": "model",
                "outputs": [
                    {
                        "name": "boxes",
                        "type": "detection",
                        "detection": {
                            "layout": "boxes-scores",
                            "box_format": "xyxy",
                            "nms": {"iou": 0.5},
                        },
                    }
                ],
            },
            [
                "  boxes  detection",
                '    detection  layout=boxes-scores box_format=xyxy nms={"iou": 0.5}',
            ],
        ),
        (  # a field this module does not know is printed by its name, not dropped
            {"kind": "model", "inputs": [{"name": "state", "shape": [2, 1, 128], "value": 0}]},
            ["  state  tensor  float32  shape [2, 1, 128]", "    value  0"],
        ),
        (  # a segmentation dataset: its masks folder, classes, ignored value
            {
                "kind": "dataset",
                "task": "segmentation",
                "data": {"format": "images", "path": "images"},
                "labels": {"format": "masks", "path": "masks", "classes": 3, "ignore_index": 255},
            },
            [
                "task segmentation",
                "data images images",
                "labels masks  path=masks classes=3 ignore_index=255",
            ],
        ),
        ({"kind": "framework"}, []),  # nothing but its files to show
    ],
)
def test_manifest_lines(manifest: dict[str, Any], wanted: list[str]) -> None:
    lines = manifest_lines(manifest)
    for line in wanted:
        assert line in lines, lines


def test_digest_json_is_the_text_as_data(cli: Cli, tmp_path: Path) -> None:
    files = {"a.bin": b"first file", "b/c.bin": b"the second"}
    write_files(tmp_path, files)
    paths = [str(tmp_path / name) for name in files]
    text = cli("digest", *paths)
    as_json = cli("digest", *paths, "--json")
    assert (text.code, as_json.code) == (0, 0), (text.err, as_json.err)
    assert json.loads(as_json.out) == {
        "files": [
            {"path": path, "size": len(data), "sha256": sha(data)}
            for path, data in zip(paths, files.values(), strict=True)
        ],
        "total": {"files": 2, "size": sum(len(d) for d in files.values())},
    }
    assert text.out.splitlines() == [
        f"{sha(data)}  {len(data)}  {path}"
        for path, data in zip(paths, files.values(), strict=True)
    ]
    missing = cli("digest", paths[0], str(tmp_path / "nope"), "--json")
    assert (missing.code, missing.out) == (1, "")  # nothing printed for half the files
    assert "nope: not a file" in missing.err


def test_show_prints_file_paths_as_they_are_never_as_markup(cli: Cli, tmp_path: Path) -> None:
    """A path is data: Rich read ``[red]`` in one as a style (dropped from the line) and
    ``[/z]`` as a closing tag (a MarkupError traceback instead of the artifact)."""
    assert cli("init").code == 0
    names = ["[red]x.npy", "y[/z].npy"]
    data = write_files(tmp_path, {names[0]: b"samples", names[1]: b"labels"})
    dataset = {
        "kind": "dataset",
        "name": "test/brackets",
        "version": "1.0.0",
        "files": data,
        "samples": 4,
        "labels": {"format": "class-index-npy", "path": names[1], "classes": 10},
    }
    assert cli("publish", str(dump(tmp_path / "d.yaml", dataset))).code == 0
    shown = cli("show", "dataset/test/brackets@1.0.0")
    assert shown.code == 0, shown.err
    assert f"  {sha(b'samples')}             7  {names[0]}" in shown.out.splitlines()
    assert f"path={names[1]}" in shown.out


def test_recorded_texts_print_as_they_are_in_runs_show(capsys: pytest.CaptureFixture[str]) -> None:
    """A text-recognition run's rows hold the dataset's texts and the model's: ``[/x]`` in a
    reference was a MarkupError when ``runs show`` printed its predictions table."""
    from pinbench.cli.run_view import _predictions_table
    from pinbench.console import out

    row = {"sample": "a.png", "truth": "[/x] a", "text": "[red]b", "right": False}
    table = _predictions_table({"samples": [row]})
    assert table is not None
    out().print(table)
    assert "[/x] a  [red]b  x" in capsys.readouterr().out
