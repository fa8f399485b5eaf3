"""The programs pinbench starts to make a trust decision come from where the system keeps them,
never from PATH (issue 84, item 1; ``pinbench.programs``, decision 308).

One table, one mechanism: each program pinbench starts by name (``programs.PROGRAMS``), with a
fake of it earlier on PATH that leaves a mark when run, is asked for by the code that starts
it; the fake is never run, and the refusal names it. A program in the system's folder is taken
only where it and every folder above it belong to root and no one else may write them. And no
module of pinbench finds a program by PATH or starts one by a bare name.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pinbench import programs
from pinbench.programs import ProgramUnavailable, system_program, untrusted_because
from tests.system_programs import fake, system_folder

PINBENCH = Path(programs.__file__).parent
MARK = 'touch "$(dirname "$0")/ran"; exit 0'


def _bwrap() -> object:
    from pinbench.evaluator.runners import sandbox

    return sandbox.bwrap()


def _nvidia_smi() -> object:
    from pinbench.hardware import gpus

    return gpus()  # none found: the GPUs are none, and the fake is not asked


def _docker() -> object:
    from pinbench.doctor import engines
    from pinbench.doctor.findings import Place

    return engines.docker(Place(environ=dict(os.environ)))


def _pg(name: str) -> Callable[[], object]:
    def start() -> object:
        from pinbench.db.dumps import pg_tool

        return pg_tool(name)

    return start


def _git() -> object:
    from pinbench.artifacts.sources.dvc import _git
    from pinbench.artifacts.sources.uri import DvcUri

    return _git(DvcUri("/nonexistent/repo", "main", "data.csv"), "--version")


def _python() -> object:
    from pinbench.environments.venv import base_python

    return base_python("3.99")


def _debootstrap() -> object:
    from pinbench.images.base import _debootstrap

    _debootstrap(Path("/nonexistent/base.tar"), lambda _: None)
    return None


def _compiler(name: str) -> Callable[[], object]:
    def start() -> object:
        from pinbench.environments.source_builds import compiler

        return compiler(name)

    return start


def _tar() -> object:
    return system_program("tar")  # packs the base image's root, after debootstrap (root only)


# each program pinbench starts by name, and a call of the code that starts it
CALLERS: dict[str, tuple[str, Callable[[], object]]] = {
    "bwrap": ("bwrap", _bwrap),
    "nvidia-smi": ("nvidia-smi", _nvidia_smi),
    "docker": ("docker", _docker),
    "pg_dump": ("pg_dump", _pg("pg_dump")),
    "pg_restore": ("pg_restore", _pg("pg_restore")),
    "git": ("git", _git),
    "python3.X": ("python3.99", _python),
    "debootstrap": ("debootstrap", _debootstrap),
    "tar": ("tar", _tar),
    "gcc": ("gcc", _compiler("gcc")),
    "g++": ("g++", _compiler("g++")),
}


def test_every_program_pinbench_starts_by_name_is_in_the_table() -> None:
    assert set(CALLERS) == set(programs.PROGRAMS)


@pytest.mark.parametrize("entry", sorted(CALLERS))
def test_a_program_earlier_on_path_is_never_run(
    entry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, start = CALLERS[entry]
    system_folder(tmp_path / "system", monkeypatch)  # the system has none of it
    monkeypatch.setattr(programs, "POSTGRESQL_DIRS", ())
    path = tmp_path / "path"
    on_path = fake(path, name, MARK)
    monkeypatch.setenv("PATH", f"{path}:{os.environ['PATH']}")
    try:
        answer = start()
    except Exception as exc:  # each caller's own refusal, carrying the program's
        said = str(exc)
        assert "not installed in the system's folders" in said, said
        assert f"the one on PATH at {on_path} is not used" in said, said
    else:  # a caller for which a missing program is an answer (no GPUs; docker: a warning)
        assert answer == [] or "is not used" in str(answer), answer
    assert not (path / "ran").exists()


@pytest.mark.parametrize("entry", sorted(CALLERS))
def test_the_program_in_the_systems_folder_is_the_one_taken(
    entry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = CALLERS[entry][0]
    folder = system_folder(tmp_path / "system", monkeypatch)
    made = fake(folder, name, MARK)
    fake(tmp_path / "path", name, MARK)
    monkeypatch.setenv("PATH", f"{tmp_path / 'path'}:{os.environ['PATH']}")
    assert system_program(name) == made


# (how the program or a folder above it is changed, what the refusal says)
UNTRUSTED = [
    ("group-writable", "may be written by others than root (mode 775)"),
    ("world-writable", "may be written by others than root (mode 757)"),
    ("not root's", "belongs to uid 65534, not root"),
    ("folder writable", "may be written by others than root (mode 777)"),
    ("folder not root's", "belongs to uid 65534, not root"),
    ("link out", "may be written by others than root (mode 777)"),
    ("not a file", "is not a regular file"),
]


@pytest.mark.parametrize(("change", "said"), UNTRUSTED, ids=[u[0] for u in UNTRUSTED])
def test_a_program_another_than_root_may_have_written_is_refused(
    change: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = system_folder(tmp_path / "system", monkeypatch)
    program = fake(folder, "tool", MARK)
    assert untrusted_because(program) is None  # root's, 755, in root's folders
    if change == "group-writable":
        program.chmod(0o775)
    elif change == "world-writable":
        program.chmod(0o757)
    elif change == "not root's":
        os.chown(program, 65534, 65534)
    elif change == "folder writable":
        folder.chmod(0o777)  # without the sticky bit: anyone may replace the program
    elif change == "folder not root's":
        os.chown(folder, 65534, 65534)
    elif change == "link out":  # a link of root's to a program in a folder anyone may write
        elsewhere = tmp_path / "open"
        target = fake(elsewhere, "tool", MARK)
        elsewhere.chmod(0o777)
        program.unlink()
        program.symlink_to(target)
    elif change == "not a file":
        program.unlink()
        program.mkdir()
        program.chmod(0o755)
    if change != "not a file":
        assert untrusted_because(program) is not None
    with pytest.raises(ProgramUnavailable) as refused:
        system_program("tool")
    assert said in refused.value.reason or change == "not a file", refused.value.reason
    if change == "not a file":  # a folder of that name is no program: none installed
        assert "not installed in the system's folders" in refused.value.reason
        assert untrusted_because(program) == "is not a regular file"
    assert not (tmp_path / "system" / "ran").exists()


def test_a_sticky_folder_holds_roots_entries_as_roots() -> None:
    """``/tmp`` (mode 1777) is above every test's folder: an entry root owns in a sticky
    folder cannot be replaced by another user, so it counts as root's."""
    assert os.stat("/tmp").st_mode & 0o1777 == 0o1777
    assert untrusted_because(Path("/tmp")) == "is not a regular file"


def _calls_that_start_by_name(tree: ast.AST) -> list[int]:
    starters = {"run", "Popen", "check_output", "check_call", "call", "create_subprocess_exec"}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        if called in starters and isinstance(first, ast.List | ast.Tuple) and first.elts:
            head = first.elts[0]
            named = isinstance(head, ast.Constant) and isinstance(head.value, str)
            if named and not str(getattr(head, "value", "")).startswith("/"):
                found.append(node.lineno)
    return found


def test_no_module_finds_a_program_by_path_or_starts_one_by_a_bare_name() -> None:
    found: list[str] = []
    for module in sorted(PINBENCH.rglob("*.py")):
        text = module.read_text()
        tree = ast.parse(text)
        where = module.relative_to(PINBENCH.parent)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "which"
                and isinstance(node.value, ast.Name)
                and node.value.id == "shutil"
                and module != Path(programs.__file__)  # to name the one on PATH it refuses
            ):
                found.append(f"{where}:{node.lineno}: shutil.which")
        found += [
            f"{where}:{n}: a program by its bare name" for n in _calls_that_start_by_name(tree)
        ]
    assert found == []
