"""Tokenizing in a child process (decision 114): the same ids as the tokenizers library gives
in process, calls of bounded size, a stop that ends it at once, and no child left running when
its parent is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pinbench.catalog import minilm
from pinbench.worker.tokenizing import (
    CHUNK_CHARS,
    CHUNK_TEXTS,
    TokenizeProblem,
    chunks,
    encode_texts,
)

TEXTS = ["A man plays the guitar.", "a\rb", "one\u2028two", "x" * 500, "The end."]


def test_the_child_gives_what_the_library_gives_in_process() -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm.TOKENIZER))
    tokenizer.enable_truncation(max_length=16)
    tokenizer.enable_padding(length=16, pad_id=0, pad_token="[PAD]")
    direct = tokenizer.encode_batch(TEXTS)
    encoded = encode_texts(
        TEXTS, tokenizer=minilm.TOKENIZER, name="tokenizer.json", max_length=16, truncation=True
    )
    assert encoded.ids.tolist() == [e.ids for e in direct]
    assert encoded.attention_mask.tolist() == [e.attention_mask for e in direct]
    assert encoded.type_ids.tolist() == [e.type_ids for e in direct]


def test_a_text_longer_than_max_length_is_refused_naming_it() -> None:
    with pytest.raises(TokenizeProblem, match="sample 0 is 8 tokens, more than max_length 4"):
        encode_texts(
            TEXTS, tokenizer=minilm.TOKENIZER, name="t.json", max_length=4, truncation=False
        )


# (why, text lengths, the calls they make)
CHUNKS: list[tuple[str, list[int], list[tuple[int, int]]]] = [
    ("none", [], []),
    (
        "short texts: CHUNK_TEXTS a call",
        [1] * (CHUNK_TEXTS + 1),
        [(0, CHUNK_TEXTS), (CHUNK_TEXTS, CHUNK_TEXTS + 1)],
    ),
    ("long texts: CHUNK_CHARS a call", [CHUNK_CHARS // 2] * 3, [(0, 2), (2, 3)]),
    (
        "a text longer than CHUNK_CHARS is a call of its own",
        [1, CHUNK_CHARS + 1, 1],
        [(0, 1), (1, 2), (2, 3)],
    ),
]


@pytest.mark.parametrize(("lengths", "calls"), [c[1:] for c in CHUNKS], ids=[c[0] for c in CHUNKS])
def test_the_tokenizer_is_called_on_bounded_chunks(
    lengths: list[int], calls: list[tuple[int, int]]
) -> None:
    assert chunks(["x" * n for n in lengths]) == calls


def _catastrophic(tmp_path: Path) -> Path:
    data = json.loads(minilm.TOKENIZER.read_text())
    data["pre_tokenizer"] = {
        "type": "Split",
        "pattern": {"Regex": "(a+)+b"},
        "behavior": "Isolated",
        "invert": False,
    }
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(data))
    return path


SLOW = ("a" * 23 + " ") * 2000
"""Some 0.1 s of backtracking per run of 23 "a"s: minutes in one call."""


class Stopped(Exception):
    pass


def test_a_stop_kills_the_child_at_once(tmp_path: Path) -> None:
    asked = time.monotonic() + 1

    def stop() -> None:
        if time.monotonic() > asked:
            raise Stopped

    with pytest.raises(Stopped):
        encode_texts(
            [SLOW],
            tokenizer=_catastrophic(tmp_path),
            name="t",
            max_length=8,
            truncation=True,
            stop=stop,
        )
    assert time.monotonic() - asked < 30  # the call alone runs for minutes


def _children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in found]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # dead; its new parent may not have reaped it yet


def test_a_killed_parent_leaves_no_tokenizer_running(tmp_path: Path) -> None:
    """As a venv or docker evaluator is killed for its time limit (Linux's
    ``PR_SET_PDEATHSIG``, read from /proc here)."""
    code = (
        "import sys; from pathlib import Path; "
        "from pinbench.worker.tokenizing import encode_texts; "
        "encode_texts([sys.argv[2]], tokenizer=Path(sys.argv[1]), name='t', max_length=8, "
        "truncation=True)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, str(_catastrophic(tmp_path)), SLOW])
    children: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not (children := _children(parent.pid)):
            assert parent.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1)  # inside the regex by now
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30
        while not all(_gone(c) for c in children):
            assert time.monotonic() < deadline, f"tokenizer {children} outlived its parent"
            time.sleep(0.05)
    finally:
        parent.kill()
        parent.wait()
        for child in children:  # one left behind when the test fails
            if not _gone(child):
                os.kill(child, signal.SIGKILL)
