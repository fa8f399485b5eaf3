"""A ``prompts-jsonl`` file: one JSON object per line, ``{"prompt": text, "reference": text}``.

Lines are read as every line-based file is (``lines.read_lines``: UTF-8, LF, bounded); each is
a JSON object read with ``jsonsafe`` (duplicate keys refused) holding ``prompt`` (non-empty
text) and, optionally, ``reference`` (text); any other key is refused, never ignored. A blank
line is refused, as in ``text-lines``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pinbench.worker.lines import LabelProblem, json_objects, read_lines

KEYS = ("prompt", "reference")


@dataclass(frozen=True, slots=True)
class Prompt:
    prompt: str
    reference: str | None


def read_prompts(path: Path, *, where: str) -> list[Prompt]:
    out: list[Prompt] = []
    for at, row in json_objects(read_lines(path, where), where, keys=KEYS):
        prompt, reference = row.get("prompt"), row.get("reference")
        if not isinstance(prompt, str) or not prompt:
            raise LabelProblem(path=where, reason=f"{at}: `prompt` must be non-empty text")
        if reference is not None and not isinstance(reference, str):
            raise LabelProblem(path=where, reason=f"{at}: `reference` must be text")
        out.append(Prompt(prompt, reference))
    if not out:
        raise LabelProblem(path=where, reason="holds no prompt")
    return out
