"""Model signatures in the field's format (issue 34, item 13): the OpenSSF model-signing
tool's own CLI (``model_signing verify key``, installed by the dev extra), given the registry's
exported model-signing key, accepts a published model's signature over its files laid out at
their manifest paths, and refuses it once a byte, a file or the key differs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinbench.artifacts.digest import Digest
from pinbench.registry import catalog
from pinbench.registry.manifest import load_manifest
from pinbench.registry.names import ArtifactRef
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.apiserver import Server
from tests.helpers import Cli, Home, dump, in_process_cli, published_home, sha

MODEL = "model/test/signed@1.0.0"
TOOL = Path(sys.executable).parent / "model_signing"


def tool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    assert TOOL.exists(), f"{TOOL} is missing: `pip install -e '.[dev]'` installs model-signing"
    return subprocess.run(
        [str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


def verify(folder: Path, signature: Path, key: Path) -> subprocess.CompletedProcess[str]:
    return tool("verify", "key", folder, "--signature", signature, "--public_key", key)


def signed_model(catalog_dir: Path, root: Path) -> Path:
    """A model of three files, two in folders: the digits ONNX model and two more."""
    onnx = (catalog_dir / "digits-logreg-1.2.0" / "digits-logreg.onnx").read_bytes()
    files = {
        "model.onnx": onnx,
        "extra/labels.txt": b"zero\none\n",
        "extra/deep/notes.md": b"# notes\n",
    }
    entries = []
    for rel, data in files.items():
        (root / "signed" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "signed" / rel).write_bytes(data)
        entries.append({"path": rel, "sha256": sha(data), "size": len(data),
                        "source": f"file:signed/{rel}"})  # fmt: skip
    manifest = yaml_of(catalog_dir / "model-digits-logreg-1.2.0.yaml")
    manifest |= {"name": "test/signed", "version": "1.0.0", "files": entries}
    return dump(root / "signed.yaml", manifest)


def yaml_of(path: Path) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def lay_out(ws: Workspace, ref: str, folder: Path) -> Path:
    """The version's files, from the blob store, at their manifest paths under ``folder``."""
    for f in catalog.show(ws, ArtifactRef.parse(ref))["files"]:
        target = folder / f["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ws.store.path(Digest(f["sha256"])), target)
    return folder


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("model-signing")
    with published_home(root, catalog_dir) as home:
        manifest = signed_model(catalog_dir, root)
        publish(home.ws, load_manifest(manifest), manifest_dir=root, publisher="test")
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def model_key(cli: Cli) -> str:
    keys = json.loads(cli("keys", "list", "--json").out)
    (keyid,) = [k["keyid"] for k in keys if k["purpose"] == "model-signing" and
                k["state"] == "active"]  # fmt: skip
    return str(keyid)


def test_the_model_signing_tool_accepts_the_signature_and_refuses_any_change(
    home: Home, cli: Cli, tmp_path: Path
) -> None:
    digest_before = catalog.show(home.ws, ArtifactRef.parse(MODEL))["manifest_digest"]
    signature = tmp_path / "model.sig"
    shown = cli("show", MODEL, "--signature", str(signature))
    assert shown.code == 0, shown.err
    keyid = model_key(cli)
    assert f"model-signing key {keyid[:16]}" in shown.out
    key = tmp_path / "key.pem"
    assert cli("keys", "export", keyid[:16], "-o", str(key)).code == 0
    folder = lay_out(home.ws, MODEL, tmp_path / "model")

    accepted = verify(folder, signature, key)
    assert accepted.returncode == 0, accepted.stderr
    assert "Verification succeeded" in accepted.stdout

    bundle = json.loads(signature.read_text())
    assert bundle["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert bundle["verificationMaterial"]["publicKey"]["hint"] == keyid

    target = folder / "extra" / "deep" / "notes.md"
    original = target.read_bytes()
    #   change                                          the tool says
    changes: list[tuple[Any, str]] = [
        (lambda: target.write_bytes(b"#" + original[1:].replace(b"n", b"N", 1)),
         "Hash mismatch for 'extra/deep/notes.md'"),
        (lambda: target.unlink(), "Missing files"),
        (lambda: (folder / "extra" / "more.txt").write_bytes(b"x"), "Extra files"),
    ]  # fmt: skip
    for change, says in changes:
        change()
        refused = verify(folder, signature, key)
        assert refused.returncode == 1, refused.stdout
        assert says in refused.stderr
        (folder / "extra" / "more.txt").unlink(missing_ok=True)
        target.write_bytes(original)
    assert verify(folder, signature, key).returncode == 0

    other = tmp_path / "other.pem"
    other.write_text(_other_pem())
    refused = verify(folder, signature, other)
    assert refused.returncode == 1 and "Key mismatch" in refused.stderr
    assert catalog.show(home.ws, ArtifactRef.parse(MODEL))["manifest_digest"] == digest_before


def _other_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    public = ec.generate_private_key(ec.SECP256R1()).public_key()
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def test_only_published_models_are_signed(cli: Cli, tmp_path: Path) -> None:
    #   reference                             what the refusal says
    cases = [
        ("dataset/sklearn-digits-test@1.0.0", "only models are signed"),
        ("model/test/signed@9.9.9", "is not published"),
    ]
    for ref, says in cases:
        out = tmp_path / "x.sig"
        result = cli("show", ref, "--signature", str(out))
        assert result.code == 1 and says in result.err, (ref, result.err)
        assert not out.exists()


def test_a_model_holding_a_git_file_is_told_the_flag_the_tool_needs(
    home: Home, cli: Cli, tmp_path: Path, catalog_dir: Path
) -> None:
    """model_signing skips ``.git*`` files on disk by default (a Hugging Face folder holds a
    ``.gitattributes``): the hint names ``--no-ignore-git-paths`` and verification passes with
    it, while a model without such a file is not told to use it."""
    root = tmp_path / "src"
    data = {"model.onnx": (catalog_dir / "digits-logreg-1.2.0" / "digits-logreg.onnx")
            .read_bytes(), ".gitattributes": b"*.onnx filter=lfs\n"}  # fmt: skip
    for rel, content in data.items():
        (root / "gitfile" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "gitfile" / rel).write_bytes(content)
    manifest = yaml_of(catalog_dir / "model-digits-logreg-1.2.0.yaml") | {
        "name": "test/gitfile",
        "version": "1.0.0",
        "files": [{"path": rel, "sha256": sha(c), "size": len(c), "source": f"file:gitfile/{rel}"}
                  for rel, c in data.items()],
    }  # fmt: skip
    path = dump(root / "gitfile.yaml", manifest)
    publish(home.ws, load_manifest(path), manifest_dir=root, publisher="test")
    signature, key = tmp_path / "model.sig", tmp_path / "key.pem"
    shown = cli("show", "model/test/gitfile@1.0.0", "--signature", str(signature))
    assert shown.code == 0 and "--no-ignore-git-paths" in shown.out, shown.out
    other = cli("show", MODEL, "--signature", str(signature), "--force")
    assert other.code == 0 and "--no-ignore-git-paths" not in other.out
    assert (
        cli("show", "model/test/gitfile@1.0.0", "--signature", str(signature), "--force").code == 0
    )
    assert cli("keys", "export", model_key(cli), "-o", str(key)).code == 0
    folder = lay_out(home.ws, "model/test/gitfile@1.0.0", tmp_path / "model")
    assert verify(folder, signature, key).returncode == 1, "the tool skips .gitattributes"
    flagged = tool("verify", "key", folder, "--signature", signature, "--public_key", key,
                   "--no-ignore-git-paths")  # fmt: skip
    assert flagged.returncode == 0, flagged.stderr


def test_a_rotated_key_signs_new_signatures_and_old_ones_still_verify(
    home: Home, cli: Cli, tmp_path: Path
) -> None:
    folder = lay_out(home.ws, MODEL, tmp_path / "model")
    old_sig, new_sig = tmp_path / "old.sig", tmp_path / "new.sig"
    old_key, new_key = tmp_path / "old.pem", tmp_path / "new.pem"
    assert cli("show", MODEL, "--signature", str(old_sig)).code == 0
    old = model_key(cli)
    assert cli("keys", "export", old, "-o", str(old_key)).code == 0
    assert cli("keys", "rotate", "--kind", "model-signing").code == 0
    new = model_key(cli)
    assert new != old
    assert cli("show", MODEL, "--signature", str(new_sig)).code == 0
    assert cli("keys", "export", old, "-o", str(old_key), "--force").code == 0, "retired: exports"
    assert cli("keys", "export", new, "-o", str(new_key)).code == 0
    assert verify(folder, old_sig, old_key).returncode == 0
    assert verify(folder, new_sig, new_key).returncode == 0
    assert verify(folder, new_sig, old_key).returncode == 1


# ---------------------------------------------------------------- through a server
# (``server``: the module's own, tests/conftest.py)


def test_a_server_serves_signatures_and_their_key(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pinbench.cli import main

    ref = "model/vision/digits-logreg@1.2.0"
    with server.client("reader") as client:
        response = client.get(f"/api/v1/artifacts/signature/{ref}")
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith(
            "application/vnd.dev.sigstore.bundle.v0.3+json"
        )
        keys = client.get("/api/v1/keys").json()
        dataset = client.get("/api/v1/artifacts/signature/dataset/sklearn-digits-test@1.0.0")
        assert dataset.status_code == 400 and "only models are signed" in dataset.json()["detail"]
        missing = client.get("/api/v1/artifacts/signature/model/vision/digits-logreg@9.0.0")
        assert missing.status_code == 404
    (key,) = [k for k in keys if k["purpose"] == "model-signing"]
    assert key["state"] == "active" and key["algorithm"] == "ecdsa-p256"

    monkeypatch.setenv("PINBENCH_URL", server.url)
    monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["reader"])
    monkeypatch.setenv("PINBENCH_HOME", "/nonexistent/the-cli-must-not-use-a-local-home")
    signature, pem = tmp_path / "model.sig", tmp_path / "key.pem"
    assert main(["show", ref, "--signature", str(signature)]) == 0
    assert main(["keys", "export", key["keyid"][:16], "-o", str(pem)]) == 0
    capsys.readouterr()
    assert pem.read_text() == key["pem"]
    assert signature.read_bytes() == response.content, "signing is deterministic (RFC 6979)"
    ws = server.workspace()
    try:
        folder = lay_out(ws, ref, tmp_path / "model")
    finally:
        ws.close()
    assert verify(folder, signature, pem).returncode == 0
