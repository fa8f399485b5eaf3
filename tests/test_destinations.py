"""Every command and option that writes a file takes its destination through one function
(``pinbench.artifacts.destination``, decision 289), and this table walks every one of them.

For each: a character device (a node made here as ``/dev/null`` is made) is written through
and stays a device; a FIFO is written through (read here from a thread) and stays a FIFO; an
existing regular file is refused without ``--force`` and replaced with it (appended to, where
the option appends); a folder is refused with one line naming why (exit 1, no traceback) and
nothing is made. The table is checked against the CLI contract: every path a command takes is
a row here, a folder a command fills, or an input, so a new option that writes a file cannot
come without a row.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.request import parse_request
from tests.helpers import (
    DIGITS,
    Cli,
    CliResult,
    Home,
    in_process_cli,
    need_root,
    published_home,
    run_digits,
)

CONTRACT: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "cli_contract.json").read_text()
)
QUICK = {"min_duration_ms": 0, "min_query_count": 50, "max_query_count": 50}
MLMODELSCOPE = Path(__file__).parent / "data" / "mlmodelscope" / "tensorflow"


@dataclass(frozen=True)
class Writer:
    command: str
    option: str
    """The parameter's name in the CLI contract."""
    line: str
    """The command line: ``{dest}`` where the destination goes, ``{...}`` ``Made``'s values."""
    ok: int = 0
    """The exit code when it wrote (the gate: 2, inconclusive with one run)."""
    append: bool = False
    """An existing file is appended to (a job summary), not replaced."""
    inside: str | None = None
    """The destination is this file in the folder the command is given."""
    copies: tuple[str, ...] = ()
    """Inputs copied beside the destination first (a manifest's files are under its folder);
    ``{here}`` is that folder."""


SAMPLES = "manifest dataset {samples} --labels none"
#      command                option        the command line (split at spaces)
WRITERS = [
    Writer("lock",                "output",     "lock {request} -o {dest}"),  # the issue's own
    Writer("runs attest",         "output",     "runs attest {accuracy} -o {dest}"),
    Writer("runs outputs",        "output",     "runs outputs {accuracy} -o {dest}"),
    Writer("runs report",         "html",       "runs report {traced} --html {dest}"),
    Writer("runs report",         "md",         "runs report {traced} --md {dest}"),
    Writer("runs report",         "csv",        "runs report {traced} --csv {dest}"),
    Writer("runs report",         "parquet",    "runs report {traced} --parquet {dest}"),
    Writer("runs trace",          "chrome",     "runs trace {traced} --chrome {dest}"),
    Writer("keys export",         "output",     "keys export {keyid} -o {dest}"),
    Writer("show",                "signature",  "show {model} --signature {dest}"),
    Writer("import-mlmodelscope", "output",     "import-mlmodelscope {mlmodelscope} -o {dest}"),
    Writer("manifest model",      "output",     "manifest model {onnx} -o {dest}",
           copies=("onnx",)),
    Writer("manifest framework",  "output",     "manifest framework {framework} -o {dest}"),
    Writer("manifest dataset",    "output",     f"{SAMPLES} -o {{dest}}", copies=("samples",)),
    Writer("manifest dataset",    "file_index", f"{SAMPLES} --file-index {{dest}} -o {{here}}/m",
           copies=("samples",)),  # the manifest beside the index, which may be a device
    Writer("catalog publish",     "record",     "catalog publish {home} {catalog} --record {dest}"),
    Writer("gate",                "markdown",   "gate --run {measured} --markdown {dest}", ok=2,
           append=True),  # inconclusive with one run (exit 2), its summary written
    Writer("schema",              "out_dir",    "schema {dest}", inside="model.schema.json"),
    Writer("study report",        "html_path",  "study report seed-quick --html {dest}"),
]  # fmt: skip

