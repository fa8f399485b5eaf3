"""A model file declared ``safetensors`` is checked at publish: real safetensors passes; a
pickle, a TorchScript archive or a malformed header is refused with what to do, through the
library, the CLI and a real server's upload, and nothing staged is left behind."""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from safetensors.numpy import save_file
from sqlalchemy import func, select

from pinbench.artifacts.model_formats import pickle_routes
from pinbench.artifacts.safetensors import NotSafetensors, read_header
from pinbench.cli import main
from pinbench.db.models import Artifact
from pinbench.registry.formats import FormatMismatch, SafetensorsLayout
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.apiserver import Server, api_server
from tests.helpers import Cli, sha

PICKLE_ADVICE = "this is a pickle (PyTorch's torch.save), not safetensors: " + pickle_routes()
"""A pickle's routes, as every refusal of one gives them (``model_formats.pickle_routes``)."""


def _real(path: Path) -> bytes:
    save_file(
        {"fc.weight": np.ones((3, 2), np.float32), "fc.bias": np.zeros(3, np.float16)}, str(path)
    )
    return path.read_bytes()


def _with_header(header: dict[str, Any], data: bytes, *, length: int | None = None) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def _state_dict_pth(path: Path) -> bytes:
    import torch

    torch.save(torch.nn.Linear(2, 3).state_dict(), path)
    return path.read_bytes()


def _torchscript(path: Path) -> bytes:
    import torch

    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 3)), str(path))
    return path.read_bytes()


F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
_F32_W = b'"w": ' + json.dumps(F32).encode()


def _raw_header(raw: bytes) -> bytes:
    return struct.pack("<Q", len(raw)) + raw + b"\x00" * 8


Maker = Callable[[Path], bytes]

