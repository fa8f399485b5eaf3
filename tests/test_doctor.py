"""``pinbench doctor`` (issue 83): what this machine gives pinbench, each finding with its fix;
exit 0 where runs can be made, 1 naming what blocks them. Each check is made to fail once,
on this machine's real programs and files where that can be arranged (a PATH without
bubblewrap, a bubblewrap that refuses as a kernel without user namespaces makes it, a home on
a full tmpfs, a database that does not answer), on a /sys and /proc of the test's own for the
timing checks, whose state a test cannot set on the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pinbench.doctor import engines, sandbox, storage, timing
from pinbench.doctor.examine import RunsBlocked, examine, refuse_blocked
from pinbench.doctor.findings import Finding, Place
from tests.pg import free_port
from tests.services import unavailable
from tests.system_programs import BWRAP, fake, system_folder, without_bwrap

PINBENCH = [sys.executable, "-m", "pinbench"]


def _fake_bwrap(folder: Path, said: str) -> Path:
    """A ``bwrap`` in ``folder`` that answers ``--version`` and refuses every sandbox as
    bubblewrap does where the kernel gives no user namespaces (its own words, exit 1)."""
    return fake(
        folder,
        "bwrap",
        'if [ "$1" = --version ]; then echo "bubblewrap 0.8.0"; exit 0; fi\n'
        f"echo 'bwrap: {said}' >&2\nexit 1",
    )


# ------------------------------------------------------------------- the sandbox, failing
@pytest.mark.parametrize(
    ("arrange", "detail", "fix"),
    [
        (  # only on PATH: never run, named (issue 84, item 1)
            "path",
            "is not used (pinbench starts only the system's)",
            "apt-get install -y bubblewrap",
        ),
        ("missing", "not installed in the system's folders", "apt-get install -y bubblewrap"),
        (  # where the system keeps it, but another than root may have written it
            "writable",
            "may be written by others than root",
            "apt-get install --reinstall -y bubblewrap",
        ),
        (  # installed, refused by the kernel: bubblewrap's own words, and the settings
            "refused",
            "did not start a sandbox: No permissions to create new namespace",
            "kernel.unprivileged_userns_clone=1",
        ),
    ],
)
def test_a_sandbox_that_cannot_start_blocks_runs_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arrange: str, detail: str, fix: str
) -> None:
    folder = system_folder(tmp_path / "system", monkeypatch)
    if arrange == "refused":
        _fake_bwrap(folder, "No permissions to create new namespace")
    elif arrange == "writable":
        _fake_bwrap(folder, "unused").chmod(0o775)
    elif arrange == "path":
        path = tmp_path / "path"
        _fake_bwrap(path, "unused")
        monkeypatch.setenv("PATH", f"{path}:{os.environ['PATH']}")
    (finding,) = sandbox.check(Place(environ={"PINBENCH_HOME": str(tmp_path / "home")}))
    assert finding.status == "fail"
    assert detail in finding.detail
    assert fix in finding.fix


def test_the_sandbox_that_starts_is_named_with_its_version() -> None:
    if not Path(BWRAP).exists():
        unavailable("bubblewrap is not installed")
    (finding,) = sandbox.check(Place())
    assert finding.status == "ok"
    assert finding.detail.startswith(f"{BWRAP} (bubblewrap ")


def _proc_with(tmp_path: Path, settings: dict[str, str]) -> Path:
    proc = tmp_path / "proc"
    for file, value in settings.items():
        (proc / "sys" / file).parent.mkdir(parents=True, exist_ok=True)
        (proc / "sys" / file).write_text(f"{value}\n")
    return proc


@pytest.mark.parametrize(
    ("settings", "uid", "expected"),
    [
        (
            {"kernel/apparmor_restrict_unprivileged_userns": "1"},
            1000,
            ["kernel.apparmor_restrict_unprivileged_userns=0"],
        ),
        (
            {"kernel/unprivileged_userns_clone": "0"},
            1000,
            ["kernel.unprivileged_userns_clone=1"],
        ),
        ({"user/max_user_namespaces": "0"}, 1000, ["user.max_user_namespaces=15000"]),
        ({"kernel/apparmor_restrict_unprivileged_userns": "0"}, 1000, []),  # lifted
        ({"kernel/apparmor_restrict_unprivileged_userns": "1"}, 0, []),  # root is not refused
        ({}, 1000, []),  # a kernel without these switches
    ],
)
def test_the_kernel_settings_that_refuse_user_namespaces_are_named(
    tmp_path: Path, settings: dict[str, str], uid: int, expected: list[str]
) -> None:
    place = Place(proc=_proc_with(tmp_path, settings), uid=uid)
    assert sandbox.userns_refusals(place) == expected


def test_a_missing_bubblewrap_under_apparmor_names_both_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_folder(tmp_path / "system", monkeypatch)
    proc = _proc_with(tmp_path, {"kernel/apparmor_restrict_unprivileged_userns": "1"})
    (finding,) = sandbox.check(Place(proc=proc, uid=1000, environ={}))
    assert "apt-get install -y bubblewrap" in finding.fix
    assert "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in finding.fix


# ------------------------------------------------------------------- where pinbench writes
@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: a real disk with almost nothing free."""
    folder = tmp_path / "small"
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True
    )
    if done.returncode != 0:
        unavailable(f"a tmpfs could not be mounted: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize(
    ("variable", "check"),
    [
        ("PINBENCH_HOME", "space:home"),
        ("PINBENCH_CACHE", "space:cache"),
        ("TMPDIR", "space:scratch"),
    ],
)
def test_a_folder_without_room_blocks_runs_naming_the_variable_that_moves_it(
    full_disk: Path, variable: str, check: str
) -> None:
    place = Place(environ={variable: str(full_disk / "pinbench")})
    found = {f.check: f for f in storage.check(place)}
    assert found[check].status == "fail"
    assert found[check].detail.startswith(f"{full_disk / 'pinbench'}: 0.0 GiB free")
    assert f"set {variable} to a folder on another disk" in found[check].fix


