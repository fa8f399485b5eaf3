"""The three tasks of decision 282 check their ground truth at publish: a dataset whose labels
cannot be scored is refused by ``pinbench publish``, naming the file and the line, and nothing
is stored."""

from __future__ import annotations

import io
import json
import re
import wave
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Cli, dump, write_files


def silence() -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(bytes(3200))
    return buf.getvalue()


WAVS = {"wavs/a.wav": silence(), "wavs/b.wav": silence()}
CASES = [
    (
        "speaker-verification",
        {"format": "audio", "path": "wavs"},
        {"format": "speaker-trials", "path": "trials.txt"},
        {**WAVS, "trials.txt": b"1 a.wav c.wav\n"},
        "line 1 names 'c.wav', not a sample file",
    ),
    (
        "note-transcription",
        {"format": "audio", "path": "wavs"},
        {"format": "note-events", "path": "notes.jsonl"},
        {
            **WAVS,
            "notes.jsonl": (
                json.dumps({"file": "a.wav", "notes": [[0.5, 0.5, 60]]})
                + "\n"
                + json.dumps({"file": "b.wav", "notes": []})
                + "\n"
            ).encode(),
        },
        "line 1: note .* is not 0 <= onset < offset",
    ),
    (
        "token-classification",
        {"format": "text-lines", "path": "texts.txt"},
        {"format": "iob2-tags", "path": "tags.txt"},
        {"texts.txt": b"anna lives here\n", "tags.txt": b"B-PER O\n"},
        "line 1 has 2 tags for the 3 words of sample 0",
    ),
]


@pytest.mark.parametrize(
    ("task", "data", "labels", "files", "reason"), CASES, ids=[c[0] for c in CASES]
)
def test_unscorable_labels_are_refused_at_publish(
    cli: Cli,
    tmp_path: Path,
    task: str,
    data: dict[str, Any],
    labels: dict[str, Any],
    files: dict[str, bytes],
    reason: str,
) -> None:
    manifest = {
        "kind": "dataset",
        "name": "test/bad-labels",
        "version": "1.0.0",
        "task": task,
        "files": write_files(tmp_path / "d", files),
        "data": data,
        "labels": labels,
    }
    assert cli("init").code == 0
    published = cli("publish", str(dump(tmp_path / "d" / "dataset.yaml", manifest)))
    assert published.code != 0
    assert labels["path"] in published.err
    assert re.search(reason, published.err), published.err
    assert "bad-labels" not in cli("list", "dataset").out