#        command             parameter    why it is no file destination
FOLDERS = {
    ("backup", "folder"): "a folder, absent or empty: backup refuses any other (decision 149)",
    ("catalog prepare", "out_dir"): "the pipeline stage's own folder (dvc removes it first)",
    ("catalog train", "out_dir"): "the pipeline stage's own folder",
    ("catalog export", "out_dir"): "the pipeline stage's own folder",
    ("catalog evaluate", "out_dir"): "the pipeline stage's own folder",
    ("catalog report", "out_dir"): "the pipeline stage's own folder",
    ("catalog publish", "home"): "a registry's home, made or added to",
    ("demo", "workdir"): "the demo's working folder",
    ("agent start", "cache"): "the agent's blob cache",
}
INPUTS = {
    ("attest verify", "file"), ("attest verify", "key"), ("attest verify", "blobs"),
    ("catalog evaluate", "registry"), ("catalog export", "weights_dir"),
    ("catalog publish", "folders"), ("catalog report", "eval_dir"), ("catalog train", "data_dir"),
    ("digest", "files"), ("gate", "lockfile"), ("import-mlmodelscope", "file"),
    ("lock", "request"), ("lockfile import", "lockfile"), ("manifest dataset", "data"),
    ("manifest dataset", "names"), ("manifest model", "files"), ("manifest model", "steps"),
    ("publish", "manifest"), ("publish", "files"), ("run", "lockfile"), ("restore", "folder"),
    ("serve", "config"), ("verify", "lockfile"),
}  # fmt: skip
PATH_TYPES = {"<path>", "<file>", "<directory>", "<list[Path]>"}


def test_the_table_names_every_path_the_cli_contract_takes() -> None:
    """A new option or argument that takes a path is a row of ``WRITERS``, a folder or an
    input: none is left out, none is listed twice, none is listed that the CLI lacks."""
    paths = {
        (command, param["name"])
        for command, spec in CONTRACT.items()
        for param in spec["params"]
        if param["type"] in PATH_TYPES
    }
    writers = {(w.command, w.option) for w in WRITERS}
    assert len(writers) == len(WRITERS)
    assert not (writers & set(FOLDERS)) and not (writers & INPUTS) and not (INPUTS & set(FOLDERS))
    assert writers | set(FOLDERS) | INPUTS == paths
    for command in {w.command for w in WRITERS if not w.append}:
        assert "force" in {p["name"] for p in CONTRACT[command]["params"]}, command


@dataclass
class Made:
    home: Home
    root: Path
    values: dict[str, str]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Made]:
    """A home with the digits catalog, an accuracy run, a performance run traced at the model
    level and one not traced (in a series, given a threshold), and what each command reads."""
    root = tmp_path_factory.mktemp("destinations")
    with published_home(root / "home", catalog_dir) as home:
        accuracy = run_digits(home.ws)
        lock = service.lock(home.ws, parse_request({**DIGITS, "scenario": QUICK}))[0]
        traced = run_lockfile(home.ws, lock, say=lambda _: None, trace="model").id
        measured = run_lockfile(home.ws, lock, say=lambda _: None).id  # in its series
        samples = root / "samples"
        samples.mkdir()
        for i in range(3):
            np.save(samples / f"{i}.npy", np.full((2, 2), i, dtype=np.float32))
        request = root / "request.yaml"
        request.write_text(json.dumps(DIGITS))
        import onnxruntime

        yield Made(
            home,
            root,
            {
                "accuracy": accuracy,
                "traced": traced,
                "measured": measured,
                "request": str(request),
                "samples": str(samples),
                "model": "model/vision/digits-logreg@1.0.0",
                "onnx": str(catalog_dir / "digits-logreg-1.0.0" / "digits-logreg.onnx"),
                "framework": f"onnxruntime=={onnxruntime.__version__}",
                "mlmodelscope": str(MLMODELSCOPE / "MobileNet_v1_1.0_224.yml"),
                "home": str(root / "catalog-home"),
                "catalog": str(catalog_dir),
            },
        )


