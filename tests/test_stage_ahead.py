"""`pinbench publish MANIFEST` stages the manifest's large local files while it imports the
registry and checks the manifest (``pinbench.registry.stage_ahead``): the published artifact
is the same as without it, only files the command itself would open are staged, a file the
child could not stage is staged again and named the usual way, a child that lies or vanishes
changes nothing, and however the command ends no scratch is left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from pinbench.artifacts.digest import Digest, Progress
from pinbench.artifacts.store import StagedBlob
from pinbench.registry import stage_ahead
from pinbench.registry.stage_ahead import StagesAhead, planned, stages_ahead
from pinbench.workspace import Workspace
from tests.helpers import Cli, dataset_manifest, dump, sha, write_files

BIG = 64 * 1024


@pytest.fixture(autouse=True)
def small_is_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of BIG bytes count as large enough to stage ahead (the real floor is 16 MiB)."""
    monkeypatch.setattr(stage_ahead, "AHEAD_MIN_BYTES", BIG)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[StagedBlob | None]:
    """What every ``StagesAhead.take`` returned."""
    seen: list[StagedBlob | None] = []
    original = StagesAhead.take

    def take(
        self: StagesAhead, source: Path, digest: Digest, p: Progress | None
    ) -> StagedBlob | None:
        got = original(self, source, digest, p)
        seen.append(got)
        return got

    monkeypatch.setattr(StagesAhead, "take", take)
    return seen


def _dataset(folder: Path, files: dict[str, bytes], version: str = "1.0.0") -> Path:
    entries = write_files(folder, files)
    return dump(folder / "dataset.yaml", dataset_manifest("d/big", version, entries))


def _scratch(ws: Workspace) -> list[str]:
    """Entries in the store's temp area and owner locks of processes no longer alive."""
    left = sorted(p.name for p in ws.store.tmp.iterdir())
    owners = ws.store.tmp.parent / "owners"
    mine = {f"{o}.lock" for o in _live_owners()}
    return left + sorted(p.name for p in owners.glob("*") if p.name not in mine)


def _live_owners() -> Iterator[str]:
    from pinbench.artifacts import scratch

    for _, owner, _ in scratch._OWNERS._held.values():
        yield owner


def _publish_early(cli: Cli, manifest: Path) -> tuple[int, str, str]:
    """``pinbench publish MANIFEST``: the command stages ahead itself."""
    done = cli("publish", str(manifest))
    return done.code, done.out, done.err


def test_planned_lists_large_local_files_inside_the_manifest_folder(tmp_path: Path) -> None:
    folder = tmp_path / "art"
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"o" * BIG)
    written = write_files(folder, {"a.bin": b"a" * BIG, "small.bin": b"s", "b.bin": b"b" * BIG})
    (folder / "link.bin").symlink_to(outside)
    entries: list[Any] = [*written]
    entries += [
        {"path": "../outside.bin", "sha256": sha(b"o" * BIG)},
        {"path": "link.bin", "sha256": sha(b"o" * BIG)},
        {"path": str(outside), "sha256": sha(b"o" * BIG)},
        {"path": "a.bin", "sha256": "not a digest"},
        {"path": "b.bin", "sha256": sha(b"b" * BIG), "source": "https://example.org/b.bin"},
        {"path": "missing.bin", "sha256": sha(b"m")},
        {"path": 3, "sha256": sha(b"m")},
        "not a mapping",
    ]
    os.mkfifo(folder / "fifo")
    entries.append({"path": "fifo", "sha256": sha(b"")})
    manifest = dump(folder / "m.yaml", dataset_manifest("d/x", "1.0.0", entries))
    assert planned(manifest) == [
        ((folder / "a.bin").resolve(), Digest(sha(b"a" * BIG))),
        ((folder / "b.bin").resolve(), Digest(sha(b"b" * BIG))),
    ]


@pytest.mark.parametrize(
    "text", ["", "[unclosed", "- a list", "files: 3", "files: [3]", "a: &x [*x]", "\xff"]
)
def test_a_manifest_not_as_expected_plans_nothing(tmp_path: Path, text: str) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(text, errors="surrogateescape")
    assert planned(manifest) == []
    assert planned(tmp_path / "missing.yaml") == []


