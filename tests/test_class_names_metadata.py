"""Class names read from an ONNX model's metadata (issue 50): ``labels: {metadata: names}``
reads ultralytics' ``names`` entry (a dict literal of index to name), a list literal or one
name per line, as bytes, never running anything in the model or in the value; a key missing
or given twice, a value too large, indexes that are not 0..n-1 and names given twice are
refused naming the key, at publish as at a run. End to end (``tests/test_detection_runs.py``)
NudeNet's YOLOv8 export scores with the names its own metadata holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from pinbench.registry.late_fields import drop_unset_outputs
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.ports import LabelsRef, Output
from pinbench.tasks.class_names import MAX_BYTES, ClassNamesProblem, class_names
from tests.helpers import Cli, dump, write_files
from tests.test_text_recognition import onnx_with_metadata

BY_METADATA = LabelsRef(metadata="names")

READ = [
    # (why, the value, the names)
    (
        "ultralytics' names: Python's repr of a dict",
        "{0: 'person', 1: 'bicycle', 2: 'car'}",
        ["person", "bicycle", "car"],
    ),
    ("a dict out of order is read by its indexes", "{1: 'b', 0: 'a'}", ["a", "b"]),
    ("JSON: the indexes as strings", '{"0": "cat", "1": "dog"}', ["cat", "dog"]),
    ("a list literal", "['x', \"y's\", 'z']", ["x", "y's", "z"]),
    ("one name per line", "alpha\nbeta gamma\n", ["alpha", "beta gamma"]),
    ("names as written: quotes, commas, unicode", "{0: 'a, b', 1: 'größe'}", ["a, b", "größe"]),
]


@pytest.mark.parametrize(("value", "names"), [c[1:] for c in READ], ids=[c[0] for c in READ])
def test_class_names_are_read_from_the_models_metadata(
    tmp_path: Path, value: str, names: list[str]
) -> None:
    files = onnx_with_metadata(tmp_path / "m.onnx", [("stride", "32"), ("names", value)])
    assert class_names(BY_METADATA, files, output="y") == names


REFUSED = [
    # (why, metadata entries, what the error says)
    ("no such key", [("stride", "32")], "the model has no such key (its metadata keys: stride)"),
    (
        "the key twice: which is meant is ambiguous",
        [("names", "['a']"), ("names", "['b']")],
        "the key is given 2 times",
    ),
    ("an index missing", [("names", "{0: 'a', 2: 'c'}")], "class 1 has none"),
    ("an index twice", [("names", "{0: 'a', 0: 'b'}")], "class 0 is named twice"),
    ("a negative index", [("names", "{-1: 'a'}")], "maps whole numbers 0..n-1 to strings"),
    ("a name that is not a string", [("names", "{0: 1}")], "maps whole numbers 0..n-1 to strings"),
    ("a list of other things", [("names", "['a', 2]")], "not a list of strings"),
    ("not a literal", [("names", "{0: 'a',")], "it starts as a dict but is not one"),
    ("two classes of one name", [("names", "['a', 'b', 'a']")], "classes 0 and 2 are both 'a'"),
    ("an empty name", [("names", "['a', ' ']")], "class 1's name is empty"),
    ("nothing named", [("names", "{}")], "it names no class"),
    ("too large", [("names", "x" * (MAX_BYTES + 1))], f"more than the {MAX_BYTES} read"),
    (
        "code is data, never run",
        [("names", "{0: __import__('pathlib').Path('ran').touch()}")],
        "maps whole numbers 0..n-1 to strings",
    ),
]


@pytest.mark.parametrize(
    ("props", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_metadata_that_cannot_name_the_classes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, props: list[tuple[str, str]], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    files = onnx_with_metadata(tmp_path / "m.onnx", props)
    with pytest.raises(ClassNamesProblem, match=message.replace("(", r"\(").replace(")", r"\)")):
        class_names(BY_METADATA, files, output="y")
    assert not (tmp_path / "ran").exists()


LABELS = [
    # (why, the labels section, the error)
    ("neither a file nor a key", {}, "either a `path` among the model's files or an ONNX"),
    ("both", {"path": "l.txt", "metadata": "names"}, "one of the two"),
    ("a sha256 of no file", {"metadata": "names", "sha256": "0" * 64}, "have no file"),
    ("an empty key", {"metadata": ""}, "length >= 1"),
]


@pytest.mark.parametrize(("labels", "message"), [c[1:] for c in LABELS], ids=[c[0] for c in LABELS])
def test_a_labels_section_says_one_place(labels: dict[str, Any], message: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=message):
        msgspec.convert({"name": "y", "labels": labels}, type=Output)


def test_a_metadata_key_is_a_late_field_and_onnx_only() -> None:
    """Left out of the stored data while unset: a labelled output published before the field
    keeps its digest."""
    data = msgspec.to_builtins([Output(name="y", labels=LabelsRef(path="l.txt"))])
    drop_unset_outputs(data)
    assert data[0]["labels"] == {"path": "l.txt", "sha256": None}
    doc = {
        "kind": "model", "name": "t/m", "version": "1.0.0", "format": "torchscript",
        "framework": {"name": "torch"}, "files": [{"path": "m.pt", "sha256": "0" * 64}],
        "inputs": [{"name": "x"}], "outputs": [{"name": "y", "labels": {"metadata": "names"}}],
    }  # fmt: skip
    with pytest.raises(ManifestError, match="the model's format is torchscript"):
        parse_manifest(doc)


def test_publish_reads_the_names_as_a_run_does(cli: Cli, tmp_path: Path) -> None:
    assert cli("init").code == 0

    def publish(version: str, props: list[tuple[str, str]]) -> tuple[int, str]:
        folder = tmp_path / version
        folder.mkdir()
        onnx_with_metadata(folder / "m.onnx", props)
        doc = {
            "kind": "model", "name": "t/named", "version": version, "format": "onnx",
            "framework": {"name": "onnxruntime"},
            "files": write_files(folder, {"m.onnx": (folder / "m.onnx").read_bytes()}),
            "inputs": [{"name": "x"}],
            "outputs": [{"name": "y", "labels": {"metadata": "names"}}],
        }  # fmt: skip
        done = cli("publish", str(dump(folder / "model.yaml", doc)))
        return done.code, done.err

    code, err = publish("1.0.0", [("names", "{0: 'a', 0: 'b'}")])
    assert code == 1 and "ONNX metadata 'names' of m.onnx" in err and "named twice" in err, err
    assert "Traceback" not in err
    code, err = publish("1.0.1", [("names", "{0: 'a', 1: 'b'}")])
    assert code == 0, err
    shown = cli("show", "model/t/named@1.0.1", "--json")
    assert (
        '"labels": {"metadata": "names", "path": null, "sha256": null}'
        in shown.out.replace("\n", "")
        or '"metadata": "names"' in shown.out
    )
