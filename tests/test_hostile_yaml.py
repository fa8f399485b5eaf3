"""Hostile input at the edge: YAML built to exhaust or crash the parser, and ``file:`` sources
that reach outside the artifact. Each is refused with a message naming the problem, through
the CLI and through a real ``pinbench serve``, and leaves nothing recorded, stored or staged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from pinbench.registry.manifest import ModelManifest, parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.publish import publish
from pinbench.registry.yamlsafe import YamlRefused, load_yaml
from pinbench.workspace import Workspace
from tests.apiserver import Server, api_server
from tests.helpers import Cli, sha
from tests.hostile_yaml import HOSTILE, MODEL_BYTES, MODEL_NAME, MODEL_SHA256, Hostile, manifest
from tests.test_api import multipart

UPLOAD = {"Content-Type": "multipart/form-data; boundary=XyZ"}
SECRET = b"the contents of a file outside the artifact"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("hostile")
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite") as srv:
        yield srv


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _staged(home: Path) -> set[str]:
    """Files in the home's temp area, a process's owner lock aside (it stages nothing)."""
    return {f for f in _files(home / "tmp") if not f.startswith("owners/")}


def _flat(text: str) -> str:
    """The CLI's error, unwrapped (the console breaks long lines)."""
    return " ".join(text.split())


def _artifact(root: Path, text: str) -> Path:
    folder = root / "artifact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(MODEL_BYTES)
    path = folder / "manifest.yaml"
    path.write_text(text)
    return path


def _assert_nothing_left(cli: Cli, home: Path) -> None:
    assert json.loads(cli("list", "--json").out) == [], "nothing is recorded"
    assert _files(home / "blobs") == set(), "no blob is stored"
    assert _staged(home) == set(), "nothing staged is left behind"


# ---------------------------------------------------------------- hostile YAML


def test_the_manifest_the_hostile_ones_are_built_from_publishes(cli: Cli, tmp_path: Path) -> None:
    """The control: without its hostile part each document would publish."""
    cli("init")
    result = cli("publish", str(_artifact(tmp_path, manifest())))
    assert result.code == 0, result.err
    assert f"published model/{MODEL_NAME}@1.0.0" in result.out


@pytest.mark.parametrize("case", HOSTILE, ids=[h.name for h in HOSTILE])
def test_the_cli_refuses_hostile_yaml(cli: Cli, tmp_path: Path, case: Hostile) -> None:
    cli("init")
    result = cli("publish", str(_artifact(tmp_path, case.text)))
    assert result.code == 1, f"{case.why}: {result.err}"
    assert case.message in _flat(result.err), result.err
    assert "Traceback" not in result.err
    _assert_nothing_left(cli, tmp_path / "home")


@pytest.mark.parametrize("case", HOSTILE, ids=[h.name for h in HOSTILE])
def test_the_server_refuses_hostile_yaml(server: Server, case: Hostile) -> None:
    home = server.home
    before = _staged(home), _files(home / "blobs")
    body = multipart([("manifest", None, case.text.encode()), ("file", "model.onnx", MODEL_BYTES)])
    with server.client("admin") as c:
        response = c.post("/api/v1/artifacts", content=body, headers=UPLOAD)
        assert response.status_code == 400, f"{case.why}: {response.text[:500]}"
        assert case.message in response.json()["detail"]
        assert c.get("/api/v1/artifacts", params={"name": MODEL_NAME}).json() == []
        assert c.get("/api/v1/health").status_code == 200
    assert (_staged(home), _files(home / "blobs")) == before, "nothing stored or staged"
    assert "Traceback" not in (home / "serve.log").read_text()


def test_the_cli_refuses_a_hostile_request(cli: Cli, tmp_path: Path) -> None:
    """Requests (``pinbench lock``) are read by the same loader."""
    cli("init")
    request = tmp_path / "request.yaml"
    request.write_text("model: a@1\ndataset: b@1\nbatch_size: 1\nbatch_size: 2\n")
    result = cli("lock", str(request), "-o", str(tmp_path / "x.lock"))
    assert result.code == 1
    assert "the key 'batch_size' is given twice" in _flat(result.err)
    assert not (tmp_path / "x.lock").exists()