BAD: list[tuple[str, Maker, str]] = [
    # (case, the file's bytes, what the refusal says)
    ("a state dict saved with torch.save", _state_dict_pth, PICKLE_ADVICE),
    (
        "torch.save's legacy (bare pickle) format",
        lambda p: b"\x80\x02}q\x00." + b"\x00" * 8,
        PICKLE_ADVICE,
    ),
    (
        "a TorchScript archive",
        _torchscript,
        "TorchScript archive (torch.jit.save), not safetensors: declare `format: torchscript`",
    ),
    (
        "truncated: shorter than the 8-byte length",
        lambda p: b"\x10\x00\x00",
        "shorter than the 8-byte header length",
    ),
    (
        "the header length points past the end",
        lambda p: _with_header({"w": F32}, b"\x00" * 8, length=10_000),
        "past the end of the",
    ),
    (
        "the header is not JSON",
        lambda p: struct.pack("<Q", 4) + b"{{{{" + b"\x00" * 8,
        "not UTF-8 JSON",
    ),
    (
        "a tensor named twice (Python and serde keep the last, other readers the first)",
        lambda p: _raw_header(b"{" + _F32_W + b", " + _F32_W.replace(b"F32", b"I32") + b"}"),
        "key 'w' appears twice in one object",
    ),
    (
        "a header nested past the bound (was a RecursionError)",
        lambda p: _raw_header(b'{"w": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        "nested more than 64 deep",
    ),
    (
        "an integer of 5000 digits (was a ValueError)",
        lambda p: _raw_header(b'{"w": {"dtype": "F32", "shape": [' + b"9" * 5000 + b"]}}"),
        "Exceeds the limit (4300 digits)",
    ),
    (
        "trailing bytes no tensor covers",
        lambda p: _with_header({"w": F32}, b"\x00" * 12),
        "the tensors cover 8 bytes of data, the file holds 12",
    ),
    (
        "a gap between two tensors",
        lambda p: _with_header(
            {"a": F32, "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}}, b"\x00" * 16
        ),
        "leaves bytes 8-12",
    ),
    (
        "overlapping tensors",
        lambda p: _with_header(
            {"a": F32, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\x00" * 8
        ),
        "overlaps the one before",
    ),
    (
        "a range that does not fit the shape",
        lambda p: _with_header(
            {"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\x00" * 8
        ),
        "needs 12 bytes, its data_offsets [0, 8] hold 8",
    ),
    (
        "a tensor's name of 1025 bytes (hf_shapes read names in quadratic time)",
        lambda p: _with_header({"a" * 1025: F32}, b"\x00" * 8),
        "is over 1024 bytes (1025)",
    ),
    (
        "a tensor's name of 65 dotted parts, each a stack index",
        lambda p: _with_header({"m" + ".0" * 64: F32}, b"\x00" * 8),
        "has 65 dotted parts, over 64",
    ),
    (
        "an unknown dtype",
        lambda p: _with_header(
            {"w": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, b"\x00" * 16
        ),
        "dtype 'F128'",
    ),
]


def test_real_safetensors_parses(tmp_path: Path) -> None:
    _real(tmp_path / "w.safetensors")
    header = read_header(tmp_path / "w.safetensors")
    assert header.tensors == {"fc.weight": ("F32", (3, 2)), "fc.bias": ("F16", (3,))}
    assert header.data_bytes == 3 * 2 * 4 + 3 * 2


@pytest.mark.parametrize(("case", "make", "message"), BAD, ids=[b[0] for b in BAD])
def test_a_file_that_is_not_safetensors_is_named(
    tmp_path: Path, case: str, make: Maker, message: str
) -> None:
    path = tmp_path / "w.safetensors"
    path.write_bytes(make(tmp_path / "made"))
    with pytest.raises(NotSafetensors) as info:
        read_header(path)
    assert message.split(", not safetensors")[0] in str(info.value), case


# ------------------------------------------------------------------ publishing


def _manifest(root: Path, files: dict[str, bytes], **extra: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, data in files.items():
        (root / name).write_bytes(data)
        entries.append({"path": name, "sha256": sha(data), "size": len(data)})
    doc = {
        "kind": "model",
        "name": "vision/weights",
        "version": "1.0.0",
        "format": "safetensors",
        "architecture": "digits-cnn",
        "framework": {"name": "torch", "range": "2.13.0"},
        "files": entries,
        **extra,
    }
    path = root / "model.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _nothing_recorded(ws: Workspace, data: bytes) -> None:
    with ws.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Artifact)) == 0
    assert sha(data) not in {d.hex for d in ws.store.iter_digests()}
    assert not [p for p in ws.store.tmp.iterdir() if p.is_file()]


def test_cli_publishes_real_safetensors_and_refuses_each_bad_file(cli: Cli, tmp_path: Path) -> None:
    assert cli("init").code == 0
    good = _real(tmp_path / "real.safetensors")
    manifest = _manifest(tmp_path / "good", {"w.safetensors": good})
    done = cli("publish", str(manifest), "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["ref"] == "model/vision/weights@1.0.0"
    for i, (case, make, message) in enumerate(BAD):
        data = make(tmp_path / f"made-{i}")
        bad = _manifest(tmp_path / f"bad-{i}", {"w.safetensors": data}, version=f"1.0.{i + 1}")
        got = cli("publish", str(bad))
        assert got.code == 1, case
        assert message in " ".join(got.err.split()), (case, got.err)


WRONG_LAYOUT: list[tuple[str, dict[str, Any], str]] = [
    # (case, files and fields, what the refusal says)
    ("a .pth state dict declared safetensors", {"model.pth": "pth"}, PICKLE_ADVICE),
    ("a pickle beside real weights", {"w.safetensors": "real", "extra.pth": "pth"}, PICKLE_ADVICE),
    (
        "no file ending in .safetensors",
        {"weights.bin": "real"},
        "exactly one weights file ending in .safetensors; the manifest has 0",
    ),
    (
        "two weights files",
        {"a.safetensors": "real", "b.safetensors": "real2"},
        "the manifest has 2 (a.safetensors, b.safetensors)",
    ),
    (
        "no architecture named",
        {"w.safetensors": "real", "architecture": None},
        "name the `architecture`",
    ),
]


@pytest.mark.parametrize(
    ("case", "spec", "message"), WRONG_LAYOUT, ids=[w[0] for w in WRONG_LAYOUT]
)
def test_a_safetensors_model_is_refused_whole(
    ws: Workspace, tmp_path: Path, case: str, spec: dict[str, Any], message: str
) -> None:
    made = {
        "real": _real(tmp_path / "r.safetensors"),
        "real2": _with_header({"w": F32}, b"\x01" * 8),
        "pth": _state_dict_pth(tmp_path / "s.pth"),
    }
    files = {k: made[v] for k, v in spec.items() if k != "architecture"}
    extra = {"architecture": spec["architecture"]} if "architecture" in spec else {}
    path = _manifest(tmp_path / "m", files, **extra)
    doc = yaml.safe_load(path.read_text())
    if doc.get("architecture") is None:
        doc.pop("architecture", None)
    with pytest.raises((FormatMismatch, SafetensorsLayout), match=re.escape(message[:60])):
        publish(ws, parse_manifest(doc), manifest_dir=path.parent, publisher="test")
    for data in files.values():
        _nothing_recorded(ws, data)


# ------------------------------------------------------------------ a real server's upload


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("safetensors-api")
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite") as running:
        yield running


def _upload(server: Server, manifest: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("PINBENCH_URL", server.url)
    monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["owner"])
    monkeypatch.setenv("PINBENCH_HOME", "/nonexistent/the-cli-must-not-use-a-local-home")
    return main(["publish", str(manifest)])


def test_the_server_refuses_a_pickle_uploaded_as_safetensors(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pth = _state_dict_pth(tmp_path / "s.pth")
    bad = _manifest(tmp_path / "bad", {"model.safetensors": pth})
    assert _upload(server, bad, monkeypatch) == 1
    assert PICKLE_ADVICE in " ".join(capsys.readouterr().err.split())
    ws = server.workspace()
    try:
        _nothing_recorded(ws, pth)
    finally:
        ws.close()
    good = _manifest(tmp_path / "good", {"model.safetensors": _real(tmp_path / "r.safetensors")})
    assert _upload(server, good, monkeypatch) == 0
