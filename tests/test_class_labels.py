"""Which class a label names (decision 125): class names are any strings, numbers included.
An imagefolder's folder is always a name; a .npy holds indexes; a txt/csv/jsonl label is
looked up among the names exactly when there is a names file, else it is a class index; a
label that names one class and reads as the index of another is refused as ambiguous."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.worker.labels import LabelProblem, read_labels

SAMPLES = ["img/a.png", "img/b.png", "img/c.png"]


def write_labels(tmp_path: Path, fmt: str, values: list[str | int]) -> str:
    """The three samples' labels in ``fmt``; returns the labels file's name."""
    files = [s.removeprefix("img/") for s in SAMPLES]
    if fmt == "class-index-txt":
        name, text = "l.txt", "".join(f"{v}\n" for v in values)
    elif fmt == "class-index-csv":
        name = "l.csv"
        text = "file,label\n" + "".join(f"{f},{v}\n" for f, v in zip(files, values, strict=True))
    else:
        name = "l.jsonl"
        text = "".join(
            json.dumps({"file": f, "label": v}) + "\n" for f, v in zip(files, values, strict=True)
        )
    (tmp_path / name).write_text(text)
    return name


def indexes(
    tmp_path: Path, fmt: str, values: list[str | int], names: list[str] | None
) -> list[int]:
    if names is not None:
        (tmp_path / "names.txt").write_text("".join(f"{n}\n" for n in names))
    path = None if fmt == "imagefolder" else write_labels(tmp_path, fmt, values)
    samples = (
        [f"img/{v}/{s.removeprefix('img/')}" for v, s in zip(values, SAMPLES, strict=True)]
        if fmt == "imagefolder"
        else SAMPLES
    )
    labels = LabelFormat(
        format=fmt,
        path=path,
        names="names.txt" if names is not None else None,
    )
    read = read_labels(labels, samples=samples, count=3, folder="img", read=tmp_path.joinpath)
    assert read is not None
    return [int(i) for i in read.indexes]


def by_the_rule(values: list[str | int], names: list[str] | None) -> list[int]:
    """The rule, computed directly: a label that is a name is that name's line; else an
    index."""
    if names is None:
        return [int(v) for v in values]
    return [names.index(str(v)) if str(v) in names else int(v) for v in values]


TEXT_FORMATS = ["class-index-txt", "class-index-csv", "class-index-jsonl"]

# (why, labels, names)
NAMED: list[tuple[str, list[str | int], list[str] | None]] = [
    ("numbers as names: 180 is class 1, not index 180", ["0", "180", "180"], ["0", "180"]),
    ("a JSON integer is read as its digits", [180, 0, 180], ["0", "180"]),
    ("a number past the class count that is a name", ["90", "270", "90"], ["270", "90"]),
    ("a name that is also its own index", ["1", "0", "1"], ["0", "1"]),
    ("indexes beside a names file of words", ["2", "0", "1"], ["cat", "dog", "bird"]),
    ("names and indexes mixed", ["dog", "0", "2"], ["cat", "dog", "bird"]),
    ("a negative number that is a name", ["-1", "1", "-1"], ["-1", "1"]),
    ("a name with spaces and digits", ["class 2", "0", "class 2"], ["0", "class 2"]),
    ("no names file: class indexes", ["2", "0", "1"], None),
    ("no names file: JSON integers", [2, 0, 1], None),
]


CASES = [
    pytest.param(fmt, values, names, id=f"{fmt}: {why}")
    for why, values, names in NAMED
    for fmt in TEXT_FORMATS
    if fmt == "class-index-jsonl" or all(isinstance(v, str) for v in values)  # JSON integers
]


@pytest.mark.parametrize(("fmt", "values", "names"), CASES)
def test_a_label_is_a_name_when_the_names_file_lists_it(
    tmp_path: Path, fmt: str, values: list[str | int], names: list[str] | None
) -> None:
    assert indexes(tmp_path, fmt, values, names) == by_the_rule(values, names)


# (why, folders, names file, classes by sample)
FOLDERS: list[tuple[str, list[str | int], list[str] | None, list[int]]] = [
    ("folders 0 and 180, no names: sorted folder names", ["180", "0", "180"], None, [1, 0, 1]),
    ("folders 0 and 180 with their names file", ["180", "0", "180"], ["0", "180"], [1, 0, 1]),
    ("a folder named 0 is the name on line 2", ["0", "1", "0"], ["1", "0"], [1, 0, 1]),
    ("folders sort by code point, not by number", ["10", "9", "2"], None, [0, 2, 1]),
]


@pytest.mark.parametrize(
    ("folders", "names", "want"), [c[1:] for c in FOLDERS], ids=[c[0] for c in FOLDERS]
)
def test_an_imagefolder_folder_is_always_a_class_name(
    tmp_path: Path, folders: list[str | int], names: list[str] | None, want: list[int]
) -> None:
    assert indexes(tmp_path, "imagefolder", folders, names) == want
    found = names if names is not None else sorted({str(f) for f in folders})
    assert want == [found.index(str(f)) for f in folders]


# (why, format, labels, names, what the error says)
REFUSED: list[tuple[str, str, list[str | int], list[str] | None, str]] = [
    (
        "a number that names one class and is the index of another",
        "class-index-txt",
        ["0", "0", "0"],
        ["1", "0"],
        "line 1: label '0' is ambiguous: names.txt names class 1 '0', and as a class index "
        "it is class 0 '1'",
    ),
    (
        "likewise in a csv row",
        "class-index-csv",
        ["dog", "1", "dog"],
        ["dog", "2", "1"],
        "row 3: label '1' is ambiguous: names.txt names class 2 '1', and as a class index it "
        "is class 1 '2'",
    ),
    (
        "likewise a JSON integer",
        "class-index-jsonl",
        ["a", 1, "a"],
        ["a", "b", "1"],
        "line 2: label '1' is ambiguous: names.txt names class 2 '1'",
    ),
    (
        "leading zeros read as the index of a class another name claims",
        "class-index-txt",
        ["07", "a", "a"],
        ["a", "7", "c", "d", "e", "f", "g", "h"],
        "line 1: label '07' is ambiguous: names.txt names class 1 '7', and as a class index "
        "it is class 7 'h'",
    ),
    (
        "a number neither a name nor an index below the class count",
        "class-index-txt",
        ["0", "90", "0"],
        ["0", "180"],
        "line 2: label '90' is not a class name in names.txt and, as a class index, out of "
        "range for 2 classes",
    ),
    (
        "a word not among the names",
        "class-index-jsonl",
        ["0", "upside", "0"],
        ["0", "180"],
        "class 'upside' is not in the class-names file names.txt",
    ),
    (
        "a folder not among the names (a folder is never an index)",
        "imagefolder",
        ["0", "1", "0"],
        ["0", "180"],
        "class '1' is not in the class-names file names.txt",
    ),
    (
        "a name without a names file",
        "class-index-csv",
        ["0", "180", "up"],
        None,
        "row 4: label 'up' is not a class index and the dataset has no class-names file",
    ),
    (
        "a negative index without a names file",
        "class-index-txt",
        ["0", "-1", "0"],
        None,
        "line 2: class index -1 is negative",
    ),
    (
        "a long run of digits is too large, read without parsing it whole",
        "class-index-txt",
        ["0", "0" * 30 + "9" * 5000, "0"],
        None,
        "line 2: class index 00000000000000000000 is too large",
    ),
]


@pytest.mark.parametrize(
    ("fmt", "values", "names", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_a_label_that_names_no_class_or_two_is_refused(
    tmp_path: Path, fmt: str, values: list[str | int], names: list[str] | None, message: str
) -> None:
    with pytest.raises(LabelProblem) as caught:
        indexes(tmp_path, fmt, values, names)
    assert message in str(caught.value)
