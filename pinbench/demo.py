"""The demo: the registry's whole flow on a small sample catalog, printing what it does.

The sample files are real formats (safetensors weights, ``.npy`` arrays) filled from a fixed
seed, so every run writes the same bytes and the same digests. They are a registry sample, not
a benchmark: the trained digits catalog arrives with the evaluator.
"""

from __future__ import annotations

import json
import random
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.text import Text

from pinbench.artifacts.digest import Digest, hash_file
from pinbench.errors import UserError
from pinbench.registry import catalog, service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import load_manifest
from pinbench.registry.names import ArtifactRef, Kind, Spec
from pinbench.registry.publish import publish
from pinbench.registry.request import load_request
from pinbench.registry.verify import VerificationFailed, verify_lockfile
from pinbench.workspace import Workspace

# Real wheels: sha256 of the CPython 3.11 manylinux x86_64 wheels on PyPI / PyTorch's CPU index.
ONNXRUNTIME_WHEEL = "d4092b78fc5bab77ce6522393098cdb2535423045ecdcff15cc0d022162d6b66"
TORCH_CPU_WHEEL = "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b"
LENET_SHAPES = {
    "conv1.weight": [6, 1, 3, 3],
    "conv1.bias": [6],
    "fc1.weight": [10, 96],
    "fc1.bias": [10],
}


def write_safetensors(path: Path, shapes: dict[str, list[int]], seed: int) -> None:
    """float32 tensors drawn from N(0, 0.1) with ``seed``, in the safetensors layout."""
    rng = random.Random(seed)
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "seed": str(seed)}}
    payload = bytearray()
    for name, shape in shapes.items():
        count = 1
        for d in shape:
            count *= d
        data = struct.pack(f"<{count}f", *(rng.gauss(0.0, 0.1) for _ in range(count)))
        header[name] = {
            "dtype": "F32",
            "shape": shape,
            "data_offsets": [len(payload), len(payload) + len(data)],
        }
        payload += data
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    path.write_bytes(struct.pack("<Q", len(head)) + head + payload)


def write_npy(path: Path, dtype: str, shape: tuple[int, ...], values: list[int]) -> None:
    """A NumPy ``.npy`` (format 1.0) file, written without NumPy."""
    header = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape}, }}"
    pad = -(10 + len(header) + 1) % 64
    fmt = {"|u1": "B", "<i8": "q"}[dtype]
    body = struct.pack(f"<{len(values)}{fmt}", *values)
    raw = header.encode("latin1") + b" " * pad + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(raw)) + raw + body)


@dataclass(frozen=True, slots=True)
class SampleCatalog:
    manifests: list[Path]
    request: Path
    tamper_target: str
    conflict_manifest: Path


def _file_entry(root: Path, rel: str) -> dict[str, Any]:
    """A manifest file entry for ``root/rel``, sourced relative to the manifest (root's parent)."""
    digest, size = hash_file(root / rel)
    return {"path": rel, "sha256": digest.hex, "size": size, "source": f"file:{root.name}/{rel}"}