@pytest.fixture
def cli(made: Made, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    run = in_process_cli(monkeypatch, capsys, made.home.home, made.home.db)
    if "keyid" not in made.values:
        keys = json.loads(run("keys", "list", "--json").out)
        made.values["keyid"] = next(k["keyid"] for k in keys if k["purpose"] == "attestation")
        series = json.loads(run("series", "list", "--json").out)
        name = next(s["name"] for s in series if ":performance:" in s["name"])
        threshold = ("series", "threshold", "set", name, "throughput_sps")
        assert run(*threshold, "--test", "relative", "--max-change", "0.5").code == 0
    return run


def _invoke(cli: Cli, made: Made, writer: Writer, dest: Path, *extra: str) -> CliResult:
    """The command of ``writer`` writing to ``dest``; an exception that escapes it is a
    traceback (code -1)."""
    where = dest.parent if writer.inside else dest
    values = dict(made.values)
    for key in writer.copies:
        values[key] = str(dest.parent / Path(made.values[key]).name)
    args = [a.format(dest=where, here=dest.parent, **values) for a in writer.line.split()]
    try:
        return cli(*args, *extra)
    except Exception as exc:  # what a user would see as a traceback
        return CliResult(-1, "", f"Traceback: {exc!r}")


def _case(tmp_path: Path, made: Made, writer: Writer) -> Path:
    """Where this case writes: a file in a folder of its own (with ``writer.copies``)."""
    folder = tmp_path / "out"
    folder.mkdir()
    for key in writer.copies:
        source = Path(made.values[key])
        if source.is_dir():
            shutil.copytree(source, folder / source.name)
        else:
            shutil.copyfile(source, folder / source.name)
    return folder / (writer.inside or "dest")


def _left(dest: Path) -> list[str]:
    """What the case's folder holds besides the inputs and the files a command names itself
    (the other schemas, the manifest beside an index)."""
    named = {"samples", "digits-logreg.onnx", "m"}
    return sorted(
        p.name
        for p in dest.parent.iterdir()
        if not p.name.endswith(".schema.json") and p.name not in named
    )


def _ids(writers: list[Writer]) -> list[str]:
    return [f"{w.command} {w.option}" for w in writers]


@pytest.fixture
def root() -> None:
    need_root("making a device node")


@pytest.mark.parametrize("writer", WRITERS, ids=_ids(WRITERS))
def test_a_character_device_is_written_through_and_stays_one(
    cli: Cli, made: Made, tmp_path: Path, writer: Writer, root: None
) -> None:
    """The issue's case: as root, ``-o /dev/null`` became a regular file."""
    dest = _case(tmp_path, made, writer)
    os.mknod(dest, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    done = _invoke(cli, made, writer, dest)
    assert done.code == writer.ok, done.err
    assert stat.S_ISCHR(dest.lstat().st_mode) and dest.lstat().st_rdev == os.makedev(1, 3)
    assert _left(dest) in ([dest.name], [])  # no temp left


@pytest.mark.parametrize("writer", WRITERS, ids=_ids(WRITERS))
def test_a_fifo_is_written_through_and_stays_one(
    cli: Cli, made: Made, tmp_path: Path, writer: Writer
) -> None:
    dest = _case(tmp_path, made, writer)
    os.mkfifo(dest)
    kept = tmp_path / "the-fifo"  # the same FIFO, whatever happens to its name
    os.link(dest, kept)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(kept.read_bytes()), daemon=True)
    reader.start()
    done = _invoke(cli, made, writer, dest)
    if reader.is_alive():  # the command never opened it: let the reader see an end
        with contextlib.suppress(OSError):  # ENXIO: the reader read its end meanwhile
            os.close(os.open(kept, os.O_WRONLY | os.O_NONBLOCK))
    reader.join(timeout=60)
    assert done.code == writer.ok, done.err
    assert got and got[0], "nothing came through the pipe"
    assert stat.S_ISFIFO(dest.lstat().st_mode)
    assert _left(dest) in ([dest.name], [])


@pytest.mark.parametrize("writer", WRITERS, ids=_ids(WRITERS))
def test_an_existing_file_is_replaced_only_with_force(
    cli: Cli, made: Made, tmp_path: Path, writer: Writer
) -> None:
    dest = _case(tmp_path, made, writer)
    theirs = b"a file the command did not write\n"
    dest.write_bytes(theirs)
    if writer.append:  # a job summary: appended to, never replaced
        done = _invoke(cli, made, writer, dest)
        assert done.code == writer.ok, done.err
        assert dest.read_bytes().startswith(theirs) and len(dest.read_bytes()) > len(theirs)
        return
    refused = _invoke(cli, made, writer, dest)
    assert refused.code == 1, refused.err
    assert "the file exists (give --force to replace it)" in refused.err
    assert "Traceback" not in refused.err and refused.err.strip().count("\n") == 0
    assert dest.read_bytes() == theirs
    forced = _invoke(cli, made, writer, dest, "--force")
    assert forced.code == writer.ok, forced.err
    assert dest.read_bytes() not in (theirs, b"") and stat.S_ISREG(dest.lstat().st_mode)
    assert _left(dest) in ([dest.name], [])


@pytest.mark.parametrize("writer", WRITERS, ids=_ids(WRITERS))
def test_a_folder_is_refused_in_one_line_and_nothing_is_made(
    cli: Cli, made: Made, tmp_path: Path, writer: Writer
) -> None:
    dest = _case(tmp_path, made, writer)
    dest.mkdir()
    done = _invoke(cli, made, writer, dest, *(() if writer.append else ("--force",)))
    assert done.code == 1, (done.out, done.err)
    assert "Traceback" not in done.err and done.err.strip().count("\n") == 0, done.err
    assert f"{dest}: it is a folder" in done.err
    assert list(dest.iterdir()) == []
    assert _left(dest) in ([dest.name], [])


def test_schema_into_a_file_is_refused_in_one_line(cli: Cli, tmp_path: Path) -> None:
    """The issue's case: ``schema DIR`` on an existing file ended in a FileExistsError."""
    taken = tmp_path / "schemas"
    taken.write_bytes(b"not a folder\n")
    done = cli("schema", str(taken))
    assert done.code == 1 and "Traceback" not in done.err, done.err
    assert f"DIR {taken}: it is a regular file, not a folder" in done.err
    assert taken.read_bytes() == b"not a folder\n" and os.listdir(tmp_path) == ["schemas"]


#   what the path is                 made first  the path   what becomes of it
PATHS = [
    ("a link to a file: the file",    "link",     "l",       "replaced"),
    ("a dangling link: refused",      "dangling", "l",       "a symbolic link to nowhere"),
    ("a missing folder: refused",     "",         "no/such", "the folder"),
    ("a file as a folder: refused",   "file",     "f/x",     "is a regular file, not a folder"),
    ("a socket: refused",             "socket",   "s",       "it is a socket: name a file"),
    ("'-' where it is not taken",     "",         "-",       "'-' (standard output) is not taken"),
]  # fmt: skip


def _make(root: Path, what: str) -> None:
    import socket

    if what in ("file", "link"):
        (root / "f").write_bytes(b"x")
    if what == "link":
        (root / "l").symlink_to("f")
    if what == "dangling":
        (root / "l").symlink_to("nowhere")
    if what == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(root / "s"))