def test_publish_takes_the_blob_staged_ahead(
    ws: Workspace, cli: Cli, tmp_path: Path, taken: list[StagedBlob | None]
) -> None:
    data = os.urandom(3 * BIG)
    manifest = _dataset(tmp_path / "art", {"data.bin": data})
    code, out, err = _publish_early(cli, manifest)
    assert code == 0, err
    assert "published dataset/d/big@1.0.0" in out
    assert len(taken) == 1 and taken[0] is not None  # the child's blob, not a second copy
    assert ws.store.path(Digest(sha(data))).read_bytes() == data
    assert _scratch(ws) == []


def test_a_file_that_does_not_match_its_digest_is_named_and_nothing_is_kept(
    ws: Workspace, cli: Cli, tmp_path: Path, taken: list[StagedBlob | None]
) -> None:
    folder = tmp_path / "art"
    manifest = _dataset(folder, {"data.bin": b"x" * BIG})
    (folder / "data.bin").write_bytes(b"y" * BIG)
    code, _, err = _publish_early(cli, manifest)
    assert code != 0
    assert "data.bin" in err and sha(b"y" * BIG) in err
    assert taken == [None]  # the child refused it; the command staged it again and said why
    assert cli("list").out.count("d/big") == 0
    assert not ws.store.has(Digest(sha(b"x" * BIG)))
    assert _scratch(ws) == []


def test_a_refused_manifest_leaves_no_blob_staged_ahead(
    ws: Workspace, cli: Cli, tmp_path: Path
) -> None:
    folder = tmp_path / "art"
    manifest = _dataset(folder, {"data.bin": os.urandom(2 * BIG)})
    manifest.write_text(manifest.read_text().replace("kind: dataset", "kind: dataset\nbogus: 1"))
    assert planned(manifest)  # the child is started ...
    code, _, err = _publish_early(cli, manifest)
    assert code != 0 and "bogus" in err  # ... and the real parse refuses the manifest
    assert list(ws.store.blobs.rglob("*")) == []
    assert _scratch(ws) == []


def test_a_child_that_reports_nothing_leaves_the_staging_to_the_command(
    ws: Workspace, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stage_ahead, "CHILD", "import sys; sys.exit(3)")
    data = os.urandom(2 * BIG)
    code, _, err = _publish_early(cli, _dataset(tmp_path / "art", {"data.bin": data}))
    assert code == 0, err
    assert ws.store.has(Digest(sha(data)))
    assert _scratch(ws) == []


