"""The README's commands on a machine that lacks what a run needs (issue 83, DESIGN.md
invariant 19): `make demo` and `make study` install the sandbox's system packages first as
root (`.ci/run` removes bubblewrap before its `make demo` to hold that path), and stop any
other user before anything runs, printing the one command to run.

A missing bubblewrap and a kernel that refuses unprivileged user namespaces are made real for
one process tree: a mount namespace in which ``/usr/bin/bwrap`` is a device node (no program)
and ``/proc/sys/user/max_user_namespaces`` reads 0; the commands run there as ``nobody`` in a
copy of the Makefile and scripts/.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.services import unavailable

ROOT = Path(__file__).resolve().parent.parent
BWRAP = "/usr/bin/bwrap"
USERNS = "/proc/sys/user/max_user_namespaces"
GXX = "/usr/bin/g++"


def _as_nobody(
    folder: Path, command: str, hide: list[str], zero: Path
) -> subprocess.CompletedProcess[str]:
    """``command`` run as ``nobody`` in ``folder``, in a mount namespace where each of ``hide``
    is covered: the program by ``/dev/null``, the kernel setting by ``zero``."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("runuser") is None:
        unavailable("hiding a program needs root, unshare and runuser")
    covers = {BWRAP: "/dev/null", GXX: "/dev/null", USERNS: str(zero)}
    mounts = "".join(f"mount --bind {covers[h]} {h} && " for h in hide)
    script = f"{mounts}cd {shlex.quote(str(folder))} && runuser -u nobody -- {command}"
    return subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MAKEFLAGS": ""},
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The Makefile and scripts/ in a folder ``nobody`` owns, with a kernel setting's 0."""
    folder = tmp_path / "clone"
    folder.mkdir()
    shutil.copy(ROOT / "Makefile", folder)
    shutil.copytree(ROOT / "scripts", folder / "scripts")
    (tmp_path / "zero").write_text("0\n")
    tmp_path.chmod(0o755)
    subprocess.run(["chown", "-R", "nobody", str(folder)], check=True)
    return folder


CASES = [
    # (what the machine lacks, what the one command does, what it says is wrong)
    ([BWRAP], ["apt-get install -y bubblewrap"], "missing Debian packages: bubblewrap"),
    (
        [USERNS],
        ["sysctl -w user.max_user_namespaces=15000"],
        "the kernel keeps unprivileged users from the user namespaces",
    ),
    (
        [BWRAP, USERNS],  # both in one command: one thing to run, then everything works
        ["apt-get install -y bubblewrap", "sysctl -w user.max_user_namespaces=15000"],
        "missing Debian packages: bubblewrap",
    ),
]


@pytest.mark.parametrize("target", ["demo", "study"])
@pytest.mark.parametrize(("hide", "does", "says"), CASES)
def test_make_stops_a_user_before_anything_with_the_one_command_to_run(
    checkout: Path, target: str, hide: list[str], does: list[str], says: str
) -> None:
    done = _as_nobody(checkout, f"make {target} PYTHON=python3", hide, checkout.parent / "zero")
    assert done.returncode != 0
    assert says in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.strip().startswith("sudo ")]
    assert all(d in line for d in does), line
    assert "nothing was run" in done.stderr
    assert sorted(p.name for p in checkout.iterdir()) == ["Makefile", "scripts"]  # no .venv


def test_a_machine_with_what_a_run_needs_goes_on(checkout: Path) -> None:
    """Nothing missing: the script says so and exits 0, as any user (so `make demo` goes on)."""
    if shutil.which("bwrap") is None:
        unavailable("bubblewrap is not installed")
    command = "bash scripts/install-system-deps.sh sandbox"
    done = _as_nobody(checkout, command, [], checkout.parent / "zero")
    assert (done.returncode, done.stdout.strip()) == (0, "system packages present"), done.stderr


def test_the_compiler_group_names_g_plus_plus_where_it_is_missing(checkout: Path) -> None:
    """`STUDY=engines make study` builds llama-cpp-python from its source archive: the group
    it installs first names the compiler."""
    if shutil.which("g++") is None:
        unavailable("g++ is not installed")
    command = "bash scripts/install-system-deps.sh compiler"
    done = _as_nobody(checkout, command, [GXX], checkout.parent / "zero")
    assert done.returncode != 0
    assert "missing Debian packages: g++" in done.stderr, done.stderr
    assert "bubblewrap" not in done.stderr  # the sandbox's group is there, and complete


def test_an_unknown_group_is_a_usage_error(checkout: Path) -> None:
    done = subprocess.run(
        ["bash", "scripts/install-system-deps.sh", "everything"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown group 'everything' (sandbox, compiler or all)" in done.stderr