def test_the_database_is_named_with_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "home"
    fresh = storage.database(Place(environ={"PINBENCH_HOME": str(home)}))
    assert (fresh.status, fresh.fix) == (
        "warn",
        "pinbench init (pinbench demo makes a home of its own)",
    )
    assert not home.exists()  # a check makes nothing

    url = f"postgresql+psycopg://pinbench:secret@127.0.0.1:{free_port()}/pinbench"
    gone = storage.database(Place(environ={"PINBENCH_DATABASE_URL": url}))
    assert gone.status == "fail"
    assert "secret" not in gone.detail and "127.0.0.1" in gone.detail
    assert storage.shown_url(url) == url.replace(":secret@", ":***@")
    in_query = "postgresql+psycopg://pinbench@db/pinbench?password=secret&sslmode=require"
    assert storage.shown_url(in_query) == in_query.replace("=secret", "=***")
    for plain in ("sqlite:////abs/home/pinbench.db", "sqlite:///rel.db", "postgresql://u@h/d"):
        assert storage.shown_url(plain) == plain  # nothing to hide: shown as configured
    assert "PINBENCH_DATABASE_URL" in gone.fix

    (tmp_path / "a-file").write_text("")
    filed = storage.database(Place(environ={"PINBENCH_HOME": str(tmp_path / "a-file" / "home")}))
    assert filed.status == "fail" and "which is not a folder" in filed.detail

    env = {**os.environ, "PINBENCH_HOME": str(home)}
    subprocess.run([*PINBENCH, "init"], env=env, check=True, capture_output=True)
    made = storage.database(Place(environ={"PINBENCH_HOME": str(home)}))
    assert made.status == "ok" and made.detail.endswith(f"at schema {storage._head()}")


# ------------------------------------------------------------------- engines
def test_the_docker_runner_without_an_engine_is_a_warning_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patched:  # no docker in the system's folders
        system_folder(tmp_path / "system", patched)
        none = engines.docker(Place(environ={"PATH": os.environ["PATH"]}))
    assert none.status == "warn"
    assert none.detail.startswith("the docker CLI (the docker runner) is not installed in the ")
    assert "apt-get install -y docker.io" in none.fix
    if not Path("/usr/bin/docker").exists():
        unavailable("the docker CLI is not installed")
    socket = f"unix://{tmp_path}/no.sock"
    silent = engines.docker(Place(environ={"PATH": os.environ["PATH"], "DOCKER_HOST": socket}))
    assert silent.status == "warn"
    assert silent.detail.startswith(f"no Docker Engine answers at {socket}: ")
    assert "start the Docker Engine" in silent.fix


