"""Line-based files (text samples, labels, class names, pairs, JSON lines, CSV) are split by
one reader: lines end at LF only (a CR before it dropped), so a lone CR, a form feed or U+2028
inside a line never makes a sample, a label or a pair of its own; a line over 1 MiB, a CSV
header naming a column twice and a JSON object giving a key twice are refused, naming the
file and the line (decision 114)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.tasks.similarity.pairs import read_pairs
from pinbench.worker.datasets import read_text_lines
from pinbench.worker.labels import LabelProblem, parse_class_names, read_labels
from pinbench.worker.lines import MAX_LINE_BYTES, read_lines

# (why, the file's bytes, its lines)
SPLITS: list[tuple[str, bytes, list[str]]] = [
    ("LF ends a line", b"a\nb\n", ["a", "b"]),
    ("CRLF is one line end", b"a\r\nb\r\n", ["a", "b"]),
    ("a last line without its end", b"a\nb", ["a", "b"]),
    ("a lone CR stays inside its line", b"a\rb\nc\n", ["a\rb", "c"]),
    ("a form feed stays inside its line", b"a\x0cb\nc\n", ["a\x0cb", "c"]),
    ("U+2028 stays inside its line", "a\u2028b\nc\n".encode(), ["a\u2028b", "c"]),
    ("U+0085 (NEL) stays inside its line", "a\x85b\nc\n".encode(), ["a\x85b", "c"]),
    (
        "vertical tab, file and group separators too",
        b"a\x0bb\x1cc\x1dd\x1ee\n",
        ["a\x0bb\x1cc\x1dd\x1ee"],
    ),
    ("a CR before a lone CR is kept", b"a\r\r\n", ["a\r"]),
    ("a UTF-8 byte-order mark is not text", b"\xef\xbb\xbfa\nb\n", ["a", "b"]),
    ("blank lines at the end are no lines", b"a\n\n\r\n \n", ["a"]),
    ("an empty file has none", b"", []),
]


@pytest.mark.parametrize(("raw", "lines"), [c[1:] for c in SPLITS], ids=[c[0] for c in SPLITS])
def test_lines_end_at_line_feeds_only(tmp_path: Path, raw: bytes, lines: list[str]) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(raw)
    assert read_lines(path, "f.txt") == lines


def test_text_samples_keep_their_count_whatever_they_hold(tmp_path: Path) -> None:
    """A sentence may hold a lone CR, a form feed or U+2028 without becoming two samples; CRLF
    is one line end; blank lines at the end are no samples."""
    path = tmp_path / "s.txt"
    path.write_bytes("one\rstill one\r\ntwo\x0cstill two\nthree\u2028still three\n\n".encode())
    assert read_text_lines(path, where="s.txt") == [
        "one\rstill one",
        "two\x0cstill two",
        "three\u2028still three",
    ]


def _labels(tmp_path: Path, text: bytes, *, count: int, names: bytes | None = None) -> list[int]:
    (tmp_path / "labels.txt").write_bytes(text)
    if names is not None:
        (tmp_path / "names.txt").write_bytes(names)
    labels = LabelFormat(
        format="class-index-txt",
        path="labels.txt",
        names="names.txt" if names is not None else None,
    )
    read = read_labels(labels, samples=None, count=count, folder=None, read=tmp_path.joinpath)
    assert read is not None
    return [int(i) for i in read.indexes]


def test_a_label_file_with_a_form_feed_keeps_one_label_a_line(tmp_path: Path) -> None:
    """``str.splitlines`` made three labels (one blank) out of these two lines."""
    assert _labels(tmp_path, b"1\x0c\n0\n", count=2) == [1, 0]


def test_a_class_name_may_hold_a_form_feed_or_a_line_separator(tmp_path: Path) -> None:
    names = "tabby\x0ccat\nsiamese\u2028cat\nrobin\n".encode()
    assert parse_class_names(names.decode(), path="names.txt").names == [
        "tabby\x0ccat",
        "siamese\u2028cat",
        "robin",
    ]
    assert _labels(tmp_path, b"2\n0\n", count=2, names=names) == [2, 0]


def test_a_pair_line_with_a_lone_cr_is_one_line(tmp_path: Path) -> None:
    """Universal newlines read the first line as two pairs, and the run scored them."""
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"0\t1\t4.0\r2\t3\t1.0\n2\t3\t1.0\n")
    with pytest.raises(LabelProblem, match="line 1: want i<TAB>j<TAB>score"):
        read_pairs(path, where="pairs.tsv", count=4)
    path.write_bytes(b"i\tj\tscore\r\n0\t1\t4.0\r\n2\t3\t1.0\r\n")
    pairs = read_pairs(path, where="pairs.tsv", count=4)
    assert pairs.first.tolist() == [0, 2] and pairs.gold.tolist() == [4.0, 1.0]


def _per_file(tmp_path: Path, name: str, text: bytes, fmt: str) -> list[int]:
    (tmp_path / name).write_bytes(text)
    labels = LabelFormat(format=fmt, path=name)
    read = read_labels(
        labels,
        samples=["img/a.png", "img/b.png"],
        count=2,
        folder="img",
        read=tmp_path.joinpath,
    )
    assert read is not None
    return [int(i) for i in read.indexes]


# (why, file name, its bytes, labels format, what the error says: file, line and what)
REFUSED: list[tuple[str, str, bytes, str, str]] = [
    (
        "a csv header naming a column twice",
        "l.csv",
        b"file,label,label\na.png,0,1\nb.png,1,0\n",
        "class-index-csv",
        "l.csv: line 1: the header names column 'label' more than once",
    ),
    (
        "a csv header naming the file column twice",
        "l.csv",
        b"file,label,file\na.png,0,b.png\nb.png,1,a.png\n",
        "class-index-csv",
        "l.csv: line 1: the header names column 'file' more than once",
    ),
    (
        "a lone CR inside a csv row",
        "l.csv",
        b"file,label\na.png,0\rb.png,1\n",
        "class-index-csv",
        "l.csv: line 2: not CSV: a carriage return inside an unquoted field",
    ),
    (
        "a JSON line giving the label twice",
        "l.jsonl",
        b'{"file": "a.png", "label": 0}\n{"file": "b.png", "label": 1, "label": 0}\n',
        "class-index-jsonl",
        "l.jsonl: line 2: key 'label' appears more than once in one object",
    ),
    (
        "a JSON line giving the file twice",
        "l.jsonl",
        b'{"file": "a.png", "file": "b.png", "label": 0}\n{"file": "b.png", "label": 1}\n',
        "class-index-jsonl",
        "l.jsonl: line 1: key 'file' appears more than once in one object",
    ),
    (
        "a key twice in a nested object",
        "l.jsonl",
        b'{"file": "a.png", "label": 0, "x": {"y": 1, "y": 2}}\n{"file": "b.png", "label": 1}\n',
        "class-index-jsonl",
        "l.jsonl: line 1: key 'y' appears more than once in one object",
    ),
    (
        "a JSON line over the line cap",
        "l.jsonl",
        b'{"file": "a.png", "label": 0}\n{"file": "b.png", "label": 1, "x": "'
        + b"x" * MAX_LINE_BYTES
        + b'"}\n',
        "class-index-jsonl",
        f"l.jsonl: line 2 is {MAX_LINE_BYTES + 38} bytes, more than the {MAX_LINE_BYTES}",
    ),
    (  # a text label of it failed text-recognition's CER (UnicodeEncodeError) in the run
        "a JSON string of half a surrogate pair",
        "l.jsonl",
        b'{"file": "a.png", "label": 0}\n{"file": "b.png", "label": 1, "x": ["\\udc00"]}\n',
        "class-index-jsonl",
        "l.jsonl: line 2: a \\u escape is half of a surrogate pair, not a character",
    ),
    (
        "bytes that are not UTF-8",
        "l.jsonl",
        b'{"file": "a.png", "label": 0}\n{"file": "b\xff.png", "label": 1}\n',
        "class-index-jsonl",
        "l.jsonl: line 2 is not UTF-8",
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "fmt", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_ambiguous_or_unbounded_label_files_are_refused_naming_file_and_line(
    tmp_path: Path, name: str, text: bytes, fmt: str, message: str
) -> None:
    with pytest.raises(LabelProblem) as refused:
        _per_file(tmp_path, name, text, fmt)
    assert message in str(refused.value)


def test_the_same_files_without_the_ambiguity_are_read(tmp_path: Path) -> None:
    crlf = b"file,label,note\r\nb.png,0,x\r\na.png,1,y\r\n"
    assert _per_file(tmp_path, "l.csv", crlf, "class-index-csv") == [1, 0]
    jsonl = b'{"file": "a.png", "label": 1, "x": {"y": 1}}\n{"file": "b.png", "label": 0}\n'
    assert _per_file(tmp_path, "l.jsonl", jsonl, "class-index-jsonl") == [1, 0]
    pairs = b'{"file": "a.png", "label": 1, "x": "\\ud83d\\ude00 \\\\ud800"}\n'  # a pair; \\
    jsonl = pairs + b'{"file": "b.png", "label": 0}\n'
    assert _per_file(tmp_path, "l.jsonl", jsonl, "class-index-jsonl") == [1, 0]
    quoted = b'file,label,note\na.png,1,"a\rquoted\nnote"\nb.png,0,x\n'
    assert _per_file(tmp_path, "q.csv", quoted, "class-index-csv") == [1, 0]


def test_a_text_line_over_the_cap_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    at_cap = "é" * (MAX_LINE_BYTES // 2)  # two bytes each: the cap is in UTF-8 bytes
    path.write_bytes(f"first\n{at_cap}\r\n".encode())
    assert len(read_text_lines(path, where="s.txt")) == 2
    path.write_bytes(f"first\n{at_cap}x\n".encode())
    with pytest.raises(LabelProblem) as refused:
        read_text_lines(path, where="s.txt")
    assert str(refused.value) == (
        f"s.txt: line 2 is {MAX_LINE_BYTES + 1} bytes, more than the {MAX_LINE_BYTES} a line "
        "may hold"
    )