LOADER_CASES = [
    # (document, what load_yaml gives, or the refusal it names, why)
    ("a: &x [1, 2]\nb: *x\n", {"a": [1, 2], "b": [1, 2]}, "a few aliases are fine"),
    ("base: &b {x: 1}\nd: {<<: *b, x: 2}\n", {"base": {"x": 1}, "d": {"x": 2}}, "merge keys"),
    ("a: '.inf'\n", {"a": ".inf"}, "quoted, .inf is text"),
    ("a: 2020-13-45\n", "cannot read the value '2020-13-45'", "a timestamp's ValueError"),
    ("a: 1.0e+999\n", "is not finite", "overflows to inf"),
    ("a: 1\n---\nb: 2\n", "expected a single document", "one document only"),
    ("a: *nope\n", "found undefined alias", "an alias to nothing"),
    (
        "a: &a " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 30 + "*a" + "]" * 30 + "\n",
        "nesting deeper than 64 levels once \\*a is expanded",
        "depth counts aliases expanded: 40 levels inside 30",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected", "why"), LOADER_CASES, ids=[c[2] for c in LOADER_CASES]
)
def test_load_yaml(text: str, expected: object, why: str) -> None:
    if isinstance(expected, str):
        with pytest.raises(YamlRefused, match=expected):
            load_yaml(text)
    else:
        assert load_yaml(text) == expected, why


def test_refusals_name_the_line_and_column() -> None:
    with pytest.raises(YamlRefused) as refused:
        load_yaml("a: 1\nb:\n  c: 2\n  c: 3\n")
    assert (refused.value.line, refused.value.column) == (4, 3)
    assert "(line 4, column 3)" in refused.value.reason


def test_scalars_as_text_keeps_the_limits() -> None:
    assert load_yaml("a: 1.0\nb: [x, .inf]\n", scalars_as_text=True) == {
        "a": "1.0",
        "b": ["x", ".inf"],
    }
    with pytest.raises(YamlRefused, match="given twice"):
        load_yaml("a: 1\na: 2\n", scalars_as_text=True)
    with pytest.raises(YamlRefused, match="alias amplification"):
        load_yaml(HOSTILE[0].text, scalars_as_text=True)


def _infinite_model() -> dict[str, object]:
    data = load_yaml(manifest())
    assert isinstance(data, dict)
    return {**data, "attributes": {"top1": float("inf")}}


def test_data_that_cannot_be_digested_is_not_a_manifest() -> None:
    """Data not read by the loader (JSON, a dict) gets the same refusal as .inf in YAML."""
    with pytest.raises(ManifestError, match="cannot be digested: Out of range float"):
        parse_manifest(_infinite_model())


def test_a_manifest_that_cannot_be_recorded_leaves_nothing_staged(
    ws: Workspace, tmp_path: Path
) -> None:
    """The digest is taken after the files are staged: when it fails, they go too."""
    built = msgspec.convert(_infinite_model(), type=ModelManifest, strict=True)
    folder = _artifact(tmp_path, "").parent
    with pytest.raises(ValueError, match="Out of range float"):
        publish(ws, built, manifest_dir=folder)
    assert _staged(ws.settings.home) == set()
    assert _files(ws.settings.home / "blobs") == set()


# ---------------------------------------------------------------- file: sources


def _escape(root: Path, how: str) -> tuple[Path, list[str]]:
    """A manifest in ``root/artifact`` whose file's bytes are asked for outside it; the
    extra CLI arguments."""
    outside = root / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.txt").write_bytes(SECRET)
    folder = root / "artifact"
    folder.mkdir(parents=True, exist_ok=True)
    args: list[str] = []
    source = {
        "absolute": f"file:{outside / 'secret.txt'}",
        "file URI": f"file://{outside / 'secret.txt'}",
        "climbs": "file:../outside/secret.txt",
        "climbs inside": "file:sub/../../outside/secret.txt",
        "symlink out": "file:link/secret.txt",
    }.get(how)
    if how == "symlink out":
        (folder / "link").symlink_to(outside, target_is_directory=True)
    if how == "--files symlink":
        files = root / "files"
        files.mkdir()
        (files / "model.onnx").symlink_to(outside / "secret.txt")
        args = ["--files", str(files)]
    entry = f"{{path: model.onnx, sha256: {MODEL_SHA256}"
    entry += f", source: '{source}'}}" if source else "}"
    text = manifest().replace(
        f"{{path: model.onnx, sha256: {MODEL_SHA256}, size: {len(MODEL_BYTES)}}}", entry
    )
    path = folder / "manifest.yaml"
    path.write_text(text)
    return path, args


ESCAPES = [
    # (how the file is reached, what the refusal says)
    ("absolute", "not an absolute path"),
    ("file URI", "not an absolute path"),
    ("climbs", "must not contain '..'"),
    ("climbs inside", "must not contain '..'"),
    ("symlink out", "resolves (through a symlink) outside the artifact directory"),
    ("--files symlink", "resolves (through a symlink) outside the artifact directory"),
]


@pytest.mark.parametrize(("how", "message"), ESCAPES, ids=[e[0] for e in ESCAPES])
def test_the_cli_refuses_files_outside_the_artifact(
    cli: Cli, tmp_path: Path, how: str, message: str
) -> None:
    """Refused before the file is opened: the error gives away nothing of it (a wrong
    sha256 used to print the outside file's real digest)."""
    cli("init")
    path, args = _escape(tmp_path, how)
    result = cli("publish", str(path), *args)
    assert result.code == 1, result.out
    assert message in _flat(result.err), result.err
    assert sha(SECRET) not in result.err + result.out
    _assert_nothing_left(cli, tmp_path / "home")


@pytest.mark.parametrize(("how", "message"), ESCAPES, ids=[e[0] for e in ESCAPES])
def test_the_cli_uploads_no_file_outside_the_artifact(
    cli: Cli,
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    message: str,
) -> None:
    """With PINBENCH_URL the same refusal comes before anything is sent."""
    monkeypatch.setenv("PINBENCH_URL", server.url)
    monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["admin"])
    before = _files(server.home / "blobs")
    path, args = _escape(tmp_path, how)
    result = cli("publish", str(path), *args)
    assert result.code == 1, result.out
    assert message in _flat(result.err), result.err
    assert sha(SECRET) not in result.err + result.out
    with server.client("admin") as c:
        assert c.get("/api/v1/artifacts", params={"name": MODEL_NAME}).json() == []
    assert _files(server.home / "blobs") == before


def test_a_file_source_inside_the_artifact_still_publishes(cli: Cli, tmp_path: Path) -> None:
    cli("init")
    folder = tmp_path / "artifact"
    (folder / "build").mkdir(parents=True)
    (folder / "build" / "model.onnx").write_bytes(MODEL_BYTES)
    entry = f"{{path: model.onnx, sha256: {MODEL_SHA256}, source: 'file:build/model.onnx'}}"
    text = manifest().replace(
        f"{{path: model.onnx, sha256: {MODEL_SHA256}, size: {len(MODEL_BYTES)}}}", entry
    )
    (folder / "manifest.yaml").write_text(text)
    result = cli("publish", str(folder / "manifest.yaml"))
    assert result.code == 0, result.err
