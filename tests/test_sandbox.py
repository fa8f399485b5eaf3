"""The system under test is confined, not watched (issue 71, invariant 17).

Each reproduction of the issue's attack round is a probe that a model's processing code makes
from inside its worker, in the local and the venv runner: what it can see, read, write,
signal or reach. One run per runner makes every probe and fails on purpose with what it found
(the run's error is the only way out of the sandbox a test can read), and the table says what
each must find. With ``--sandbox none`` the same probes reach the user's files: the sandbox,
not luck, is what stops them, and such a run is marked ``UNSANDBOXED``.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinbench.artifacts.digest import Digest
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import HOST_PEAK, EvaluationFailed
from pinbench.evaluator.runners.venv import shared_cache
from pinbench.evaluator.warm import WarmPool
from pinbench.provenance.key_material import KEY_FILE
from pinbench.provenance.keys import ensure_keys
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import Kind
from pinbench.worker.job import truth_paths
from tests.helpers import in_process_cli
from tests.services import unavailable
from tests.test_processing_code import CODE, POST, PRE, World, _lock, _publish, quiet, world
from tests.test_warm import pool

__all__ = ["pool", "world"]

PROBES = r"""
import json as _json, os as _os, socket as _socket, sys as _sys
from pathlib import Path as _Path

_seen = {}


def _probe(name, act):
    try:
        _seen[name] = act()
    except BaseException as exc:  # what stopped it, by kind
        _seen[name] = type(exc).__name__


def _write(path):
    if @ONLY_ASK@:  # outside the sandbox: asked, never done (the user's own files)
        return "writable" if _os.access(_os.path.dirname(path), _os.W_OK) else "not writable"
    with open(path, "a") as f:
        f.write("# written by a run's code\n")
    return "written"


def _read(path):
    return "read %d bytes" % len(_Path(path).read_bytes())


def _connect():
    s = _socket.create_connection(("127.0.0.1", @PORT@), timeout=2)
    s.close()
    return "connected"


def _signal():
    _os.kill(@HOST_PID@, 0)
    return "signalled"