def test_a_report_naming_a_file_outside_the_temp_area_is_not_believed(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    data = b"v" * BIG
    source = tmp_path / "data.bin"
    source.write_bytes(data)
    liar = (
        f"import sys; print('owner {'0' * 16}'); print('= {sha(data)} {BIG} 0 {victim}',"
        " flush=True); sys.stdin.read()"
    )
    monkeypatch.setattr(stage_ahead, "CHILD", liar)
    with stages_ahead(ws.store, [(source, Digest(sha(data)))]) as ahead:
        assert ahead.take(source, Digest(sha(data)), None) is None
    assert victim.read_text() == "keep me"


def test_only_the_file_and_digest_that_were_staged_are_taken(ws: Workspace, tmp_path: Path) -> None:
    data = os.urandom(BIG)
    source = tmp_path / "data.bin"
    source.write_bytes(data)
    digest = Digest(sha(data))
    with stages_ahead(ws.store, [(source, digest)]) as ahead:
        assert ahead.take(tmp_path / "other.bin", digest, None) is None
        assert ahead.take(source, Digest(sha(b"else")), None) is None
        blob = ahead.take(source, digest, None)
        assert blob is not None and blob.temp.read_bytes() == data
        assert ahead.take(source, digest, None) is None  # taken once
        ws.store.commit(blob)
    assert ws.store.path(digest).read_bytes() == data
    assert _scratch(ws) == []


def test_leaving_while_the_child_copies_stops_it_and_removes_its_scratch(
    ws: Workspace, tmp_path: Path
) -> None:
    source = tmp_path / "slow"  # a pipe: the child's copy waits for bytes that never end
    os.mkfifo(source)
    feeds: list[BinaryIO] = []
    try:
        with stages_ahead(ws.store, [(source, Digest(sha(b"")))]) as ahead:
            feeds.append(source.open("wb"))  # kept open until the child has been stopped
            feeds[0].write(b"x" * BIG)
            feeds[0].flush()
            while not [p for p in ws.store.tmp.iterdir() if p.name.startswith("stage-")]:
                assert ahead._child is not None and ahead._child.poll() is None
                time.sleep(0.01)
            # leaving now (e.g. the manifest was refused) while the child is mid-copy
    finally:
        for feed in feeds:
            feed.close()
    assert ahead._child is not None and ahead._child.returncode == 1  # unwound by SIGTERM
    assert _scratch(ws) == []


def test_blobs_staged_but_never_taken_are_removed(ws: Workspace, tmp_path: Path) -> None:
    data = os.urandom(2 * BIG)
    source = tmp_path / "data.bin"
    source.write_bytes(data)
    with stages_ahead(ws.store, [(source, Digest(sha(data)))]) as ahead:
        assert ahead._files[(source, sha(data))].done.wait(30)
        assert [p for p in ws.store.tmp.iterdir() if p.name.startswith("stage-")]
    assert ahead._child is not None and ahead._child.returncode == 0
    assert _scratch(ws) == []


def test_publish_with_files_elsewhere_stages_nothing_ahead(
    ws: Workspace, cli: Cli, tmp_path: Path, taken: list[StagedBlob | None]
) -> None:
    """``--files DIR``: the files are not where the manifest's folder says; the command stages
    them itself."""
    manifest = _dataset(tmp_path / "art", {"data.bin": b"d" * BIG})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.bin").write_bytes(b"d" * BIG)
    done = cli("publish", str(manifest), "--files", str(elsewhere))
    assert done.code == 0, done.err
    assert taken == [None]  # offered nothing: staged by the command
    assert _scratch(ws) == []


def test_publish_through_the_console_script(ws: Workspace, tmp_path: Path) -> None:
    """The installed script with a file over the real floor: published, nothing left over."""
    data = os.urandom(17 * 1024 * 1024)
    manifest = _dataset(tmp_path / "art", {"data.bin": data})
    script = Path(sys.executable).parent / "pinbench"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env["PINBENCH_HOME"] = str(ws.settings.home)
    env["PINBENCH_DATABASE_URL"] = ws.settings.database_url
    done = subprocess.run([str(script), "publish", str(manifest)], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert ws.store.path(Digest(sha(data))).read_bytes() == data
    assert list(ws.store.tmp.iterdir()) == []  # (the command's own owner lock stays, as ever)


def test_a_manifest_that_is_not_a_regular_file_is_left_to_the_command(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``publish /dev/stdin`` or ``<(...)``: a pipe can be read once, and that is the command's."""
    monkeypatch.setenv("PINBENCH_HOME", str(ws.settings.home))
    pipe = tmp_path / "manifest.yaml"
    os.mkfifo(pipe)
    assert planned(pipe) == []  # returns at once: nothing opened the pipe


def test_only_the_childs_own_scratch_is_reclaimed_and_a_bad_leftover_is_no_error(
    ws: Workspace, cli: Cli, tmp_path: Path
) -> None:
    """Someone else's leftovers (here an owner 'lock' that is a folder, as a broken shared home
    may hold) are not the command's business: publish succeeds and leaves them alone."""
    owners = ws.store.tmp.parent / "owners"
    owners.mkdir(exist_ok=True)
    odd = owners / "0123456789abcdef.lock"
    odd.mkdir()
    dead = ws.store.tmp / "stage-fedcba9876543210-leftover"
    dead.write_bytes(b"a dead process's scratch")
    data = os.urandom(2 * BIG)
    code, _, err = _publish_early(cli, _dataset(tmp_path / "art", {"data.bin": data}))
    assert code == 0, err
    assert odd.is_dir() and dead.exists()  # for `pinbench gc`, not for publish
    assert ws.store.has(Digest(sha(data)))


def test_a_parent_that_goes_away_leaves_a_quiet_child_and_no_blob(
    ws: Workspace, tmp_path: Path
) -> None:
    data = os.urandom(2 * BIG)
    source = tmp_path / "data.bin"
    source.write_bytes(data)
    child = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            stage_ahead.CHILD,
            str(Path(stage_ahead.__file__).resolve().parents[2]),
            str(ws.store.root),
            str(source),
            sha(data),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().startswith(b"owner ")
    assert child.stdout.readline().startswith(b"= ")
    child.stdout.close()  # the parent is gone: its end of both pipes closes
    child.stdin.close()
    assert child.wait(30) == 0
    assert child.stderr is not None and child.stderr.read() == b""  # no traceback
    assert [p for p in ws.store.tmp.iterdir() if p.name.startswith("stage-")] == []