# ------------------------------------------------------------------- timing
def _sys_with(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "sys"
    for file, value in files.items():
        path = root / "devices" / "system" / "cpu" / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{value}\n")
    return root


@pytest.mark.parametrize(
    ("files", "name", "status", "fix"),
    [
        (
            {"cpu0/cpufreq/scaling_governor": "powersave"},
            "cpu-frequency",
            "warn",
            "cpupower frequency-set -g performance",
        ),
        ({"cpu0/cpufreq/scaling_governor": "performance"}, "cpu-frequency", "ok", ""),
        ({}, "cpu-frequency", "ok", ""),  # a VM's kernel exposes none
        ({"intel_pstate/no_turbo": "0"}, "turbo", "warn", "intel_pstate/no_turbo"),
        ({"cpufreq/boost": "1"}, "turbo", "warn", "cpufreq/boost"),
        ({"intel_pstate/no_turbo": "1"}, "turbo", "ok", ""),
        ({"smt/active": "1"}, "smt", "warn", "smt/control"),
        ({"smt/active": "0"}, "smt", "ok", ""),
        ({"isolated": ""}, "isolated-cpus", "warn", "isolcpus="),
        ({"isolated": "1"}, "isolated-cpus", "ok", ""),
    ],
)
def test_what_makes_timings_noisy_is_a_warning_with_its_fix(
    tmp_path: Path, files: dict[str, str], name: str, status: str, fix: str
) -> None:
    place = Place(sys=_sys_with(tmp_path, files), proc=tmp_path / "proc")
    (finding,) = [f for f in timing.check(place) if f.check == name]
    assert finding.status == status
    assert fix in finding.fix if fix else finding.fix == ""


@dataclass(frozen=True, slots=True)
class _Busy(Place):
    """A /proc/stat of two samples: 60 % of the time in between not idle."""

    samples: tuple[str, ...] = ("cpu 100 0 100 800 0 0 0 0", "cpu 160 0 160 880 0 0 0 0")

    def read(self, path: Path) -> str | None:
        count = Path(self.proc / "count")
        n = int(count.read_text()) if count.exists() else 0
        count.write_text(str(n + 1))
        return self.samples[min(n, 1)]


def test_other_load_is_a_warning_measured_over_a_sample(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    finding = timing.load(_Busy(proc=tmp_path / "proc"))
    assert finding.status == "warn"
    assert finding.detail.startswith("60% of the CPU time")


# ------------------------------------------------------------------- the command
def test_doctor_exits_0_where_runs_can_be_made_and_1_naming_what_blocks_them(
    tmp_path: Path,
) -> None:
    if not Path(BWRAP).exists():
        unavailable("bubblewrap is not installed")
    env = {**os.environ, "PINBENCH_HOME": str(tmp_path / "home")}
    fine = subprocess.run([*PINBENCH, "doctor", "--json"], env=env, capture_output=True, text=True)
    assert fine.returncode == 0, fine.stderr
    shown = json.loads(fine.stdout)
    names = [f["check"] for f in shown]
    assert names[:5] == ["sandbox", "space:home", "space:cache", "space:scratch", "database"]
    assert {"docker", "gpus", "cpu-frequency", "turbo", "smt", "isolated-cpus", "load"} <= set(
        names
    )
    assert all(f["status"] in ("ok", "warn") for f in shown)

    hidden = without_bwrap([*PINBENCH, "doctor"])
    blocked = subprocess.run(hidden, env=env, capture_output=True, text=True)
    assert blocked.returncode == 1
    assert blocked.stdout.splitlines()[0].startswith("fail  sandbox  ")
    assert "fix: as root: apt-get install -y bubblewrap" in blocked.stdout
    assert "runs cannot be made here until this is fixed (sandbox: " in blocked.stderr
    assert "Traceback" not in blocked.stderr


def test_the_demo_stops_before_anything_and_points_to_doctor(tmp_path: Path) -> None:
    if not Path("/usr/bin/bwrap").exists():
        unavailable("bubblewrap is not installed at /usr/bin/bwrap")
    home = tmp_path / "home"
    env = {**os.environ, "PINBENCH_HOME": str(home)}
    done = subprocess.run(
        without_bwrap([*PINBENCH, "demo"]), env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "`pinbench doctor` tells everything this machine lacks" in done.stderr
    assert not (home / "pinbench.db").exists() and not (home / "demo").exists()


def test_a_blocking_finding_is_refused_with_each_fix() -> None:
    findings = [
        Finding("sandbox", "fail", "no bwrap", "install it"),
        Finding("load", "warn", "busy", "wait"),
        Finding("database", "fail", "gone", "start it"),
    ]
    with pytest.raises(RunsBlocked) as caught:
        refuse_blocked(findings)
    assert caught.value.checks == ["sandbox", "database"]
    assert "(sandbox: install it; database: start it)" in str(caught.value)
    refuse_blocked(findings[1:2])  # a warning blocks nothing


def test_only_runs_the_groups_asked_for() -> None:
    assert [f.check for f in examine(only=["engines"])] == ["docker", "gpus"]
