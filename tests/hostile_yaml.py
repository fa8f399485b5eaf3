"""Hostile YAML manifests, each with what pinbench must answer and why: shared by
tests/test_hostile_yaml.py (CLI and a real server) and the schemathesis run's explicit
examples (tests/fuzz_hooks.py).

Each document is a model manifest that would publish but for the one hostile part, so a
refusal can only come from that part. Its file is ``model.onnx`` holding ``MODEL_BYTES``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tests.helpers import tiny_onnx

MODEL_NAME = "vision/hostile"
MODEL_BYTES = tiny_onnx(b"bytes of a model that must never be stored")
"""A real ONNX model (publishing reads its graph), all ASCII (the fuzz hooks send it as text)."""
MODEL_SHA256 = hashlib.sha256(MODEL_BYTES).hexdigest()


def manifest(*, kind: str = "model", version: str = "'1.0.0'", extra: str = "") -> str:
    """A valid model manifest (``model.onnx``) as YAML text, with ``extra`` lines appended."""
    return (
        f"kind: {kind}\n"
        f"name: {MODEL_NAME}\n"
        f"version: {version}\n"
        "format: onnx\n"
        "framework: {name: onnxruntime, range: '>=1.17 <2'}\n"
        "files:\n"
        f"  - {{path: model.onnx, sha256: {MODEL_SHA256}, size: {len(MODEL_BYTES)}}}\n"
        f"{extra}"
    )


def _alias_bomb() -> str:
    """Ten floats, then seven levels of ten aliases to the level below: 10^8 floats once
    expanded (the schema would refuse nested lists too, but only after the expansion)."""
    levels = ["  - &l0 [" + ", ".join(["0.5"] * 10) + "]"]
    levels += [f"  - &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, 8)]
    return manifest(extra="references:\n" + "\n".join(levels) + "\n")


@dataclass(frozen=True)
class Hostile:
    name: str
    text: str
    message: str
    """A part of the refusal's message, on the CLI and from the server."""
    why: str


HOSTILE: tuple[Hostile, ...] = (
    Hostile(
        "alias bomb",
        _alias_bomb(),
        "alias amplification",
        "a 2.8 KB manifest expanded to 8 million floats: 1.4 GB and /health blocked",
    ),
    Hostile(
        "recursive alias",
        manifest(extra="references: &r [*r]\n"),
        "recursive structures are not allowed",
        "a list containing itself: no JSON, infinite recursion when converted",
    ),
    Hostile(
        "deep nesting",
        manifest(extra="description: " + "[" * 5000 + "]" * 5000 + "\n"),
        "nesting deeper than 64 levels",
        "PyYAML composes recursively: RecursionError, an HTTP 500",
    ),
    Hostile(
        "nesting under the parser's limit",
        manifest(extra="description: " + "[" * 200 + "]" * 200 + "\n"),
        "nesting deeper than 64 levels",
        "PyYAML >= 6.0.4 stops at 1,000 levels itself; below that our composer's limit holds",
    ),
    Hostile(
        "huge integer",
        manifest().replace(f"size: {len(MODEL_BYTES)}", "size: " + "9" * 5000),
        "an integer of 5000 digits",
        "Python refuses to convert ints over 4,300 digits: ValueError, an HTTP 500",
    ),
    Hostile(
        "duplicate key",
        manifest(extra="version: '6.6.6'\n"),
        "the key 'version' is given twice",
        "YAML keys are unique; PyYAML silently kept the last one",
    ),
    Hostile(
        ".nan",
        manifest(extra="attributes: {top1: .nan}\n"),
        "not finite",
        "JSON (and so the manifest's digest) cannot hold NaN",
    ),
    Hostile(
        ".inf",
        manifest(extra="attributes: {top1: -.inf}\n"),
        "not finite",
        "the digest failed after staging: a temp file left behind every time",
    ),
    Hostile(
        "kind as a list",
        manifest(kind="[model]"),
        "`kind` must be one of model, framework, dataset, image, got a list",
        "an unhashable kind crashed the lookup: TypeError, an HTTP 500",
    ),
    Hostile(
        "oversized document",
        manifest(extra="description: '" + "x" * (1024 * 1024) + "'\n"),
        "1048576",
        "a document larger than 1 MiB is refused before it is parsed",
    ),
)