@pytest.mark.parametrize(
    ("made", "name", "says"), [r[1:] for r in PATHS], ids=[r[0] for r in PATHS]
)
def test_what_a_destination_may_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: str, name: str, says: str
) -> None:
    from pinbench.artifacts.destination import DestinationRefused, destination, write

    monkeypatch.chdir(tmp_path)
    _make(tmp_path, made)
    before = sorted(os.listdir(tmp_path))
    if says != "replaced":
        with pytest.raises(DestinationRefused, match=re.escape(says)):
            destination(name, option="-o", force=True)
        assert sorted(os.listdir(tmp_path)) == before
        return
    write(destination(name, option="-o", force=True), b"new")
    assert (tmp_path / "l").is_symlink() and (tmp_path / "f").read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == before


def test_a_descriptor_name_writes_the_open_descriptor(tmp_path: Path) -> None:
    """``/dev/fd/N`` (``/dev/stdout`` is ``/dev/fd/1``) writes where the descriptor is open,
    at its offset, without opening the name again."""
    from pinbench.artifacts.destination import destination, write

    with (tmp_path / "log").open("ab") as log:
        log.write(b"before\n")
        log.flush()
        write(destination(f"/dev/fd/{log.fileno()}", option="-o"), b"after\n")
    assert (tmp_path / "log").read_bytes() == b"before\nafter\n"


def test_the_python_api_writes_a_lockfile_through_the_same_function(
    made: Made, tmp_path: Path
) -> None:
    """``Lockfile.write`` (the SDK's ``lock(...).write``, the demo's, a benchmark's) takes its
    path through the one function too: a device stays a device, a folder is refused with
    nothing made, a regular file is replaced whole (calling it is asking)."""
    from pinbench.artifacts.destination import DestinationRefused

    lock = service.lock(made.home.ws, parse_request({**DIGITS, "scenario": QUICK}))[0]
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    lock.write(device)
    assert stat.S_ISCHR(device.stat().st_mode)
    with pytest.raises(DestinationRefused, match="folder"):
        lock.write(tmp_path)
    out = tmp_path / "x.lock"
    lock.write(out)
    lock.write(out)
    assert out.read_bytes() == lock.canonical + b"\n"
    assert sorted(os.listdir(tmp_path)) == ["null", "x.lock"]