def _dump(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def build_catalog(root: Path) -> SampleCatalog:
    """Write the sample files and manifests under ``root`` (same bytes on every run)."""
    root.mkdir(parents=True, exist_ok=True)
    manifests: list[Path] = []
    for name, version, wheel in [
        ("onnxruntime", "1.31.0", ONNXRUNTIME_WHEEL),
        ("torch", "2.13.0", TORCH_CPU_WHEEL),
    ]:
        pkg_version = version + ("+cpu" if name == "torch" else "")
        manifests.append(
            _dump(
                root / f"framework-{name}.yaml",
                {
                    "kind": "framework",
                    "name": name,
                    "version": version,
                    "description": f"{name} {version}, CPU build, CPython 3.11",
                    "environments": [
                        {
                            "platform": {"arch": "amd64", "device": "cpu"},
                            "python": "3.11",
                            "requirements": [
                                {
                                    "name": name,
                                    "version": pkg_version,
                                    "hashes": [f"sha256:{wheel}"],
                                }
                            ],
                        }
                    ],
                },
            )
        )

    data = root / "digits-sample"
    data.mkdir(exist_ok=True)
    rng = random.Random(7)
    n = 100
    write_npy(data / "images.npy", "|u1", (n, 8, 8), [rng.randrange(17) for _ in range(n * 64)])
    write_npy(data / "labels.npy", "<i8", (n,), [i % 10 for i in range(n)])
    manifests.append(
        _dump(
            root / "dataset-digits-sample.yaml",
            {
                "kind": "dataset",
                "name": "demo/digits-sample",
                "version": "1.0.0",
                "description": "100 seeded 8x8 grayscale samples shaped like scikit-learn's digits",
                "license": "BSD-3-Clause",
                "labels": {"format": "class-index-npy", "path": "labels.npy", "classes": 10},
                "samples": n,
                "files": [_file_entry(data, "images.npy"), _file_entry(data, "labels.npy")],
            },
        )
    )

    for version, seed in [("1.0.0", 1), ("1.1.0", 2), ("1.2.0", 3), ("2.0.0-rc.1", 4)]:
        folder = root / f"lenet-{version}"
        folder.mkdir(exist_ok=True)
        write_safetensors(folder / "lenet-digits.safetensors", LENET_SHAPES, seed)
        manifests.append(_dump(root / f"model-lenet-{version}.yaml", _model(folder, version)))

    # The same version with other bytes: publishing it must be refused.
    other = root / "lenet-conflict"
    other.mkdir(exist_ok=True)
    write_safetensors(other / "lenet-digits.safetensors", LENET_SHAPES, 99)
    conflict = _dump(root / "model-lenet-conflict.yaml", _model(other, "1.1.0"))

    request = _dump(
        root / "request.yaml",
        {
            "model": "demo/lenet-digits@^1",
            "framework": "torch@>=2.1 <3",
            "dataset": "demo/digits-sample@1",
            "system": {"arch": "amd64", "device": "cpu"},
            "scenario": {
                "name": "SingleStream",
                "mode": "performance",
                "min_duration_ms": 2000,
                "min_query_count": 500,
                "seed": 0,
            },
            "batch_size": 1,
        },
    )
    return SampleCatalog(manifests, request, "lenet-digits.safetensors", conflict)


def _model(folder: Path, version: str) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": "demo/lenet-digits",
        "version": version,
        "description": "LeNet-style CNN for 8x8 digits; seeded untrained weights (sample)",
        "license": "BSD-3-Clause",
        "framework": {"name": "torch", "range": ">=2.1 <3"},
        "format": "safetensors",
        "architecture": "lenet-digits",
        "files": [
            {
                **_file_entry(folder, "lenet-digits.safetensors"),
                "source": f"file:{folder.name}/lenet-digits.safetensors",
            }
        ],
        "inputs": [
            {
                "name": "x",
                "type": "image",
                "element_type": "float32",
                "shape": [1, 8, 8],
                "steps": [
                    {"normalize": {"mean": [0.0], "std": [16.0]}},
                    {"layout": {"to": "NCHW"}},
                ],
            }
        ],
        "outputs": [
            {
                "name": "logits",
                "type": "classification",
                "steps": [{"softmax": {}}, {"topk": {"k": 5}}],
            }
        ],
        "attributes": {"training_dataset": "none (seeded weights)"},
    }


def run_demo(ws: Workspace, workdir: Path, out: Console) -> None:
    def step(text: str) -> None:
        out.print(Text(f"\n== {text}", style="bold cyan"))

    step("init")
    out.print(f"home {ws.settings.home}, schema {ws.init()}")

    step(f"build the sample catalog in {workdir}")
    sample = build_catalog(workdir)
    out.print(f"{len(sample.manifests)} manifests, request {sample.request.name}")

    step("publish")
    for path in sample.manifests:
        result = publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="demo")
        state = "published" if result.created else "already published, unchanged"
        out.print(f"{result.ref}: {state} (manifest {result.manifest_digest.short})")

    step("yank model/demo/lenet-digits@1.2.0")
    catalog.yank(ws, ArtifactRef.parse("model/demo/lenet-digits@1.2.0"), "weights exported wrongly")
    out.print("yanked: ranges now skip 1.2.0; an exact pin still gets it")

    step("resolve model/demo/lenet-digits@^1 (2.0.0-rc.1 is a prerelease, 1.2.0 is yanked)")
    for ref in service.resolve_specs(ws, [Spec.parse("model/demo/lenet-digits@^1")]).refs:
        out.print(str(ref))

    step(f"lock {sample.request.name}")
    lockfile, _ = service.lock(ws, load_request(sample.request))
    lock_path = workdir / "demo.lock"
    lockfile.write(lock_path)
    for art in lockfile.body.artifacts:
        out.print(f"pinned {art.ref}")
    out.print(f"wrote {lock_path}, lockfile id sha256 {lockfile.digest.hex}")

    step("verify")
    checks = verify_lockfile(ws, Lockfile.read(lock_path))
    out.print(f"{len(checks)} pinned items verified")

    step("flip one byte of the stored model blob, verify again")
    model = lockfile.artifact(Kind.MODEL)
    assert model is not None
    blob = ws.store.path(Digest(model.files[0].sha256))
    original = blob.read_bytes()
    blob.chmod(0o644)
    try:
        blob.write_bytes(bytes([original[0] ^ 0x01]) + original[1:])
        try:
            verify_lockfile(ws, lockfile)
            raise UserError("verify passed on a tampered blob: this is a bug")
        except VerificationFailed as exc:
            out.print(Text(f"verify failed as it must:\n{exc}", style="yellow"))
    finally:
        blob.write_bytes(original)
        blob.chmod(0o444)
    verify_lockfile(ws, lockfile)
    out.print("restored; verify passes again")

    step("publish other bytes under model/demo/lenet-digits@1.1.0")
    try:
        publish(
            ws,
            load_manifest(sample.conflict_manifest),
            manifest_dir=sample.conflict_manifest.parent,
            publisher="demo",
        )
        raise UserError("a conflicting publish was accepted: this is a bug")
    except UserError as exc:
        out.print(Text(f"refused as it must: {exc}", style="yellow"))
    out.print(Text("\ndemo complete", style="bold green"))
