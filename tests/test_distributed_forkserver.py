"""The fork server distributed ranks fork from (decision 268) hands a rank what spawn would
have: the launcher's environment, umask and ``sys.path`` as they are when the rank starts,
never a module from the current folder that the launcher would not import; and a rank ends
with its launcher, so that a killed launcher leaves neither ranks nor a server behind.

The probes are processes forked by the same server, preloading what ranks preload
(``launch.PRELOAD``), that report what they inherited."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from pinbench.training.distributed.launch import PRELOAD
from pinbench.training.distributed.server import rank_context

MARK = "PINBENCH_TEST_FORKSERVER_MARK"


def _probe(pipe: Any) -> None:
    """In a forked process: what it inherited."""
    torch = sys.modules.get("torch")
    umask = os.umask(0)
    pipe.send(
        {
            "mark": os.environ.get(MARK),
            "environment": dict(os.environ),
            "umask": umask,
            "torch": getattr(torch, "__file__", None),
            "numpy": getattr(sys.modules.get("numpy"), "__file__", None),
        }
    )
    pipe.close()


def _fork_probe() -> dict[str, Any]:
    with rank_context("forkserver", PRELOAD) as context:
        assert context.get_start_method() == "forkserver"
        ours, theirs = context.Pipe()
        process = context.Process(target=_probe, args=(theirs,))
        process.start()
    theirs.close()
    try:
        report: dict[str, Any] = ours.recv()
    finally:
        process.join(timeout=30)
    assert process.exitcode == 0
    return report


def test_a_rank_inherits_the_launchers_environment_and_umask_as_they_are_when_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MARK, "first")
    first = _fork_probe()
    monkeypatch.setenv(MARK, "second")
    previous = os.umask(0o027)
    try:
        second = _fork_probe()
    finally:
        os.umask(previous)
    assert (first["mark"], second["mark"]) == ("first", "second")
    assert second["umask"] == 0o027 and first["umask"] == previous
    # every variable as it is now (a rank's start-up adds its own, as under spawn: pytest's
    # script, re-run as the rank's __mp_main__, sets LINES and COLUMNS)
    assert dict(os.environ).items() <= second["environment"].items()


def test_a_module_in_the_current_folder_is_not_what_the_server_preloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launcher started as a console script has no current folder on its ``sys.path``; the
    server, started with ``python -c``, would have had it first."""
    for name in ("torch/__init__.py", "numpy.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(f"open({str(tmp_path / 'imported')!r}, 'a').write('x')\n")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p and os.path.isabs(p)])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(MARK, uuid.uuid4().hex)  # a server of this test's own
    report = _fork_probe()
    import numpy
    import torch

    assert (report["torch"], report["numpy"]) == (torch.__file__, numpy.__file__)
    assert not (tmp_path / "imported").exists()


def _held(pipe: Any) -> None:
    """In a forked process: wait until told to end."""
    pipe.recv()


def _server_pid() -> int:
    from multiprocessing import forkserver

    pid: int = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    return pid


def test_a_new_server_does_not_wait_for_the_ranks_of_the_one_it_replaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another thread's training may still run on the old server for minutes."""
    monkeypatch.setenv(MARK, "old")
    with rank_context("forkserver", PRELOAD) as context:
        ours, theirs = context.Pipe()
        held = context.Process(target=_held, args=(theirs,))
        held.start()
    try:
        monkeypatch.setenv(MARK, "new")
        reports: list[dict[str, Any]] = []
        probing = threading.Thread(target=lambda: reports.append(_fork_probe()), daemon=True)
        probing.start()
        probing.join(timeout=60)
        assert reports and reports[0]["mark"] == "new"
        assert held.is_alive()
    finally:
        ours.send("end")
        held.join(timeout=30)


def test_a_server_that_died_or_lost_its_folder_is_started_again_the_same_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not by the standard library's own start (the current folder first, no ``-P``), which
    ``multiprocessing`` would use for a server found dead; and in a new private folder where
    a ``/tmp`` cleaner removed the old one."""
    from multiprocessing import util

    _fork_probe()
    dead = _server_pid()
    os.kill(dead, signal.SIGKILL)
    os.waitpid(dead, 0)  # dead by now (a SIGKILL is delivered when the kernel gets to it)
    assert _fork_probe()["torch"] is not None
    assert b"-P" in Path(f"/proc/{_server_pid()}/cmdline").read_bytes().split(b"\0")
    shutil.rmtree(util.get_temp_dir())
    monkeypatch.setenv(MARK, uuid.uuid4().hex)  # a new server, its socket in a new folder
    assert _fork_probe()["torch"] is not None
    assert b"-P" in Path(f"/proc/{_server_pid()}/cmdline").read_bytes().split(b"\0")


def test_pytests_note_of_the_running_test_starts_no_new_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``PYTEST_CURRENT_TEST`` changes at every test phase (``server.NOT_COMPARED``)."""
    _fork_probe()
    first = _server_pid()
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/elsewhere.py::test_other (call)")
    _fork_probe()
    assert _server_pid() == first
    monkeypatch.setenv(MARK, uuid.uuid4().hex)
    _fork_probe()
    assert _server_pid() != first


LAUNCHER = """
import sys
from pathlib import Path
from pinbench.training.distributed.launch import train_distributed
from pinbench.specs.distributed import DistributedSpec
from pinbench.specs.training import TrainingSpec
from tests.test_training import digits_data, start_model

spec = TrainingSpec(validation="sklearn/digits@test", epochs=500, batch_size=8, learning_rate=0.01)
def say(line):
    print(line, flush=True)
train_distributed(
    spec, DistributedSpec(scheme="allreduce", workers=2), start_model("torch", Path(sys.argv[1])),
    digits_data(), say=say,
)
"""


def _marked(mark: str) -> list[int]:
    """The processes whose environment holds ``MARK=mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"{MARK}={mark}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_a_killed_launcher_leaves_no_rank_and_no_server_behind(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(tmp_path)],
        env={**os.environ, MARK: mark},
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert launcher.stdout is not None
        line = launcher.stdout.readline()  # the first epoch: every rank is training
        assert line.startswith("epoch 1/500"), line + str(launcher.communicate())
        assert len(_marked(mark)) >= 4  # the launcher, its fork server, two ranks
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        deadline = time.monotonic() + 20
        while (left := _marked(mark)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == []
    finally:
        launcher.kill()
        launcher.wait()
        for pid in _marked(mark):
            os.kill(pid, signal.SIGKILL)