def _daemon():
    import subprocess
    subprocess.Popen(
        [_sys.executable, "-c", "import time; time.sleep(60)  # @MARK@"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return "started"


_job = _json.loads(_Path(_sys.argv[1]).read_text())
_probe("truth blob", lambda: _read(@TRUTH@))
_probe("signing key", lambda: _read(@KEY@))
_probe("database", lambda: _read(@DB@))
_probe("home", lambda: sorted(_os.listdir(@HOME@)))
_probe("blob store", lambda: sorted(_os.listdir(@BLOBS@)))
_probe("user's home", lambda: _read(@USER_FILE@))
_stdlib = _os.path.dirname(_json.__file__)
_site = _os.path.dirname(_os.path.dirname(__import__("numpy").__file__))
_results = __import__("pinbench.worker.results").worker.results.__file__
_probe("environment .pth", lambda: _write(_os.path.join(_stdlib, "x.pth")))
_probe("site-packages", lambda: _write(_os.path.join(_site, "planted.pth")))
_probe("evaluator", lambda: _write(_results))
_probe("other environments", lambda: sorted(_os.listdir(@ENVS@)))
_probe("host processes", lambda: _signal())
_probe("network", _connect)
_probe("uid", lambda: _os.getuid())
_probe("dataset paths", lambda: sorted(set(_os.path.dirname(p) for p in _job["dataset"].values())))
_probe("daemon", _daemon)
raise RuntimeError("probes: " + _json.dumps(_seen, sort_keys=True))
"""
"""A model's ``proc.py`` that tries each of the issue's reproductions from inside its worker
and says what happened (the value, or the exception's kind that stopped it)."""

NOT_FOUND = "FileNotFoundError"
READ_ONLY = "OSError"  # EROFS: a read-only file system
CONFINED: list[tuple[str, Any, str]] = [
    ("truth blob", NOT_FOUND, "the labels' blob, found through the blob store's path"),
    ("signing key", NOT_FOUND, "keys/signing.ed25519: a forged results.json signed with it"),
    ("database", NOT_FOUND, "the SQLite file: a recorded top-1 edited"),
    ("home", NOT_FOUND, "PINBENCH_HOME and everything in it (keys, caches, verified-cache key)"),
    ("blob store", NOT_FOUND, "the blob store: a blob rewritten in place and re-approved"),
    ("user's home", NOT_FOUND, "a file in the user's own home folder"),
    ("environment .pth", READ_ONLY, "the interpreter's standard library: a stdlib shadow"),
    ("site-packages", READ_ONLY, "a .pth in the environment: code in every later run"),
    ("evaluator", READ_ONLY, "the evaluator's own results.py: a wrapper every run imports"),
    ("host processes", "ProcessLookupError", "the host's pytest process: signalled or traced"),
    ("network", "ConnectionRefusedError", "a server on the host's loopback (its own is empty)"),
    ("uid", 65534, "an unprivileged user of its own"),
    ("dataset paths", ["/pinbench/data"], "samples at neutral paths, not the blob store's"),
    ("daemon", "started", "it may start a process (which ends with the run: test below)"),
]


class Host:
    """What the probes aim at on the host: real files of the test's home."""

    def __init__(self, world: World, lock: Lockfile, tmp: Path) -> None:
        ws = world.home.ws
        (truth,) = truth_paths(lock)
        dataset = lock.artifact(Kind.DATASET)
        assert dataset is not None
        (entry,) = [f for f in dataset.files if f.path == truth]
        self.truth = ws.store.path(Digest(entry.sha256))
        ensure_keys(ws)
        (self.key,) = ws.settings.home.rglob(KEY_FILE)
        self.db = Path(ws.settings.database_url.removeprefix("sqlite:///"))
        self.home = ws.settings.home
        self.blobs = ws.store.root
        self.user_file = Path.home() / f".pinbench-sandbox-probe-{uuid.uuid4().hex}"
        self.envs = shared_cache() / "envs"
        self.mark = uuid.uuid4().hex
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()

    def code(self, *, only_ask: bool = False) -> str:
        values = {
            "@ONLY_ASK@": repr(only_ask),
            "@TRUTH@": repr(str(self.truth)),
            "@KEY@": repr(str(self.key)),
            "@DB@": repr(str(self.db)),
            "@HOME@": repr(str(self.home)),
            "@BLOBS@": repr(str(self.blobs)),
            "@USER_FILE@": repr(str(self.user_file)),
            "@ENVS@": repr(str(self.envs)),
            "@PORT@": str(self.listener.getsockname()[1]),
            "@HOST_PID@": str(os.getpid()),
            "@MARK@": self.mark,
        }
        text = PROBES
        for key, value in values.items():
            text = text.replace(key, value)
        return text + CODE


@pytest.fixture
def host(world: World, tmp_path: Path) -> Iterator[Host]:
    made = Host(world, world.lock, tmp_path)
    made.user_file.write_text("the user's own file\n")
    for path in (made.truth, made.key, made.db):
        assert path.is_file(), path  # each probe aims at a real file
    try:
        yield made
    finally:
        made.user_file.unlink(missing_ok=True)
        made.listener.close()


def _with_code(world: World, root: Path, version: str, code: str) -> str:
    """``vision/digits-code@version`` published with ``code`` as its processing code."""
    return _publish(
        world.home.ws, root, world.catalog, version, preprocess=PRE, postprocess=POST, code=code
    )


def _probed(world: World, host: Host, tmp: Path, version: str, runner: str, **run: Any) -> Any:
    ws = world.home.ws
    code = host.code(only_ask=run.get("sandbox") == "none")
    model = _with_code(world, tmp, version, code)
    with pytest.raises(EvaluationFailed, match="probes: ") as info:
        run_lockfile(ws, _lock(ws, model), runner=runner, say=quiet, allow_code=True, **run)
    found: dict[str, Any] = json.loads(
        str(info.value).split("probes: ", 1)[1].split(" (proc.py")[0]
    )
    return found


def _processes_marked(mark: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_code_in_the_sandbox_reaches_nothing_but_its_inputs(
    world: World, host: Host, tmp_path: Path, runner: str
) -> None:
    found = _probed(world, host, tmp_path, f"11.0.{runner == 'venv':d}", runner)
    expected = {name: value for name, value, _ in CONFINED}
    if runner == "venv":  # its own environment only, under the shared cache
        assert len(found.pop("other environments")) == 1
    else:
        assert found.pop("other environments") == NOT_FOUND
    assert found == expected
    time.sleep(0.5)
    assert _processes_marked(host.mark) == []  # its PID namespace ended with the worker


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_without_the_sandbox_the_same_code_reaches_the_users_files_and_is_marked(
    world: World,
    host: Host,
    tmp_path: Path,
    runner: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--sandbox none``: what the sandbox stopped is open again (the probes are not blind),
    and a run is recorded, listed and shown ``UNSANDBOXED`` (and ``+code``)."""
    found = _probed(world, host, tmp_path, f"11.1.{runner == 'venv':d}", runner, sandbox="none")
    assert found["signing key"].startswith("read ")
    assert found["truth blob"].startswith("read ")
    assert found["user's home"].startswith("read ")
    assert found["host processes"] == "signalled"
    assert found["site-packages"] == "writable"
    assert found["uid"] == os.getuid()
    for pid in _processes_marked(host.mark):
        os.kill(pid, 9)
    ws = world.home.ws
    outcome = run_lockfile(
        ws, world.lock, runner=runner, say=quiet, allow_code=True, sandbox="none"
    )
    recorded = show_run(ws, outcome.id)
    assert recorded["unsandboxed_bool"] == 1.0 and recorded["code_bool"] == 1.0
    assert recorded["details"]["environment"]["sandbox"] == "none"
    confined = show_run(
        ws, run_lockfile(ws, world.lock, runner=runner, say=quiet, allow_code=True).id
    )
    assert "unsandboxed_bool" not in confined and confined["code_bool"] == 1.0
    assert confined["details"]["environment"]["sandbox"] == "bwrap"
    assert confined["top1"] == recorded["top1"]
    # wherever the runs are shown, each is marked for what it was
    monkeypatch.setenv("COLUMNS", "200")  # one line per run
    cli = in_process_cli(monkeypatch, capsys, world.home.home, world.home.db)
    one, other = outcome.id[:8], confined["id"][:8]
    listed = cli("runs", "list", "--limit", "200").out
    (line,) = [x for x in listed.splitlines() if one in x]
    assert "succeeded UNSANDBOXED +code" in line
    (line,) = [x for x in listed.splitlines() if other in x]
    assert "+code" in line and "UNSANDBOXED" not in line
    shown = cli("runs", "show", one).out
    assert "UNSANDBOXED: code or the model's own operations ran outside the sandbox" in shown
    assert "UNSANDBOXED" not in cli("runs", "show", other).out
    compared = cli("runs", "compare", one, other).out.splitlines()[0]
    assert f"{one} UNSANDBOXED +code" in compared and f"{other} +code" in compared
    from pinbench.reports.data import gather

    labels = [r.label for r in gather(ws, [outcome.id, confined["id"]]).runs]
    assert labels[0].endswith(" UNSANDBOXED +code") and labels[1].endswith(" +code")
    assert labels[1].count("+code") == 1


def test_a_record_edited_in_the_database_is_named_by_fsck_and_attest_verify(
    world: World,
) -> None:
    """The issue's database edit: a run's top-1 set to 0.9999 in SQL showed in ``runs list``
    while ``fsck`` said "no problems" and ``attest verify`` "verified". Both now compare the
    run's record with the ``results.json`` signed when it was recorded, and name the figure."""
    from sqlalchemy import update

    from pinbench.db.models import Result
    from pinbench.sdk.registry import Registry

    ws = world.home.ws
    outcome = run_lockfile(ws, world.lock, runner="local", say=quiet, allow_code=True)
    honest = show_run(ws, outcome.id)["top1"]

    def set_top1(value: float) -> None:
        with ws.transaction() as session:
            session.execute(
                update(Result)
                .where(Result.run_id == outcome.id, Result.metric == "top1")
                .values(value=value)
            )

    def problems() -> list[str]:
        with Registry(home=world.home.home, database_url=world.home.db) as reg:
            checked = reg.admin().check_store()
        return [p.detail for p in checked.problems if p.path == f"runs/{outcome.id}"]

    from pinbench.provenance.verify import AttestationRefused

    def attest_verify() -> None:
        with Registry(home=world.home.home, database_url=world.home.db) as reg:
            line, made_now = reg.run(outcome.id).attest()
            assert not made_now  # the one signed when the run was recorded
            reg.verify_attestation(line)

    assert problems() == []
    attest_verify()
    set_top1(0.9999)
    said = f"changed after it was signed: metric top1: 0.9999 recorded, {honest!r} signed"
    try:
        assert show_run(ws, outcome.id)["top1"] == 0.9999  # what the listings now show
        assert problems() == [said]
        with pytest.raises(AttestationRefused, match="record in this registry: " + said):
            attest_verify()
    finally:
        set_top1(honest)
    assert problems() == []
    attest_verify()


HELD_BYTES = 192 * 2**20
INJECTS_FIGURES = (
    "import sys as _sys\n\n"
    f"_held = bytearray({HELD_BYTES})\n"
    "_held[::4096] = b'x' * len(_held[::4096])  # resident, page by page\n"
    "_worker = _sys.modules['__main__']\n"
    "_honest = _worker.write_results\n\n\n"
    "def _injected(out, lock_digest, evidence, error, environment):\n"
    "    evidence.metrics.update(machine_top1=1.0, energy_j=0.001, top1=1.0)\n"
    "    evidence.metrics.update(samples_count=99999.0)\n"
    "    evidence.metrics.update(peak_rss_bytes=0.0, contended_bool=0.0)\n"
    "    _honest(out, lock_digest, evidence, error, environment)\n\n\n"
    "_worker.write_results = _injected\n\n" + CODE
)
"""The issue's injected figures: a ``machine_`` name the host kept by its prefix, an energy
figure on a machine where the host reads no energy counter, a count of samples no run of its
calls answered, a peak memory of 0 while it holds ``HELD_BYTES``, an uncontended machine, and
the task's own metric."""


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_figures_the_evaluator_injects_are_dropped_and_named(
    world: World, tmp_path: Path, runner: str
) -> None:
    ws = world.home.ws
    model = _with_code(world, tmp_path, f"11.2.{runner == 'venv':d}", INJECTS_FIGURES)
    recorded = show_run(
        ws, run_lockfile(ws, _lock(ws, model), runner=runner, say=quiet, allow_code=True).id
    )
    honest = show_run(
        ws, run_lockfile(ws, world.lock, runner=runner, say=quiet, allow_code=True).id
    )
    assert "machine_top1" not in recorded and "energy_j" not in recorded
    assert recorded["top1"] == honest["top1"] < 1.0
    # each named, the task's own metric too (the host scored its own in its place)
    assert recorded["details"]["dropped_metrics"] == [
        "contended_bool",
        "energy_j",
        "machine_top1",
        "peak_rss_bytes",
        "samples_count",  # more samples than its calls could answer
        "top1",
    ]
    # the host read the worker's memory from /proc: what the code held, not the 0 it said
    assert recorded["peak_rss_bytes"] >= HELD_BYTES
    assert recorded["details"]["memory"]["peak_rss"] == HOST_PEAK
    assert honest["details"]["memory"]["peak_rss"] == HOST_PEAK  # a worker on this machine
    assert "dropped_metrics" not in honest["details"]


# (case, what the system's folder holds as bwrap (a script's body; None: nothing), what PATH
# holds as bwrap, what the refusal says): what PATH holds is never run (it leaves a mark)
INSTALL_FIX = "apt-get install -y bubblewrap"
MARK = 'touch "$(dirname "$0")/ran"; exec /usr/bin/bwrap "$@"'
NAMESPACES = (
    "echo 'bwrap: No permissions to create new namespace, likely because the kernel does "
    "not allow non-privileged user namespaces.' >&2; exit 1"
)
REFUSALS = [
    ("bubblewrap is not installed", None, None, "is not installed in the system's folders"),
    (  # one on PATH (issue 84: a bwrap earlier on PATH bound the home in) is never run
        "bubblewrap only on PATH",
        None,
        MARK,
        "is not used (pinbench starts only the system's)",
    ),
    ("user namespaces are not allowed", NAMESPACES, MARK, "No permissions to create new namespace"),
    ("bubblewrap is writable by others", "group-writable", None, "may be written by others"),
]


@pytest.mark.parametrize(
    ("case", "system", "on_path", "said"), REFUSALS, ids=[c[0] for c in REFUSALS]
)
def test_a_sandbox_that_cannot_start_refuses_the_run_in_one_line_naming_the_fix(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    system: str | None,
    on_path: str | None,
    said: str,
) -> None:
    """bubblewrap is taken from the system's folders only (``pinbench.programs``), owned by
    root and written by no one else; a run that cannot have it refuses in one line with the
    fix, and is recorded failed with the same reason."""
    from pinbench.evaluator.runners.sandbox import SandboxUnavailable
    from tests.system_programs import fake, system_folder

    folder = system_folder(tmp_path / "system", monkeypatch)
    if system == "group-writable":
        fake(folder, "bwrap", 'exec /usr/bin/bwrap "$@"').chmod(0o775)
    elif system is not None:
        fake(folder, "bwrap", system)
    path = tmp_path / "path"
    if on_path is not None:
        fake(path, "bwrap", on_path)
    monkeypatch.setenv("PATH", f"{path}:{os.environ['PATH']}")
    ws = world.home.ws
    with pytest.raises(SandboxUnavailable) as info:
        run_lockfile(ws, world.lock, runner="local", say=quiet, allow_code=True)
    message = str(info.value)
    assert said in message and "\n" not in message
    assert INSTALL_FIX in message
    assert "--sandbox none" in message and "`pinbench doctor`" in message
    assert not (path / "ran").exists()  # PATH's bwrap never ran
    recorded = show_run(ws, _newest(ws))  # recorded failed, with the same reason
    assert recorded["status"] == "failed" and said in recorded["error"]


def test_a_bwrap_earlier_on_path_is_never_run_and_the_run_records_its_own(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 84, item 1: a ``bwrap`` earlier on PATH that binds the home into the sandbox was
    executed and the run recorded sandboxed. It is never run now; the run records the
    system's bubblewrap it used: its path, sha256 and version."""
    import hashlib

    from tests.system_programs import BWRAP, fake

    if not Path(BWRAP).exists():
        unavailable(f"bubblewrap is not installed at {BWRAP}")
    path = tmp_path / "path"
    home = world.home.ws.settings.home
    fake(path, "bwrap", f'touch "$(dirname "$0")/ran"; exec {BWRAP} --ro-bind {home} {home} "$@"')
    monkeypatch.setenv("PATH", f"{path}:{os.environ['PATH']}")
    ws = world.home.ws
    run = run_lockfile(ws, world.lock, runner="local", say=quiet, allow_code=True)
    assert not (path / "ran").exists()
    recorded = show_run(ws, run.id)
    assert recorded["status"] == "succeeded", recorded["error"]
    used = recorded["details"]["environment"]["bwrap"]
    assert used["path"] == BWRAP
    assert used["sha256"] == hashlib.sha256(Path(BWRAP).read_bytes()).hexdigest()
    assert used["version"].startswith("bubblewrap ")


def _newest(ws: Any) -> str:
    from pinbench.evaluator.records.run_list import list_runs

    newest: str = list_runs(ws)[0]["id"]
    return newest


def test_the_web_uis_runs_table_marks_a_run_unsandboxed_and_code() -> None:
    from pinbench.web.run_rows import runs_table

    table = runs_table(
        [
            {"id": "a", "metrics": {"unsandboxed_bool": 1.0, "code_bool": 1.0}},
            {"id": "b", "metrics": {"code_bool": 1.0}},
            {"id": "c", "metrics": {"top1": 0.9}},
        ]
    )
    assert [line.marks for line in table.lines] == [("UNSANDBOXED", "+code"), ("+code",), ()]


LEAVES = r"""
import hashlib as _hashlib, json as _json, os as _os, sys as _sys
from pathlib import Path as _Path

_job = _json.loads(_Path(_sys.argv[1]).read_text())
_cache, _out = _Path(_job["cache"]), _Path(_sys.argv[2])
_ours = @DATASET@[:32]


def _entry(name, data):
    (_cache / name).write_bytes(data)
    (_cache / (name + ".sha256")).write_text(_hashlib.sha256(data).hexdigest())


_entry(_ours + "-" + "f" * 32 + ".npy", b"a pipeline of this dataset's, computed here")
_entry("e" * 32 + "-" + "1" * 32 + ".npy", b"an entry for another dataset")
_os.symlink("/nonexistent", _cache / (_ours + "-" + "d" * 32 + ".npy"))
(_cache / (_ours + "-" + "d" * 32 + ".npy.sha256")).write_text("0" * 64)
_os.mkfifo(_cache / (_ours + "-" + "c" * 32 + ".npy"))
(_cache / (_ours + "-" + "c" * 32 + ".npy.sha256")).write_text("0" * 64)
_os.symlink("/etc/passwd", _cache / (_ours + "-" + "b" * 32 + ".npy"))
(_cache / (_ours + "-" + "b" * 32 + ".npy.sha256")).write_text(@PASSWD@)
_fd = _os.open(_out, _os.O_RDONLY)
for _ in range(3000):  # deeper than shutil.rmtree recurses
    _os.mkdir("a", dir_fd=_fd)
    _next = _os.open("a", _os.O_RDONLY, dir_fd=_fd)
    _os.close(_fd)
    _fd = _next
_os.close(_fd)
"""
"""What a run's code leaves in the two folders it may write (the review of the sandbox): an
entry for its own dataset, one for another dataset, a dangling link, a FIFO and a link to a
host file (with that file's right digest) as cached arrays, and 3,000 nested folders."""


def test_what_the_code_leaves_in_its_folders_is_neither_followed_nor_kept_but_its_own(
    world: World, tmp_path: Path
) -> None:
    import hashlib

    from pinbench.evaluator.runners.consented import sandboxed_cache

    ws = world.home.ws
    dataset = world.lock.body.dataset
    assert dataset is not None
    passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    code = LEAVES.replace("@DATASET@", repr(dataset.manifest_digest)).replace(
        "@PASSWD@", repr(passwd)
    )
    model = _with_code(world, tmp_path, "11.3.0", code + CODE)
    lock = _lock(ws, model)
    shared = ws.settings.home / "cache" / "inputs"
    before = sorted(p.name for p in shared.glob("*.npy"))
    outcome = run_lockfile(ws, lock, runner="local", say=quiet, allow_code=True)
    assert show_run(ws, outcome.id)["status"] == "succeeded"
    kept = sorted(p.name for p in sandboxed_cache(ws, lock).glob("*.npy"))
    ours = dataset.manifest_digest[:32]
    assert f"{ours}-{'f' * 32}.npy" in kept  # its own dataset's entry, bytes as hashed
    assert not [k for k in kept if not k.startswith(ours)]  # another dataset's: not kept
    assert not [k for k in kept if k.split("-")[1][:1] in "bcd"]  # no link, no FIFO
    assert sorted(p.name for p in shared.glob("*.npy")) == before  # the shared cache: as it was
    assert not list((ws.settings.home / "tmp").glob("run-*"))  # its folder went, 3,000 deep


# how the code stops a process of its worker, and the state the host then sees
STOPS = {
    "SIGSTOP": (
        "import os as _os, signal as _signal\n"
        "_os.kill(_os.getpid(), _signal.SIGSTOP)  # the worker stops itself\n\n",
        "stopped by a signal (SIGSTOP)",
    ),
    "ptrace": (
        "import ctypes as _ctypes, os as _os, signal as _signal, time as _time\n"
        "_child = _os.fork()\n"
        "if _child == 0:  # traced by the worker, then stopped: held until it lets go\n"
        "    _ctypes.CDLL(None).ptrace(0, 0, None, None)  # PTRACE_TRACEME\n"
        "    _os.kill(_os.getpid(), _signal.SIGSTOP)\n"
        "    _os._exit(0)\n"
        "_time.sleep(3600)\n\n",
        "held by a tracer (ptrace)",
    ),
}


@pytest.mark.parametrize("how", sorted(STOPS))
@pytest.mark.parametrize("where", ["local", "venv-warm"])
def test_a_stopped_worker_ends_its_run_within_seconds_naming_it(
    world: World, tmp_path: Path, how: str, where: str, pool: WarmPool
) -> None:
    """Issue 84, item 6: a worker's process stopped by a signal, or held by a tracer, held
    its run until ``limits.timeout_s`` (1,800 s by default). The host sees it stopped in its
    ``/proc`` and ends the run once it has stayed so for ``STOPPED_S``, naming it."""
    from pinbench.evaluator.runners.process import STOPPED_S, WorkerStopped
    from pinbench.registry import service
    from pinbench.registry.request import parse_request

    code, said = STOPS[how]
    ws = world.home.ws
    version = f"11.4.{sorted(STOPS).index(how) * 2 + (where != 'local')}"
    model = _with_code(world, tmp_path, version, code + CODE)
    limit = 300  # what the run would otherwise wait for
    request = {"model": model, "dataset": "digits-raw@1", "scenario": {"mode": "accuracy"},
               "limits": {"timeout_s": limit}}  # fmt: skip
    lock = service.lock(ws, parse_request(request))[0]
    started = time.monotonic()
    runner, warm = ("local", None) if where == "local" else ("venv", pool)
    with pytest.raises(WorkerStopped) as stopped:
        run_lockfile(ws, lock, runner=runner, say=quiet, allow_code=True, warm=warm)
    took = time.monotonic() - started
    assert said in str(stopped.value) and stopped.value.seconds >= STOPPED_S
    assert took < limit / 3, took  # noticed, not waited out
    recorded = show_run(ws, _newest(ws))
    assert recorded["status"] == "failed" and said in recorded["error"]
