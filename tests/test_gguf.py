"""llama.cpp as a framework (issue 87): its GGUF file's header read as data, every count
bounded, against llama.cpp's own reader; llama-cpp-python built from its pinned source
archive, the archive's bytes checked before anything reads them, and the wheel installed here
the one its build recorded."""

from __future__ import annotations

import hashlib
import io
import struct
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pinbench.registry.gguf_header import GGUFRefused, check_gguf


def _str(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _strings(items: list[str]) -> bytes:
    return struct.pack("<IQ", 8, len(items)) + b"".join(_str(i) for i in items)


def gguf_bytes(
    metadata: list[tuple[str, int, bytes]], *, version: int = 3, keys: int = -1
) -> bytes:
    count = len(metadata) if keys < 0 else keys
    out = b"GGUF" + struct.pack("<IQQ", version, 0, count)
    for key, kind, value in metadata:
        out += _str(key) + struct.pack("<I", kind) + value
    return out


def _template(suffix: str, text: str) -> tuple[str, int, bytes]:
    return (f"tokenizer.chat_template{suffix}", 8, _str(text))


ARCH = ("general.architecture", 8, _str("llama"))
TOKENS = ("tokenizer.ggml.tokens", 9, _strings(["<|endoftext|>", "a", "b"]))
INTS = struct.pack("<IQ", 4, 1) + b"1234"  # an array of one u32


def test_a_gguf_files_metadata_is_read_by_key(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    ctx = ("llama.context_length", 4, struct.pack("<I", 128))
    eps = ("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 0.5))
    templates = [
        _template("", "{{ m }}"),
        *(_template(f".t{i}", "x" * (256 << 10)) for i in range(15)),
    ]
    path.write_bytes(gguf_bytes([ARCH, TOKENS, ctx, eps, *templates]))
    found = check_gguf("m.gguf", path)  # 16 chat templates, each up to 256 KiB, are taken
    assert {k: v for k, v in found.items() if "chat_template" not in k} == {
        "general.architecture": "llama",
        "tokenizer.ggml.tokens": ["<|endoftext|>", "a", "b"],
        "llama.context_length": 128,
        "llama.attention.layer_norm_rms_epsilon": 0.5,
    }
    assert found["tokenizer.chat_template"] == "{{ m }}" and len(found) == 4 + 16


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GGML" + gguf_bytes([ARCH, TOKENS])[4:], "no GGUF magic"),
        (gguf_bytes([ARCH, TOKENS], version=2), "GGUF version 2"),
        (gguf_bytes([ARCH, TOKENS], keys=10**12), "more than any model has"),
        (gguf_bytes([ARCH, TOKENS, ("split.count", 2, struct.pack("<H", 3))]), "part of a split"),
        (gguf_bytes([ARCH, TOKENS, ARCH]), "'general.architecture' is given twice"),
        (gguf_bytes([ARCH, TOKENS])[:-3], "runs past the file's end"),
        (gguf_bytes([ARCH, TOKENS], keys=3), "runs past the file's end"),
        (gguf_bytes([ARCH, ("x", 8, struct.pack("<Q", 1 << 40))]), "a string of 1099511627776"),
        (gguf_bytes([ARCH, ("x", 9, struct.pack("<IQ", 0, 1 << 30))]), "an array of 1073741824"),
        (gguf_bytes([ARCH, ("x", 9, struct.pack("<IQ", 9, 1))]), "an array of 1 items of type 9"),
        (gguf_bytes([ARCH, ("x", 13, b"")]), "unknown type 13 \\(key 'x'\\)"),
        (gguf_bytes([ARCH, ("x", 9, struct.pack("<IQ", 13, 0))]), "0 items of type 13"),
        (gguf_bytes([ARCH, ("tokenizer.ggml.tokens", 9, INTS)]), "no vocabulary"),
        (gguf_bytes([ARCH, ("x", 8, struct.pack("<Q", 2) + b"\xff\xfe")]), "not UTF-8"),
        (gguf_bytes([TOKENS]), "names no general.architecture"),
        (gguf_bytes([("general.architecture", 8, _str("ll/ama")), TOKENS]), "no general.arch"),
        (gguf_bytes([ARCH]), "no vocabulary"),
        (gguf_bytes([ARCH, TOKENS, _template("", "x" * (256 << 10 | 1))]), "longer than 262144"),
        (gguf_bytes([ARCH, TOKENS, _template(".tool_use", "x" * (300 << 10))]), "'tokenizer.c"),
        (gguf_bytes([ARCH, TOKENS, *(_template(f".t{i}", "{{ x }}") for i in range(17))]), "17"),
        (gguf_bytes([ARCH, TOKENS, ("tokenizer.chat_template", 4, b"\0" * 4)]), "not a string"),
        # llama.cpp reads a key to its first NUL: these would pass as other keys here
        (gguf_bytes([ARCH, TOKENS, _template("\0x", "x" * (300 << 10))]), "holds a NUL byte"),
        (gguf_bytes([ARCH, TOKENS, ("split.count\0", 2, struct.pack("<H", 3))]), "NUL byte"),
    ],
)
def test_a_gguf_header_pinbench_does_not_load_is_refused_naming_why(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFRefused, match=reason) as refused:
        check_gguf("folder/m.gguf", path)
    assert refused.value.path == "folder/m.gguf"


def _llama_cpp_reader() -> Any:
    """llama.cpp's own GGUF reader (``gguf-py``), from the pinned source archive."""
    from pinbench.environments.source_builds import source_tree

    tree = source_tree("llama-cpp-python", print)
    sys.path.insert(0, str(tree / "vendor" / "llama.cpp" / "gguf-py"))
    try:
        from gguf import GGUFReader  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return GGUFReader


@pytest.mark.parametrize("artifact", ["llama-cpp-python", "llama-cpp-python-q8"])
def test_the_metadata_is_what_llama_cpps_own_reader_reads(
    llama_catalog: Path, artifact: str
) -> None:
    path = llama_catalog / f"tiny-llama-{artifact}" / "llama-cpp-python" / "model.gguf"
    theirs = _llama_cpp_reader()(str(path))
    from pinbench.registry.gguf_header import Skipped

    ours = check_gguf("model.gguf", path)
    assert list(ours) == [k for k in theirs.fields if not k.startswith("GGUF.")]
    for key, value in ours.items():
        expected = theirs.fields[key].contents()
        if isinstance(value, Skipped):  # an array pinbench passes over: its length
            assert value.count == len(expected), key
        else:
            assert value == pytest.approx(expected), key
    assert isinstance(ours["tokenizer.ggml.merges"], Skipped)


def test_a_source_archive_with_other_bytes_than_the_pinned_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pinbench.environments import source_archive

    links = tmp_path / "links"
    links.mkdir()
    (links / "x-1.0.tar.gz").write_bytes(b"other bytes")
    monkeypatch.setattr(source_archive, "pip_places", lambda: ([str(links)], []))
    into = tmp_path / "into"
    into.mkdir()
    pinned = hashlib.sha256(b"the pinned bytes").hexdigest()
    with pytest.raises(source_archive.SourceArchiveUnavailable) as refused:
        source_archive.fetch("x-1.0.tar.gz", "x", pinned, into, print)
    other = hashlib.sha256(b"other bytes").hexdigest()
    assert f"has sha256 {other}, not the pinned one" in refused.value.reason
    assert list(into.iterdir()) == []


def test_a_source_archive_that_links_out_of_its_folder_is_not_unpacked(tmp_path: Path) -> None:
    from pinbench.environments.source_archive import SourceArchiveUnavailable, unpack

    archive = tmp_path / "x-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        link = tarfile.TarInfo("x-1.0/escape")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(SourceArchiveUnavailable, match="not unpacked"):
        unpack(archive, tmp_path / "out")


def test_the_installed_llama_cpp_is_the_wheel_its_build_recorded() -> None:
    """``make dev`` installed the wheel built from the pinned archive: its build record names
    the archive's sha256 and the wheel's, and the installed files are the wheel's."""
    import zipfile
    from importlib.metadata import distribution

    from pinbench.environments.source_builds import SOURCE_BUILDS, built_wheel
    from pinbench.environments.venv import build_python

    built = built_wheel("llama-cpp-python", print, build_python(print))  # kept: no build here
    record = built.record
    assert record["archive_sha256"] == SOURCE_BUILDS["llama-cpp-python"].sha256
    assert record["wheel_sha256"] == hashlib.sha256(built.path.read_bytes()).hexdigest()
    assert "-DGGML_NATIVE=ON" in str(record["options"])
    with zipfile.ZipFile(built.path) as wheel:
        recorded = wheel.read("llama_cpp_python-0.3.36.dist-info/RECORD").decode()
    installed = distribution("llama-cpp-python").read_text("RECORD") or ""
    ours = {line.split(",")[:2][0]: line.split(",")[1] for line in recorded.splitlines()}
    theirs = {line.split(",")[0]: line.split(",")[1] for line in installed.splitlines()}
    assert {k: v for k, v in ours.items() if v} == {
        k: theirs[k] for k, v in ours.items() if v
    }  # every file of the wheel, by its hash


def test_a_wheel_cache_others_may_write_to_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pinbench.environments import source_builds

    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv(source_builds.CACHE_VARIABLE, str(shared))
    with pytest.raises(source_builds.WheelCacheRefused, match="with mode 777: only its own user"):
        source_builds.cache_root()


def test_a_kept_record_naming_a_wheel_outside_its_folder_is_not_taken(tmp_path: Path) -> None:
    """A wheel is taken from the cache only where its record is the build's, it is in its
    folder, and its bytes are the record's."""
    import json

    from pinbench.environments.source_builds import RECORD, SOURCE_BUILDS, _kept

    build = SOURCE_BUILDS["llama-cpp-python"]
    folder = tmp_path / "kept"
    folder.mkdir()
    evil = tmp_path / "evil.whl"
    evil.write_bytes(b"not the build's")
    record = {
        "archive_sha256": build.sha256,
        "options": build.options,
        "wheel": "../evil.whl",
        "wheel_sha256": hashlib.sha256(b"not the build's").hexdigest(),
    }
    (folder / RECORD).write_text(json.dumps(record))
    assert _kept(folder, build) is None
    (folder / "w.whl").write_bytes(b"not the build's")
    (folder / RECORD).write_text(json.dumps({**record, "wheel": "w.whl"}))
    assert _kept(folder, build) is not None  # its wheel in its folder, the record the build's
    (folder / RECORD).write_text(json.dumps({**record, "wheel": "w.whl", "options": {}}))
    assert _kept(folder, build) is None


def test_a_build_leaves_the_kept_source_tree_as_unpacked_and_sweeps_a_killed_ones_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build runs in a copy of the kept source tree (llama-cpp-python's CMake writes its
    libraries into its source folder; the converter runs from the kept one), and a folder a
    killed build or unpacking left beside the cache's is removed by the next one. The archive
    and the compiler are stand-ins: a tree of one file, a "python" that writes into the folder
    it is run in and makes a wheel."""
    from pinbench.environments import source_archive, source_builds

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv(source_builds.CACHE_VARIABLE, str(cache))
    build = source_builds.SOURCE_BUILDS["llama-cpp-python"]
    top = f"llama_cpp_python-{build.version}"

    def fetch(archive: str, project: str, sha256: str, into: Path, say: Any) -> Path:
        path = into / archive
        with tarfile.open(path, "w:gz") as tar:
            info = tarfile.TarInfo(f"{top}/CMakeLists.txt")
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
        return path

    monkeypatch.setattr(source_archive, "fetch", fetch)
    python = tmp_path / "python"
    wheel = f"llama_cpp_python-{build.version}-cp311-cp311-linux_x86_64.whl"
    python.write_text(f'#!/bin/sh\ntouch written-by-the-build\necho wheel > "$3/{wheel}"\n')
    python.chmod(0o755)
    recipe = source_builds.recipe(build)[:16]
    killed = [
        cache / f".llama-cpp-python-{build.version}-{recipe}-x1y2",
        cache / f".llama-cpp-python-{build.version}-source-{build.sha256[:16]}-x3y4",
    ]
    for folder in killed:
        (folder / "half").mkdir(parents=True)
    built = source_builds.built_wheel("llama-cpp-python", print, lambda _: (str(python), "d"))
    assert built.path.read_text() == "wheel\n" and built.record["wheel"] == wheel
    tree = source_builds.source_tree("llama-cpp-python", print)
    assert sorted(p.name for p in tree.iterdir()) == ["CMakeLists.txt"]  # as unpacked
    assert sorted(p.name for p in built.path.parent.iterdir()) == ["build.json", "build.log", wheel]
    assert not any(folder.exists() for folder in killed)


def test_an_environment_with_a_built_wheel_is_made_again_by_another_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock pins llama-cpp-python's source archive, not the wheel built here: a kept
    environment is taken while the wheel's recipe (compilers, CPU, options) is the same; for
    another recipe another one is made, with the wheel that recipe builds, beside it (a
    process may be running from the first)."""
    import platform

    from pinbench.environments import LOCKS, parse_lock, source_builds, venv
    from pinbench.registry.lockfile import LockedEnvironment
    from pinbench.registry.manifest_parts import Platform

    env = LockedEnvironment(
        framework="llama-cpp-python",
        version="0.3.36",
        platform=Platform(),
        image=None,
        requirements=parse_lock((LOCKS / "llama-cpp-python.txt").read_text()),
        python=".".join(platform.python_version_tuple()[:2]),
    )
    made: list[Path] = []

    def build(path: Path, *_: Any) -> None:
        made.append(path)
        path.mkdir()

    monkeypatch.setattr(venv, "_build", build)
    monkeypatch.setattr(source_builds, "recipe", lambda build: "compilers of one day")
    first, again = (venv.materialise(tmp_path, env, print) for _ in range(2))
    monkeypatch.setattr(source_builds, "recipe", lambda build: "compilers of another")
    other = venv.materialise(tmp_path, env, print)
    assert (first.built, again.built, other.built) == (True, False, True)
    assert first.digest == other.digest and made == [first.path, other.path]  # the lock's
    assert first.path != other.path and first.path.is_dir()  # one in use is never made again
